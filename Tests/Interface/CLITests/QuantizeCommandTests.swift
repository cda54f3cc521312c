import Foundation
import ModelTestSupport
import TestSupport
import XCTest

/// `--quantize int8` on embed, index, search, eval and serve: the int8 encoder's vectors, the
/// index that records them, and the errors for mixing them with float32 ones.
final class QuantizeCommandTests: XCTestCase {
    override func setUpWithError() throws {
        _ = try TestModel.shared()  // installs the model once, so commands below find it
    }

    static let texts = ["A river bank.", "Closures capture values from the scope around them.", "Café naïve — 東京 🚀 ok"]

    func vectors(_ arguments: [String]) throws -> [[Float]] {
        try ServerTests.cli(["embed"] + arguments, Self.texts).map { ServerTests.floats($0["vector"]) }
    }

    func testEmbedWithInt8IsCloseToFloat32() throws {
        let float = try vectors([])
        let int8 = try vectors(["--quantize", "int8"])
        XCTAssertEqual(try vectors(["--quantize", "float32"]), float, "float32 is the default")
        XCTAssertEqual(int8.count, Self.texts.count)
        for (a, b) in zip(float, int8) {
            XCTAssertNotEqual(a, b)
            XCTAssertGreaterThan(cosine(a, b), 0.99)
        }
        let bad = try embeddings(["embed", "--quantize", "int4"], input: Data())
        XCTAssertEqual(bad.status, 64, bad.stderr)
        XCTAssertTrue(bad.stderr.contains("float32") && bad.stderr.contains("int8"), bad.stderr)
    }

    func testAnInt8IndexIsSearchedWithTheInt8Encoder() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("quantize-\(UUID())")
        let docs = folder.appendingPathComponent("docs")
        try FileManager.default.createDirectory(at: docs, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try Data(
            """
            # Closures

            ## Capturing values

            A closure captures variables from the scope around it and keeps them alive.

            ## Trailing syntax

            When the last argument is a closure you may write it after the parentheses.
            """.utf8
        ).write(to: docs.appendingPathComponent("closures.md"))
        let index = folder.appendingPathComponent("int8.index").path
        let built = try embeddings(["index", docs.path, "--out", index, "--quantize", "int8"])
        XCTAssertEqual(built.status, 0, built.stderr)

        // search and eval take the encoder from the index: no --quantize needed.
        let search = try embeddings([
            "search", "--index", index, "--json", "--k", "1", "--mode", "semantic",
            "how does a closure capture variables",
        ])
        XCTAssertEqual(search.status, 0, search.stderr)
        let hits = try XCTUnwrap(
            (try JSONSerialization.jsonObject(with: Data(search.stdout.utf8)) as? [String: Any])?["hits"]
                as? [[String: Any]])
        XCTAssertEqual(hits.first?["id"] as? String, "closures#capturing-values")
        let cases = folder.appendingPathComponent("cases.json")
        try Data(
            #"{"cases": [{"question": "trailing closure after parentheses", "expected": ["closures#trailing-syntax"]}]}"#
                .utf8
        ).write(to: cases)
        let eval = try embeddings(["eval", "--index", index, cases.path, "--k", "2"])
        XCTAssertEqual(eval.status, 0, eval.stderr)
        XCTAssertTrue(eval.stdout.contains("recall@2: 1.000"), eval.stdout)

        // Asking for the other encoder is refused: its question vectors would not compare.
        let mixed = try embeddings([
            "search", "--index", index, "--quantize", "float32", "--mode", "semantic", "closures",
        ])
        XCTAssertEqual(mixed.status, 65, mixed.stderr)
        XCTAssertTrue(mixed.stderr.contains("int8 encoder"), mixed.stderr)
        // Lexical search needs no encoder at all.
        XCTAssertEqual(
            try embeddings(["search", "--index", index, "--quantize", "float32", "--mode", "lexical", "closures"])
                .status, 0)

        // Re-indexing the same file with the unchanged encoder reuses every vector; with float32,
        // none: the file never mixes the two.
        let again = try embeddings(["index", docs.path, "--out", index, "--quantize", "int8"])
        XCTAssertTrue(again.stderr.contains("0 embedded"), again.stderr)
        let float = try embeddings(["index", docs.path, "--out", index])
        XCTAssertTrue(float.stderr.contains("2 embedded, 0 reused"), float.stderr)

        let lexical = try embeddings(["index", docs.path, "--out", index, "--lexical-only", "--quantize", "int8"])
        XCTAssertEqual(lexical.status, 64, lexical.stderr)
        XCTAssertTrue(lexical.stderr.contains("--quantize needs embeddings"), lexical.stderr)
    }

    func testServeWithInt8AnswersWithEmbedsVectors() throws {
        let server = try ServeProcess(["--quiet", "--quantize", "int8"])
        defer { _ = server.terminate() }
        let expected = try vectors(["--quantize", "int8"])
        for (i, text) in Self.texts.enumerated() {
            let reply = try LoopbackHTTP.post(port: server.port, "/v1/embeddings", json: ["input": text, "model": "m"])
            XCTAssertEqual(reply.status, 200, reply.text)
            let body = try XCTUnwrap(try reply.json() as? [String: Any])
            let vector = ServerTests.floats((body["data"] as? [[String: Any]])?.first?["embedding"])
            // Each row is quantized on its own and the integer sums are exact, so a text's int8
            // vector does not depend on the batch it was encoded in: batched by embed, alone here.
            XCTAssertEqual(vector, expected[i], "input \(i)")
        }
    }
}
