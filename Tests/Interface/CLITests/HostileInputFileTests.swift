import Foundation
import ModelTestSupport
import TestSupport
import VectorIndex
import XCTest

/// Inputs a new user can hand the CLI by mistake: a FIFO or a device where a file belongs, and a
/// JSON Lines record far longer than the model reads.
final class HostileInputFileTests: XCTestCase {
    override func setUpWithError() throws {
        _ = try TestModel.shared()  // installs the model once, so commands below find it
    }

    /// A FIFO nobody writes to: opening it for reading would block forever. Every file the CLI
    /// reads refuses it at once (65), and the library's reader refuses it too.
    func testFIFOsAndDevicesAreRefusedWithoutBlocking() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("fifo-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let fifo = folder.appendingPathComponent("corpus.index")
        XCTAssertEqual(mkfifo(fifo.path, 0o600), 0)
        for arguments in [
            ["search", "--index", fifo.path, "closures"],
            ["search", "--index", fifo.path, "--mode", "lexical", "closures"],
            ["search", "--index", "/dev/zero", "closures"],
            ["eval", "--index", fifo.path, TestFixtures.folder.appendingPathComponent("eval/swift-lessons.json").path],
            ["export", "--index", fifo.path, "--format", "jsonl"],
        ] {
            let r = try embeddings(arguments)
            XCTAssertEqual(r.status, 65, "\(arguments): \(r.stderr)")
            XCTAssertTrue(r.stderr.contains("not a regular file"), r.stderr)
        }
        // The cases file of eval: a real index, then a FIFO for the questions.
        let docs = folder.appendingPathComponent("docs")
        try FileManager.default.createDirectory(at: docs, withIntermediateDirectories: true)
        try Data("# Closures\n\nClosures capture values.\n".utf8).write(to: docs.appendingPathComponent("a.md"))
        let index = folder.appendingPathComponent("real.index")
        XCTAssertEqual(
            try embeddings(["index", docs.path, "--out", index.path, "--lexical-only", "--quiet"]).status, 0)
        let cases = folder.appendingPathComponent("cases.json")
        XCTAssertEqual(mkfifo(cases.path, 0o600), 0)
        let r = try embeddings(["eval", "--index", index.path, "--mode", "lexical", cases.path])
        XCTAssertEqual(r.status, 65, r.stderr)
        XCTAssertTrue(r.stderr.contains("cases file") && r.stderr.contains("not a regular file"), r.stderr)
        XCTAssertThrowsError(try IndexFile.read(from: fifo)) { error in
            guard case VectorIndexError.io(_, _, let message) = error else { return XCTFail("\(error)") }
            XCTAssertEqual(message, "not a regular file")
        }
    }

    /// One 50 MB record: read in time linear in its length, truncated at the model's limit,
    /// embedded like any other (the reader used to search the whole buffer after every block).
    func testAFiftyMegabyteRecordIsReadAndEmbedded() throws {
        var record = Data("{\"id\":\"long\",\"text\":\"".utf8)
        let words = Data("the reader searches each byte once ".utf8)
        while record.count < 50_000_000 { record.append(words) }
        record.append(Data("\"}\n".utf8))
        let r = try embeddings(["embed", "--quiet"], input: record)
        XCTAssertEqual(r.status, 0, r.stderr)
        let lines = r.stdout.split(separator: "\n")
        XCTAssertEqual(lines.count, 1)
        let json = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(lines[0].utf8)) as? [String: Any])
        XCTAssertEqual(json["id"] as? String, "long")
        XCTAssertEqual((json["vector"] as? [Double])?.count, 384)
    }
}
