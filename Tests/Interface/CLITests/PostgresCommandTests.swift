import Foundation
import ModelTestSupport
import TestSupport
import XCTest

/// `index`, `search` and `eval` with `--store` against a real PostgreSQL + pgvector server
/// (see `TestServer`): results, documented errors, and a killed index run.
final class PostgresCommandTests: XCTestCase {
    var folder: URL!
    /// A table-prefix suffix of this run, so that every test starts from tables of its own.
    let run = "_" + UUID().uuidString.prefix(8).lowercased()

    override func setUpWithError() throws {
        _ = try TestModel.shared()
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("pg-cli-\(UUID())")
        try FileManager.default.createDirectory(
            at: folder.appendingPathComponent("small"), withIntermediateDirectories: true)
        try Data("# Alpha\n\nClosures capture the values they use.".utf8).write(
            to: folder.appendingPathComponent("small/a.md"))
        try Data("# Beta\n\nStructs are value types; classes are reference types.".utf8).write(
            to: folder.appendingPathComponent("small/b.md"))
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(at: folder)
    }

    func testIndexSearchAndEvalThroughTheStore() throws {
        let url = try TestServer.url()
        var r = try embeddings([
            "index", folder.appendingPathComponent("small").path, "--store", url, "--table-prefix", "cli_small" + run,
            "--hnsw",
        ])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertTrue(r.stderr.contains("2 chunks: 2 embedded"), r.stderr)
        r = try embeddings([
            "index", folder.appendingPathComponent("small").path, "--store", url, "--table-prefix", "cli_small" + run,
        ])
        XCTAssertTrue(r.stderr.contains("0 embedded, 2 reused"), r.stderr)
        for precision in ["exact", "hnsw"] {
            r = try embeddings([
                "search", "--store", url, "--table-prefix", "cli_small" + run, "--precision", precision, "--json",
                "What do closures capture?",
            ])
            XCTAssertEqual(r.status, 0, r.stderr)
            let json = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any])
            let hits = try XCTUnwrap(json["hits"] as? [[String: Any]])
            XCTAssertEqual(hits.first?["id"] as? String, "a#alpha", precision)
            XCTAssertEqual(hits.first?["source"] as? String, "a.md")
        }
        let cases = folder.appendingPathComponent("cases.json")
        try Data(
            #"{"cases": [{"question": "What do closures capture?", "expected": ["a#alpha"]}, {"question": "Are structs values?", "expected": ["b#beta"]}]}"#
                .utf8
        ).write(to: cases)
        r = try embeddings(["eval", "--store", url, "--table-prefix", "cli_small" + run, cases.path, "--k", "1"])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertTrue(r.stdout.contains("recall@1: 1.000"), r.stdout)
    }

    /// A store built with the multilingual model is searched with it without `--model`, and
    /// refuses another model's questions.
    func testAStoreNamesItsModel() throws {
        let url = try TestServer.url()
        _ = try TestModel.multilingual()
        let prefix = "cli_e5" + run
        var r = try embeddings([
            "index", folder.appendingPathComponent("small").path, "--store", url, "--table-prefix", prefix,
            "--model", "intfloat/multilingual-e5-small", "--quiet",
        ])
        XCTAssertEqual(r.status, 0, r.stderr)
        r = try embeddings([
            "search", "--store", url, "--table-prefix", prefix, "--mode", "semantic", "--json",
            "O que as closures capturam?",
        ])
        XCTAssertEqual(r.status, 0, r.stderr)
        let json = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any])
        XCTAssertEqual((json["hits"] as? [[String: Any]])?.first?["id"] as? String, "a#alpha")
        r = try embeddings([
            "search", "--store", url, "--table-prefix", prefix, "--mode", "semantic", "--model", "all-MiniLM-L6-v2",
            "closures",
        ])
        XCTAssertEqual(r.status, 65, r.stderr)
    }

    /// `--late-chunking` works with `--store` as with `--out`: the run says so, and switching it
    /// re-embeds every chunk (a chunk's vector, and so its content hash, depends on its page).
    func testLateChunkingWithTheStore() throws {
        let url = try TestServer.url()
        let small = folder.appendingPathComponent("small").path
        let prefix = "cli_late" + run
        var r = try embeddings(["index", small, "--store", url, "--table-prefix", prefix, "--late-chunking"])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertTrue(r.stderr.contains("2 chunks: 2 embedded"), r.stderr)
        r = try embeddings(["index", small, "--store", url, "--table-prefix", prefix, "--late-chunking"])
        XCTAssertTrue(r.stderr.contains("0 embedded, 2 reused"), r.stderr)
        r = try embeddings(["index", small, "--store", url, "--table-prefix", prefix])
        XCTAssertTrue(r.stderr.contains("2 embedded, 0 reused"), r.stderr)
    }

    /// `--store postgresql://` alone connects from the standard libpq environment.
    func testTheConnectionComesFromTheLibpqEnvironment() throws {
        let url = try XCTUnwrap(URLComponents(string: try TestServer.url()))
        let query = Dictionary(
            (url.queryItems ?? []).map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { a, _ in a })
        var environment = ProcessInfo.processInfo.environment
        environment["PGHOST"] = query["host"]
        environment["PGUSER"] = query["user"]
        environment["PGDATABASE"] = String(url.path.dropFirst())
        let small = folder.appendingPathComponent("small").path
        var r = try embeddings(
            ["index", small, "--store", "postgresql://", "--table-prefix", "cli_environment" + run, "--lexical-only"],
            environment: environment)
        XCTAssertEqual(r.status, 0, r.stderr)
        r = try embeddings(
            [
                "search", "--store", "postgresql://", "--table-prefix", "cli_environment" + run, "--mode", "lexical",
                "closures",
            ], environment: environment)
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertTrue(r.stdout.contains("a#alpha"), r.stdout)
    }

    func testErrorsAreOneLineWithTheDocumentedStatus() throws {
        func check(
            _ r: CLITests.Run, _ status: Int32, _ mentions: String, file: StaticString = #filePath, line: UInt = #line
        ) {
            XCTAssertEqual(r.status, status, r.stderr, file: file, line: line)
            let errors = r.stderr.split(separator: "\n").filter { $0.hasPrefix("error: ") }
            XCTAssertEqual(errors.count, 1, r.stderr, file: file, line: line)
            XCTAssertTrue(errors.first?.contains(mentions) ?? false, r.stderr, file: file, line: line)
        }
        let small = folder.appendingPathComponent("small").path
        check(
            try embeddings(["index", small, "--store", "postgresql:///x?host=/nonexistent-socket-dir"]), 69,
            "cannot connect")
        check(
            try embeddings(["search", "--store", "postgresql:///x?host=/nonexistent-socket-dir", "q"]), 69,
            "cannot connect")
        let url = try TestServer.url()
        check(try embeddings(["index", small, "--store", url, "--out", "x.index"]), 64, "exclude")
        check(try embeddings(["search", "--store", url, "--index", "x.index", "q"]), 64, "exclude")
        check(try embeddings(["search", "--store", url, "--precision", "int8", "q"]), 64, "exact or hnsw")
        check(
            try embeddings(["index", small, "--store", url, "--table-prefix", "Robert'); DROP TABLE students;--"]), 64,
            "plain SQL identifier")
        // A lexical-only store has no vectors for semantic search: bad data, 65.
        XCTAssertEqual(
            try embeddings(["index", small, "--store", url, "--table-prefix", "cli_lexical" + run, "--lexical-only"])
                .status, 0)
        check(
            try embeddings(["search", "--store", url, "--table-prefix", "cli_lexical" + run, "--mode", "semantic", "q"]
            ), 65, "no vectors")
        XCTAssertEqual(
            try embeddings([
                "search", "--store", url, "--table-prefix", "cli_lexical" + run, "--mode", "lexical", "closures",
            ]).status, 0)
    }

    /// A run killed while embedding leaves the previous state whole, and the next run is not
    /// blocked by it (the server drops the dead connection's transaction and lock).
    func testKilledIndexRunLeavesThePreviousState() throws {
        let url = try TestServer.url()
        let small = folder.appendingPathComponent("small").path
        XCTAssertEqual(
            try embeddings(["index", small, "--store", url, "--table-prefix", "cli_killed" + run]).status, 0)
        let (process, stderr) = try ChildProcess.start(
            CLITests.executable,
            [
                "index", TestFixtures.folder.appendingPathComponent("corpus/swift-lessons").path, "--store", url,
                "--table-prefix", "cli_killed" + run,
            ])
        // The first progress line comes from inside the transaction, after a batch of chunks
        // was embedded and inserted: the kill lands in the middle of the run.
        let line = firstLine(startingWith: "embedding: ", from: stderr)
        XCTAssertNotNil(line, "the run reports progress before it ends")
        XCTAssertTrue(process.isRunning, "the big run should still be embedding")
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        XCTAssertEqual(process.terminationReason, .uncaughtSignal, "killed, not finished")
        let r = try embeddings([
            "search", "--store", url, "--table-prefix", "cli_killed" + run, "--mode", "lexical", "--k", "50", "--json",
            "closures structs values",
        ])
        XCTAssertEqual(r.status, 0, r.stderr)
        let json = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any])
        let sources = Set((json["hits"] as? [[String: Any]] ?? []).compactMap { $0["source"] as? String })
        XCTAssertEqual(sources, ["a.md", "b.md"], "only the previous run's chunks")
        let again = try embeddings(["index", small, "--store", url, "--table-prefix", "cli_killed" + run])
        XCTAssertEqual(again.status, 0, again.stderr)
        XCTAssertTrue(again.stderr.contains("0 embedded, 2 reused, 0 removed"), again.stderr)
    }
}
