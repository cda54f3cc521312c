import Embeddings
import Foundation
import ModelTestSupport
import TestSupport
import XCTest

extension XCTestCase {
    /// Runs the built `embeddings` with `arguments` to completion (`ChildProcess.run`): every CLI
    /// test class runs the executable through this one helper. `input` goes to its standard input
    /// (nil: the null device); `environment` nil keeps this process's.
    func embeddings(_ arguments: [String], input: Data? = nil, environment: [String: String]? = nil) throws
        -> ProcessResult
    {
        try ChildProcess.run(CLITests.executable, arguments, environment: environment, input: input)
    }
}

/// The `embeddings` executable as users run it: exit codes, one-line errors, JSON output.
final class CLITests: XCTestCase {
    /// A finished run of a child process (TestSupport's `ProcessResult`).
    typealias Run = ProcessResult

    static var executable: URL {
        let products =
            Bundle.allBundles.first { $0.bundlePath.hasSuffix(".xctest") }?.bundleURL.deletingLastPathComponent()
            ?? Bundle.main.bundleURL
        return products.appendingPathComponent("embeddings")
    }

    override func setUpWithError() throws {
        _ = try TestModel.shared()  // installs the model once, so commands below find it
    }

    func assertError(_ r: Run, status: Int32, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(r.status, status, r.stderr, file: file, line: line)
        let lines = r.stderr.split(separator: "\n")
        XCTAssertEqual(lines.filter { $0.hasPrefix("error: ") }.count, 1, r.stderr, file: file, line: line)
        XCTAssertTrue(lines.last?.hasPrefix("error: ") ?? false, r.stderr, file: file, line: line)
    }

    /// Runs `script` with bash (arguments as $0, $1, …) and returns what it printed.
    func bash(_ script: String, _ arguments: [String]) throws -> Run {
        try ChildProcess.run(URL(fileURLWithPath: "/bin/bash"), ["-c", script] + arguments)
    }

    /// A reader that goes away early (`| head`) stops the command quietly: SIGPIPE's status 141
    /// or 0, nothing on stderr, no backtrace. Stderr going to the same closed pipe is no crash either.
    func testClosedPipeStopsQuietly() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("pipes-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        // 400 texts: far more output (token vectors) than a pipe buffers.
        let input =
            (0..<400).map {
                #"{"id": "t\#($0)", "text": "Text number \#($0) about closures, optionals and protocols."}"#
            }.joined(separator: "\n") + "\n"
        try Data(input.utf8).write(to: folder.appendingPathComponent("in.jsonl"))
        let errors = folder.appendingPathComponent("stderr.txt").path
        for (label, script) in [
            (
                "embed | head -1",
                #""$0" embed --token-vectors < "$1/in.jsonl" 2>"$2" | head -1 >/dev/null; echo "status=${PIPESTATUS[0]}""#
            ),
            (
                "embed | head -c 600",
                #""$0" embed --token-vectors < "$1/in.jsonl" 2>"$2" | head -c 600 >/dev/null; echo "status=${PIPESTATUS[0]}""#
            ),
            (
                "embed 2>&1 | head -c 10",
                #""$0" embed --token-vectors < "$1/in.jsonl" 2>&1 | head -c 10 >/dev/null; echo "status=${PIPESTATUS[0]}"; : > "$2""#
            ),
        ] {
            let r = try bash(script, [Self.executable.path, folder.path, errors])
            let status = r.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            XCTAssertTrue(status == "status=141" || status == "status=0", "\(label): \(status) \(r.stderr)")
            let stderr = (try? String(contentsOfFile: errors, encoding: .utf8)) ?? ""
            XCTAssertEqual(stderr, "", "\(label): nothing on stderr")
        }
        XCTAssertEqual(
            try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted(), ["in.jsonl", "stderr.txt"],
            "no temporary files")
    }

    func testUsageErrorsExit64() throws {
        assertError(try embeddings([]), status: 64)
        assertError(try embeddings(["frobnicate"]), status: 64)
        assertError(try embeddings(["embed", "--bogus"]), status: 64)
        assertError(try embeddings(["embed", "--pooling", "median"]), status: 64)
        assertError(try embeddings(["search", "--index"]), status: 64)
        assertError(try embeddings(["search", "--index", "x.index", "--k", "many", "q"]), status: 64)
        assertError(try embeddings(["export", "--index", "x.index", "--format", "csv"]), status: 64)
    }

    func testBadDataExits65AndKeepsEarlierOutput() throws {
        let r = try embeddings(["embed"], input: Data("{\"id\": \"ok\", \"text\": \"fine\"}\n{not json}\n".utf8))
        assertError(r, status: 65)
        XCTAssertTrue(r.stderr.contains("line 2"))
        XCTAssertEqual(r.stdout.split(separator: "\n").count, 1, "the good first line was still written")
        assertError(try embeddings(["embed"], input: Data("{\"id\": 3, \"text\": \"x\"}\n".utf8)), status: 65)
        assertError(try embeddings(["embed"], input: Data("[1, 2]\n".utf8)), status: 65)
        assertError(try embeddings(["embed"], input: Data("{\"id\": \"a\"}\n".utf8)), status: 65)
    }

    func testMissingInputExits66() throws {
        assertError(try embeddings(["embed", "--model", "/no/such/model"]), status: 66)
        assertError(try embeddings(["search", "--index", "/no/such.index", "question"]), status: 66)
        assertError(try embeddings(["index", "/no/such/folder", "--out", "/tmp/x.index"]), status: 66)
    }

    func testEmbedMatchesTheLibraryExactly() throws {
        let texts = ["A river bank.", "", "Ünïcödé 東京 🚀 text", "[SEP] inside"]
        let input =
            texts.enumerated().map { i, t -> String in
                let data = try! JSONSerialization.data(withJSONObject: ["id": "t\(i)", "text": t])
                return String(decoding: data, as: UTF8.self)
            }.joined(separator: "\n") + "\n"
        let r = try embeddings(["embed", "--tokens"], input: Data(input.utf8))
        XCTAssertEqual(r.status, 0, r.stderr)
        let lines = r.stdout.split(separator: "\n")
        XCTAssertEqual(lines.count, texts.count)
        let model = try TestModel.shared()
        // The command encodes these four as one batch; so does this call.
        let expected = try model.sentenceVectors(for: texts, batchSize: 16)
        for (i, line) in lines.enumerated() {
            let object = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            XCTAssertEqual(object["id"] as? String, "t\(i)")
            let vector = try XCTUnwrap(object["vector"] as? [Double]).map { Float($0) }
            XCTAssertEqual(vector, expected[i], "floats must round-trip exactly")
            let tokens = try XCTUnwrap(object["tokens"] as? [[String: Any]])
            let utf8 = Array(texts[i].utf8)
            XCTAssertEqual(tokens.first?["text"] as? String, "[CLS]")
            for token in tokens {
                let span = try XCTUnwrap(token["utf8"] as? [Int])
                XCTAssertTrue(0 <= span[0] && span[0] <= span[1] && span[1] <= utf8.count)
            }
        }
    }

    func testTokenVectorsOptionWritesTheMatrix() throws {
        let r = try embeddings(
            ["embed", "--token-vectors", "--no-normalize", "--pooling", "max"],
            input: Data("{\"id\": \"a\", \"text\": \"two words\"}\n".utf8))
        XCTAssertEqual(r.status, 0, r.stderr)
        let object = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any])
        let matrix = try XCTUnwrap(object["token_vectors"] as? [[Double]])
        XCTAssertEqual(matrix.count, 4)
        XCTAssertEqual(matrix[0].count, 384)
        let vector = try XCTUnwrap(object["vector"] as? [Double])
        for j in 0..<384 { XCTAssertEqual(vector[j], matrix.map { $0[j] }.max()!, accuracy: 0) }
    }

    /// The same folder indexed by two processes gives byte-identical files (the JSON inside is
    /// written with sorted keys; BM25's postings are a dictionary, whose order follows each
    /// process's hash seed).
    func testIndexFilesAreByteIdenticalAcrossProcesses() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("cli-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let corpus = TestFixtures.folder.appendingPathComponent("corpus/swift-lessons").path
        var files = [Data]()
        for name in ["first.index", "second.index"] {
            let out = folder.appendingPathComponent(name)
            let r = try embeddings(["index", corpus, "--out", out.path, "--lexical-only"])
            XCTAssertEqual(r.status, 0, r.stderr)
            files.append(try Data(contentsOf: out))
        }
        XCTAssertGreaterThan(files[0].count, 10_000)
        XCTAssertEqual(files[0], files[1], "the two index files differ")
    }

    func testIndexSearchEvalExportRoundTrip() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("cli-\(UUID())")
        let docs = folder.appendingPathComponent("docs/guide")
        try FileManager.default.createDirectory(at: docs, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try Data(
            """
            # Closures

            Intro about closures in general.

            ## Capturing values

            A closure captures variables from the scope around it and keeps them alive.

            ## Trailing syntax

            When the last argument is a closure you may write it after the parentheses.
            """.utf8
        ).write(to: docs.appendingPathComponent("closures.md"))
        try Data([0xFF, 0xFE, 0x00]).write(to: docs.appendingPathComponent("broken.md"))
        let index = folder.appendingPathComponent("docs.index").path
        let built = try embeddings(["index", folder.appendingPathComponent("docs").path, "--out", index])
        XCTAssertEqual(built.status, 0, built.stderr)
        XCTAssertTrue(built.stderr.contains("broken.md"), "the bad file is reported")
        let again = try embeddings(["index", folder.appendingPathComponent("docs").path, "--out", index])
        XCTAssertTrue(again.stderr.contains("0 embedded"), again.stderr)

        let search = try embeddings([
            "search", "--index", index, "--json", "--k", "2", "how does a closure capture variables",
        ])
        XCTAssertEqual(search.status, 0, search.stderr)
        let result = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(search.stdout.utf8)) as? [String: Any])
        let hits = try XCTUnwrap(result["hits"] as? [[String: Any]])
        XCTAssertEqual(hits.first?["id"] as? String, "guide/closures#capturing-values")
        XCTAssertEqual(hits.first?["source"] as? String, "guide/closures.md")
        XCTAssertEqual(hits.first?["headings"] as? [String], ["Closures", "Capturing values"])
        XCTAssertEqual(hits.first?["title"] as? String, "Closures")
        XCTAssertTrue((result["context"] as? String)?.contains("captures variables") ?? false)

        let cases = folder.appendingPathComponent("cases.json")
        try Data(
            #"{"cases": [{"question": "trailing closure after parentheses", "expected": ["guide/closures#trailing"]}, {"question": "knitting wool", "expected": []}]}"#
                .utf8
        ).write(to: cases)
        let eval = try embeddings(["eval", "--index", index, cases.path, "--k", "2"])
        XCTAssertEqual(eval.status, 0, eval.stderr)
        XCTAssertTrue(eval.stdout.contains("recall@2: 1.000"), eval.stdout)

        // Quantized codes: stored by --codes, used by --precision, same hits and scores here.
        let exactHits = hits.map { $0["id"] as? String }
        let coded = try embeddings([
            "index", folder.appendingPathComponent("docs").path, "--out", index, "--codes", "int8,binary",
        ])
        XCTAssertEqual(coded.status, 0, coded.stderr)
        XCTAssertTrue(coded.stderr.contains("0 embedded"), "codes come from the stored vectors: \(coded.stderr)")
        for precision in ["int8", "binary"] {
            let quantized = try embeddings([
                "search", "--index", index, "--json", "--k", "2", "--precision", precision, "--rescore", "2",
                "how does a closure capture variables",
            ])
            XCTAssertEqual(quantized.status, 0, quantized.stderr)
            let object = try XCTUnwrap(
                JSONSerialization.jsonObject(with: Data(quantized.stdout.utf8)) as? [String: Any])
            let quantizedHits = try XCTUnwrap(object["hits"] as? [[String: Any]])
            XCTAssertEqual(quantizedHits.map { $0["id"] as? String }, exactHits, precision)
            XCTAssertEqual(quantizedHits.map { $0["score"] as? Double }, hits.map { $0["score"] as? Double }, precision)
        }
        let quantizedEval = try embeddings(["eval", "--index", index, cases.path, "--k", "2", "--precision", "binary"])
        XCTAssertTrue(quantizedEval.stdout.contains("recall@2: 1.000"), quantizedEval.stdout)
        assertError(try embeddings(["search", "--index", index, "--precision", "int4", "q"]), status: 64)
        assertError(try embeddings(["search", "--index", index, "--rescore", "3", "q"]), status: 64)
        assertError(
            try embeddings(["search", "--index", index, "--precision", "int8", "--rescore", "0", "q"]), status: 64)
        assertError(
            try embeddings(["index", folder.appendingPathComponent("docs").path, "--out", index, "--codes", "int16"]),
            status: 64)

        for format in ["npy", "fvecs", "jsonl"] {
            let out = folder.appendingPathComponent("vectors.\(format)").path
            let export = try embeddings(["export", "--index", index, "--format", format, "--out", out])
            XCTAssertEqual(export.status, 0, export.stderr)
            let bytes = try Data(contentsOf: URL(fileURLWithPath: out))
            switch format {
            case "npy": XCTAssertEqual(Array(bytes.prefix(6)), [0x93] + Array("NUMPY".utf8))
            case "fvecs": XCTAssertEqual(bytes.count, 3 * (4 + 384 * 4))
            default: XCTAssertEqual(String(decoding: bytes, as: UTF8.self).split(separator: "\n").count, 3)
            }
        }
    }
}
