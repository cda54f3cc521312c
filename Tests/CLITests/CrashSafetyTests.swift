import Foundation
import Retrieval
import TestSupport
import VectorIndex
import XCTest

/// Kills a saving `embeddings index` process with SIGKILL at random moments: the index file on
/// disk must always be the complete old index or the complete new one.
final class CrashSafetyTests: XCTestCase {
    func testIndexFileSurvivesSIGKILLDuringSaves() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("crash-\(UUID())")
        let small = folder.appendingPathComponent("small"), large = folder.appendingPathComponent("large")
        try FileManager.default.createDirectory(at: small, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: large, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try Data("# Small\n\nOne page.\n".utf8).write(to: small.appendingPathComponent("a.md"))
        // A large corpus makes the save take long enough to be hit mid-write.
        let lessons = TestModel.fixtures.appendingPathComponent("corpus/swift-lessons")
        for name in try FileManager.default.contentsOfDirectory(atPath: lessons.path) {
            try FileManager.default.copyItem(at: lessons.appendingPathComponent(name), to: large.appendingPathComponent(name))
        }
        let index = folder.appendingPathComponent("corpus.index")
        func build(_ source: URL) throws -> Process {
            let process = Process()
            process.executableURL = CLITests.executable
            process.arguments = ["index", source.path, "--out", index.path, "--lexical-only"]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            return process
        }
        func chunkCount() throws -> Int {
            let store = EmbeddingStore(embedding: nil)
            let semaphore = DispatchSemaphore(value: 0)
            let box = CountBox()
            Task {
                do { try await store.load(from: index); box.result = .success(await store.count) } catch { box.result = .failure(error) }
                semaphore.signal()
            }
            semaphore.wait()
            return try box.result!.get()
        }
        let first = try build(small)
        first.waitUntilExit()
        XCTAssertEqual(first.terminationStatus, 0)
        let smallCount = try chunkCount()
        var rng = SeededGenerator(seed: 2024)
        var killed = 0, completed = 0
        var largeCount: Int?
        for round in 0..<40 {
            let process = try build(round % 2 == 0 ? large : small)
            usleep(UInt32.random(in: 0...400_000, using: &rng))
            if process.isRunning {
                kill(process.processIdentifier, SIGKILL)
                killed += 1
            } else {
                completed += 1
            }
            process.waitUntilExit()
            let count = try chunkCount()  // throws if the file were torn
            if count != smallCount {
                if largeCount == nil { largeCount = count }
                XCTAssertEqual(count, largeCount, "round \(round): neither the old nor the new index")
            }
        }
        print("crash safety: \(killed) saves killed, \(completed) completed; every file read back whole")
        XCTAssertGreaterThan(killed, 5)
    }
}

private final class CountBox: @unchecked Sendable {
    var result: Result<Int, Error>?
}
