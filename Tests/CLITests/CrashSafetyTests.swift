import Foundation
import Synchronization
import Retrieval
import ModelTestSupport
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
        let lessons = TestFixtures.folder.appendingPathComponent("corpus/swift-lessons")
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
            let box = Mutex<Result<Int, any Error>>(.failure(CocoaError(.fileReadUnknown)))
            Task {
                let result: Result<Int, any Error>
                do { try await store.load(from: index); result = .success(await store.count) } catch { result = .failure(error) }
                box.withLock { $0 = result }
                semaphore.signal()
            }
            semaphore.wait()
            return try box.withLock { $0 }.get()
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
        // Killed saves leave their temporary files; the next save removes those over 2 s old.
        sleep(3)
        let last = try build(small)
        last.waitUntilExit()
        XCTAssertEqual(last.terminationStatus, 0)
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.contains(".tmp-") }
        XCTAssertEqual(leftovers, [], "temporary files of killed saves are cleaned up")
    }

    /// A save that fails (no space, file-size limit, no permission) is one `error:` line and exit
    /// code 1, and the previous index stays byte for byte what it was.
    func testFailedSavesKeepThePreviousIndex() throws {
        var skipped = [String]()
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("failing-saves-\(UUID())")
        let small = folder.appendingPathComponent("small"), large = folder.appendingPathComponent("large")
        let target = folder.appendingPathComponent("target")
        for dir in [small, large, target] { try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true) }
        defer {
            chmod(target.path, 0o755)
            try? FileManager.default.removeItem(at: folder)
        }
        try Data("# Small\n\nOne page.\n".utf8).write(to: small.appendingPathComponent("a.md"))
        let lessons = TestFixtures.folder.appendingPathComponent("corpus/swift-lessons")
        for name in try FileManager.default.contentsOfDirectory(atPath: lessons.path) {
            try FileManager.default.copyItem(at: lessons.appendingPathComponent(name), to: large.appendingPathComponent(name))
        }
        let old = folder.appendingPathComponent("old.index")
        var r = try shell("exec \"$0\" index \"$1\" --out \"$2\" --lexical-only", [CLITests.executable.path, small.path, old.path])
        XCTAssertEqual(r.status, 0, r.stderr)
        let oldBytes = try Data(contentsOf: old)

        func checkFailure(_ r: CLITests.Run, mentions: String, _ scenario: String) {
            XCTAssertTrue(r.stdout.contains("status=1"), "\(scenario): \(r.stdout) \(r.stderr)")
            let errors = r.stderr.split(separator: "\n").filter { $0.hasPrefix("error: ") }
            XCTAssertEqual(errors.count, 1, "\(scenario): \(r.stderr)")
            XCTAssertTrue(errors.first?.contains(mentions) ?? false, "\(scenario): \(r.stderr)")
            XCTAssertTrue(r.stdout.contains("intact"), "\(scenario): previous index changed: \(r.stdout)")
            XCTAssertFalse(r.stdout.contains(".tmp-"), "\(scenario): temporary file left: \(r.stdout)")
        }

        // 1. File-size limit (ulimit -f, 512-byte blocks in sh): writes fail with EFBIG. Skipped
        // under ThreadSanitizer, whose runtime dies of SIGBUS under such a limit before the
        // command does anything (scripts/sanitizers.sh sets CE_SANITIZER).
        if ProcessInfo.processInfo.environment["CE_SANITIZER"] == "thread" {
            skipped.append("file-size limit (the ThreadSanitizer runtime dies of SIGBUS under ulimit -f)")
        } else {
            let limited = target.appendingPathComponent("limited.index")
            try oldBytes.write(to: limited)
            r = try shell("""
                ulimit -f 200
                "$0" index "$1" --out "$2" --lexical-only; echo "status=$?"
                cmp -s "$2" "$3" && echo intact; ls -a "$(dirname "$2")"
                """, [CLITests.executable.path, large.path, limited.path, old.path])
            checkFailure(r, mentions: "File too large", "file-size limit")
        }

        // 2. No space: a 256 KiB tmpfs in a private mount namespace holds the old index; the new one does not fit.
        r = try shell("""
            mount -t tmpfs -o size=256k tmpfs "$4" || { echo nomount; exit 0; }
            cp "$3" "$4/corpus.index"
            "$0" index "$1" --out "$4/corpus.index" --lexical-only; echo "status=$?"
            cmp -s "$4/corpus.index" "$3" && echo intact; ls -a "$4"
            """, [CLITests.executable.path, large.path, "", old.path, target.path], namespace: true)
        if r.stdout.contains("nomount") || r.status != 0 {
            skipped.append("no space (cannot mount a tmpfs in a user namespace here: \(r.stderr.trimmingCharacters(in: .whitespacesAndNewlines)))")
        } else {
            checkFailure(r, mentions: "No space left on device", "no space")
        }

        // 3. No permission: the folder is not writable by the user saving (root ignores modes,
        // so as root the save runs as nobody through setpriv).
        let denied = target.appendingPathComponent("denied.index")
        try oldBytes.write(to: denied)
        chmod(target.path, 0o555)
        let asNobody = getuid() == 0 ? "setpriv --reuid=65534 --regid=65534 --clear-groups " : ""
        r = try shell("""
            \(asNobody)"$0" index "$1" --out "$2" --lexical-only; echo "status=$?"
            cmp -s "$2" "$3" && echo intact; ls -a "$(dirname "$2")"
            """, [CLITests.executable.path, small.path, denied.path, old.path])
        checkFailure(r, mentions: "Permission denied", "no permission")
        chmod(target.path, 0o755)
        // Reported as a skip (after the other scenarios ran), not passed in silence.
        if !skipped.isEmpty { throw XCTSkip("scenarios not run on this machine: " + skipped.joined(separator: "; ")) }
    }

    /// Runs `script` with `sh -c` (arguments as $0, $1, …), optionally inside new user and mount namespaces.
    private func shell(_ script: String, _ arguments: [String], namespace: Bool = false) throws -> CLITests.Run {
        try CLITests.launch(URL(fileURLWithPath: namespace ? "/usr/bin/unshare" : "/bin/sh"),
                            (namespace ? ["-Urm", "/bin/sh"] : []) + ["-c", script] + arguments)
    }
}
