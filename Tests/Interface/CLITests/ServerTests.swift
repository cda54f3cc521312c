import Foundation
import LinearAlgebra
import ModelTestSupport
import Synchronization
import TestSupport
import XCTest

@testable import EmbeddingsCLI

/// `embeddings serve` as a client sees it: a real server process on a loopback port (started
/// with `--port 0`, its ready line awaited), every route, every error, hostile clients, SIGTERM.
final class ServerTests: XCTestCase {
    private static let shared = Mutex<ServeProcess?>(nil)

    static let texts = ["A river bank.", "Closures capture values from the scope around them.", "Café naïve — 東京 🚀 ok"]

    override func setUpWithError() throws {
        _ = try TestModel.shared()  // installs the model once, so the server finds it
    }

    override class func tearDown() {
        if let server = shared.withOrderedLock({ $0 }) { _ = server.terminate() }
        super.tearDown()
    }

    /// The server most tests share (default limits), started on first use.
    func server() throws -> ServeProcess {
        try ServeProcess.shared(in: Self.shared)
    }

    // MARK: Helpers

    static func floats(_ value: Any?) -> [Float] {
        (value as? [Any] ?? []).map { element in
            if let number = element as? NSNumber { return number.floatValue }
            if let double = element as? Double { return Float(double) }
            return .nan
        }
    }

    static func decodeBase64(_ text: String) -> [Float] {
        let bytes = [UInt8](Data(base64Encoded: text) ?? Data())
        return stride(from: 0, to: bytes.count - 3, by: 4).map { i in
            Float(
                bitPattern: UInt32(bytes[i]) | UInt32(bytes[i + 1]) << 8 | UInt32(bytes[i + 2]) << 16 | UInt32(
                    bytes[i + 3]) << 24)
        }
    }

    static func cosine(_ a: [Float], _ b: [Float]) -> Double {
        var dot = 0.0
        var na = 0.0
        var nb = 0.0
        for (x, y) in zip(a, b) {
            dot += Double(x) * Double(y)
            na += Double(x * x)
            nb += Double(y * y)
        }
        return dot / (na.squareRoot() * nb.squareRoot())
    }

    /// `embeddings <arguments>` on `texts` as JSON Lines: each output line parsed.
    static func cli(_ arguments: [String], _ texts: [String]) throws -> [[String: Any]] {
        let input =
            try texts.enumerated().map { i, text in
                String(
                    decoding: try JSONSerialization.data(withJSONObject: ["id": "\(i)", "text": text]), as: UTF8.self)
            }.joined(separator: "\n") + "\n"
        let r = try ChildProcess.run(CLITests.executable, arguments, input: Data(input.utf8))
        XCTAssertEqual(r.status, 0, r.stderr)
        return try r.stdout.split(separator: "\n").map {
            try XCTUnwrap(JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
        }
    }

    /// JSON text with sorted keys, to compare two parsed values whole.
    static func canonical(_ value: Any?) throws -> String {
        String(
            decoding: try JSONSerialization.data(
                withJSONObject: value ?? NSNull(), options: [.sortedKeys, .fragmentsAllowed]), as: UTF8.self)
    }

    func object(_ reply: HTTPReply, file: StaticString = #filePath, line: UInt = #line) throws -> [String: Any] {
        try XCTUnwrap(try reply.json() as? [String: Any], reply.text, file: file, line: line)
    }

    /// The reply is an error in OpenAI's shape with this status (and code, when given).
    @discardableResult
    func assertError(
        _ reply: HTTPReply, _ status: Int, code: String? = nil, param: String? = nil, file: StaticString = #filePath,
        line: UInt = #line
    ) throws -> String {
        XCTAssertEqual(reply.status, status, reply.text, file: file, line: line)
        let error = try XCTUnwrap(try object(reply)["error"] as? [String: Any], reply.text, file: file, line: line)
        XCTAssertEqual(Set(error.keys), ["message", "type", "param", "code"], file: file, line: line)
        XCTAssertEqual(
            error["type"] as? String, status >= 500 ? "server_error" : "invalid_request_error", file: file, line: line)
        if let code { XCTAssertEqual(error["code"] as? String, code, reply.text, file: file, line: line) }
        if let param { XCTAssertEqual(error["param"] as? String, param, reply.text, file: file, line: line) }
        return error["message"] as? String ?? ""
    }

    // MARK: Routes

    func testOpenAIEmbeddingsEqualTheEmbedCommand() throws {
        let port = try server().port
        let expected = try Self.cli(["embed"], Self.texts).map { Self.floats($0["vector"]) }
        let reply = try LoopbackHTTP.post(
            port: port, "/v1/embeddings", json: ["input": Self.texts, "model": "text-embedding-3-small"])
        XCTAssertEqual(reply.status, 200, reply.text)
        XCTAssertEqual(reply.headers["content-type"], "application/json")
        let body = try object(reply)
        XCTAssertEqual(body["object"] as? String, "list")
        XCTAssertEqual(body["model"] as? String, "sentence-transformers/all-MiniLM-L6-v2")
        let data = try XCTUnwrap(body["data"] as? [[String: Any]])
        XCTAssertEqual(data.count, 3)
        for (i, item) in data.enumerated() {
            XCTAssertEqual(item["object"] as? String, "embedding")
            XCTAssertEqual(item["index"] as? Int, i)
            XCTAssertEqual(Self.floats(item["embedding"]), expected[i], "input \(i): the server's floats are embed's")
        }
        let usage = try XCTUnwrap(body["usage"] as? [String: Any])
        XCTAssertGreaterThan(usage["prompt_tokens"] as? Int ?? 0, 6)
        XCTAssertEqual(usage["prompt_tokens"] as? Int, usage["total_tokens"] as? Int)

        let base64 = try object(
            try LoopbackHTTP.post(
                port: port, "/v1/embeddings", json: ["input": Self.texts, "model": "m", "encoding_format": "base64"]))
        for (i, item) in try XCTUnwrap(base64["data"] as? [[String: Any]]).enumerated() {
            XCTAssertEqual(
                Self.decodeBase64(item["embedding"] as? String ?? ""), expected[i], "base64 of little-endian float32")
        }

        let single = try object(
            try LoopbackHTTP.post(
                port: port, "/v1/embeddings", json: ["input": Self.texts[1], "model": "m", "dimensions": 384]))
        let alone = try Self.cli(["embed"], [Self.texts[1]]).map { Self.floats($0["vector"]) }
        XCTAssertEqual(Self.floats((single["data"] as? [[String: Any]])?.first?["embedding"]), alone[0])
    }

    func testTEIEmbedShape() throws {
        let port = try server().port
        let expected = try Self.cli(["embed"], Self.texts).map { Self.floats($0["vector"]) }
        let reply = try LoopbackHTTP.post(port: port, "/embed", json: ["inputs": Self.texts])
        XCTAssertEqual(reply.status, 200, reply.text)
        XCTAssertEqual((try reply.json() as? [Any])?.map { Self.floats($0) }, expected)
        let raw = try XCTUnwrap(
            try LoopbackHTTP.post(port: port, "/embed", json: ["inputs": "A river bank.", "normalize": false]).json()
                as? [Any])
        let norm = Self.floats(raw.first).reduce(0) { $0 + Double($1 * $1) }.squareRoot()
        XCTAssertGreaterThan(abs(norm - 1), 1e-3, "normalize false leaves the mean as it is")
        let long = String(repeating: "closures capture values ", count: 200)
        try assertError(
            try LoopbackHTTP.post(port: port, "/embed", json: ["inputs": long]), 413, code: "input_too_long",
            param: "inputs")
        XCTAssertEqual(
            try LoopbackHTTP.post(port: port, "/embed", json: ["inputs": long, "truncate": true]).status, 200)
    }

    func testTokenEmbeddingsEqualEmbedTokensAndTokenVectors() throws {
        let port = try server().port
        let expected = try Self.cli(["embed", "--tokens", "--token-vectors"], Self.texts)
        let reply = try LoopbackHTTP.post(port: port, "/v1/token-embeddings", json: ["input": Self.texts])
        XCTAssertEqual(reply.status, 200, reply.text)
        let data = try XCTUnwrap(try object(reply)["data"] as? [[String: Any]])
        XCTAssertEqual(data.count, 3)
        for (i, item) in data.enumerated() {
            XCTAssertEqual(Self.floats(item["vector"]), Self.floats(expected[i]["vector"]), "input \(i)")
            let vectors = (item["token_vectors"] as? [Any] ?? []).map { Self.floats($0) }
            XCTAssertEqual(
                vectors, (expected[i]["token_vectors"] as? [Any] ?? []).map { Self.floats($0) },
                "input \(i): token vectors")
            let tokens = try XCTUnwrap(item["tokens"] as? [[String: Any]])
            let cliTokens = try XCTUnwrap(expected[i]["tokens"] as? [[String: Any]])
            XCTAssertEqual(
                try Self.canonical(tokens.map { $0.filter { $0.key != "scalars" } }), try Self.canonical(cliTokens))
            let utf8 = Array(Self.texts[i].utf8)
            for token in tokens {
                let bytes = (token["utf8"] as? [Int]) ?? []
                let scalars = (token["scalars"] as? [Int]) ?? []
                let scalarStart = String(decoding: utf8[0..<bytes[0]], as: UTF8.self).unicodeScalars.count
                let scalarEnd = String(decoding: utf8[0..<bytes[1]], as: UTF8.self).unicodeScalars.count
                XCTAssertEqual(scalars, [scalarStart, scalarEnd], "\(token)")
            }
        }
        // A sub-range: the mean of the tokens overlapping "river", scaled to unit length.
        let ranged = try object(
            try LoopbackHTTP.post(
                port: port, "/v1/token-embeddings", json: ["input": "A river bank.", "range": ["start": 2, "end": 7]]))
        let item = try XCTUnwrap((ranged["data"] as? [[String: Any]])?.first)
        let tokens = try XCTUnwrap(item["tokens"] as? [[String: Any]])
        let vectors = (item["token_vectors"] as? [Any] ?? []).map { Self.floats($0) }
        let inside = tokens.indices.filter { t in
            let r = tokens[t]["utf8"] as? [Int] ?? [0, 0]
            return r[0] < r[1] && r[0] < 7 && 2 < r[1]
        }
        XCTAssertEqual(inside.count, 1)
        var mean = [Float](repeating: 0, count: 384)
        for t in inside { for j in 0..<384 { mean[j] += vectors[t][j] / Float(inside.count) } }
        XCTAssertGreaterThan(Self.cosine(Self.floats(item["vector"]), mean), 0.999999)
        try assertError(
            try LoopbackHTTP.post(
                port: port, "/v1/token-embeddings", json: ["input": "A river bank.", "range": ["start": 2, "end": 70]]),
            400, param: "range")
        try assertError(
            try LoopbackHTTP.post(
                port: port, "/v1/token-embeddings", json: ["input": "é", "range": ["start": 1, "end": 2]]), 400,
            param: "range")
    }

    func testTokenizeEqualsTheTokenizeCommand() throws {
        let port = try server().port
        let expected = try Self.cli(["tokenize"], Self.texts)
        let reply = try LoopbackHTTP.post(port: port, "/tokenize", json: ["inputs": Self.texts])
        XCTAssertEqual(reply.status, 200, reply.text)
        let items = try XCTUnwrap(try reply.json() as? [[String: Any]])
        XCTAssertEqual(items.count, 3)
        for (i, item) in items.enumerated() {
            XCTAssertEqual(item["text"] as? String, Self.texts[i])
            XCTAssertEqual(try Self.canonical(item["tokens"]), try Self.canonical(expected[i]["tokens"]))
        }
    }

    func testHealthModelsAndMetrics() throws {
        let port = try server().port
        let health = try LoopbackHTTP.request(port: port, "GET", "/health")
        XCTAssertEqual(health.status, 200)
        XCTAssertEqual(try object(health)["status"] as? String, "ok")
        let models = try object(try LoopbackHTTP.request(port: port, "GET", "/v1/models"))
        XCTAssertEqual(models["object"] as? String, "list")
        XCTAssertEqual(
            (models["data"] as? [[String: Any]])?.first?["id"] as? String, "sentence-transformers/all-MiniLM-L6-v2")
        XCTAssertEqual(try LoopbackHTTP.post(port: port, "/v1/embeddings", json: ["input": "metrics"]).status, 200)
        let metrics = try LoopbackHTTP.request(port: port, "GET", "/metrics")
        XCTAssertEqual(metrics.status, 200)
        XCTAssertTrue(metrics.headers["content-type"]?.hasPrefix("text/plain") ?? false)
        for expected in [
            "embeddings_requests_total{route=\"/health\",status=\"200\"} ",
            "# TYPE embeddings_request_duration_seconds histogram",
            "embeddings_request_duration_seconds_bucket{le=\"+Inf\"} ", "embeddings_batch_inputs_count ",
            "embeddings_batch_tokens_sum ",
            "embeddings_queue_depth 0", "embeddings_requests_total{route=\"/v1/embeddings\",status=\"200\"} ",
        ] {
            XCTAssertTrue(metrics.text.contains(expected), "missing \(expected) in\n\(metrics.text)")
        }
    }

    func testSearchEqualsTheSearchCommand() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("serve-search-\(UUID())")
        let docs = folder.appendingPathComponent("docs")
        try FileManager.default.createDirectory(at: docs, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try Data(
            "# Closures\n\nIntro about closures.\n\n## Capturing values\n\nA closure captures variables from the scope around it and keeps them alive.\n\n## Trailing syntax\n\nWhen the last argument is a closure you may write it after the parentheses.\n"
                .utf8
        )
        .write(to: docs.appendingPathComponent("closures.md"))
        try Data("# Optionals\n\nAn optional holds a value or nothing; unwrap it with if let.\n".utf8).write(
            to: docs.appendingPathComponent("optionals.md"))
        let index = folder.appendingPathComponent("docs.index").path
        let built = try embeddings(["index", docs.path, "--out", index])
        XCTAssertEqual(built.status, 0, built.stderr)
        let question = "how does a closure capture variables"
        let cli = try embeddings(["search", "--index", index, "--json", "--k", "2", question])
        XCTAssertEqual(cli.status, 0, cli.stderr)
        let served = try ServeProcess(["--index", index, "--quiet"])
        defer { _ = served.terminate() }
        XCTAssertTrue(served.readyLine.contains("with /search"), served.readyLine)
        let reply = try LoopbackHTTP.post(
            port: served.port, "/search", json: ["question": question, "k": 2, "mode": "hybrid", "precision": "exact"])
        XCTAssertEqual(reply.status, 200, reply.text)
        XCTAssertEqual(
            try Self.canonical(try reply.json()),
            try Self.canonical(try JSONSerialization.jsonObject(with: Data(cli.stdout.utf8))))
        try assertError(
            try LoopbackHTTP.post(port: served.port, "/search", json: ["question": question, "precision": "int8"]), 400,
            param: "precision")
        try assertError(
            try LoopbackHTTP.post(port: served.port, "/search", json: ["question": question, "mode": "fuzzy"]), 400,
            param: "mode")
        // Without an index there is no /search.
        try assertError(
            try LoopbackHTTP.post(port: try server().port, "/search", json: ["question": question]), 404,
            code: "no_index")
    }

    /// `input_type` picks e5's prefix per request (the server's `--input-type` when absent), as
    /// `embed --input-type` does; offsets stay relative to the text sent.
    func testInputTypeWithE5() throws {
        _ = try TestModel.multilingual()
        let texts = ["Le chien dort.", "Wie spät ist es?"]
        let served = try ServeProcess([
            "--model", "intfloat/multilingual-e5-small", "--input-type", "passage", "--quiet",
        ])
        defer { _ = served.terminate() }
        for type in ["query", "passage"] {
            let expected = try Self.cli(
                ["embed", "--model", "intfloat/multilingual-e5-small", "--input-type", type, "--quiet"], texts
            ).map { Self.floats($0["vector"]) }
            let reply = try object(
                try LoopbackHTTP.post(port: served.port, "/v1/embeddings", json: ["input": texts, "input_type": type]))
            XCTAssertEqual((reply["data"] as? [[String: Any]])?.map { Self.floats($0["embedding"]) }, expected, type)
            XCTAssertEqual(reply["model"] as? String, "intfloat/multilingual-e5-small")
        }
        let unsaid = try object(try LoopbackHTTP.post(port: served.port, "/v1/embeddings", json: ["input": texts]))
        let passages = try Self.cli(
            ["embed", "--model", "intfloat/multilingual-e5-small", "--input-type", "passage", "--quiet"], texts
        ).map { Self.floats($0["vector"]) }
        XCTAssertEqual(
            (unsaid["data"] as? [[String: Any]])?.map { Self.floats($0["embedding"]) }, passages,
            "--input-type passage is the default")
        let tokens = try XCTUnwrap(
            try LoopbackHTTP.post(port: served.port, "/tokenize", json: ["inputs": [texts[0]], "input_type": "query"])
                .json() as? [[String: Any]])
        let cliTokens = try Self.cli(
            ["tokenize", "--model", "intfloat/multilingual-e5-small", "--input-type", "query"], [texts[0]])
        XCTAssertEqual(try Self.canonical(tokens.first?["tokens"]), try Self.canonical(cliTokens.first?["tokens"]))
    }

    /// What the command refuses before it loads anything: usage errors 64, a missing key file 66.
    func testServeArgumentErrors() throws {
        for (arguments, status, message) in [
            (
                ["serve", "--host", "example.com"], Int32(64),
                "error: --host must be a numeric IPv4 or IPv6 address or localhost, got 'example.com'"
            ),
            (["serve", "--port", "70000"], 64, "error: --port must be an integer from 0 to 65535, got '70000'"),
            (["serve", "--precision", "int8"], 64, "error: --precision goes with --index or --store"),
            (
                ["serve", "--index", "a.index", "--store", "postgresql://"], 64,
                "error: --index and --store exclude each other"
            ),
            (["serve", "extra"], 64, "error: unexpected argument 'extra'"),
            (
                ["serve", "--port", "0", "--api-key-file", "/no/such/key"], 66,
                "error: API key file '/no/such/key' does not exist"
            ),
        ] {
            let r = try embeddings(arguments)
            XCTAssertEqual(r.status, status, "\(arguments): \(r.stderr)")
            XCTAssertEqual(r.stderr, message + "\n", "\(arguments)")
        }
    }

    // MARK: Errors

    func testErrorsInOpenAIShapeWhileStillServing() throws {
        let port = try server().port
        func post(_ body: String, _ path: String = "/v1/embeddings") throws -> HTTPReply {
            try LoopbackHTTP.request(port: port, "POST", path, body: Array(body.utf8))
        }
        try assertError(try post(#"{"input": "#), 400, code: "invalid_json")
        try assertError(try post(""), 400, code: "invalid_json")
        try assertError(try post("[1, 2]"), 400, code: "invalid_json")
        try assertError(try post(#"{"model": "m"}"#), 400, code: "missing_field", param: "input")
        try assertError(try post(#"{"input": 5}"#), 400, code: "invalid_type", param: "input")
        try assertError(try post(#"{"input": ["a", 5]}"#), 400, param: "input")
        try assertError(try post(#"{"input": []}"#), 400, code: "empty_input", param: "input")
        try assertError(
            try post(#"{"input": "a", "dimensions": "many"}"#), 400, code: "invalid_type", param: "dimensions")
        try assertError(try post(#"{"input": [1, 2, 3]}"#), 400, code: "token_ids_not_supported", param: "input")
        try assertError(try post(#"{"input": [[1, 2], [3]]}"#), 400, code: "token_ids_not_supported", param: "input")
        try assertError(
            try post(#"{"input": "a", "dimensions": 256}"#), 400, code: "unsupported_dimensions", param: "dimensions")
        try assertError(try post(#"{"input": "a", "encoding_format": "int8"}"#), 400, param: "encoding_format")
        try assertError(try post(#"{"input": "a", "input_type": "document"}"#), 400, param: "input_type")
        try assertError(try post(#"{"inputs": "a", "normalize": "yes"}"#, "/embed"), 400, param: "normalize")
        try assertError(try LoopbackHTTP.request(port: port, "GET", "/no/such/route"), 404, code: "not_found")
        let wrongMethod = try LoopbackHTTP.request(port: port, "GET", "/v1/embeddings")
        try assertError(wrongMethod, 405, code: "method_not_allowed")
        XCTAssertEqual(wrongMethod.headers["allow"], "POST")
        try assertError(try post("{}", "/health"), 405)

        // A 3 MiB body, over --max-body (2 MiB by default): refused on its Content-Length, before
        // the body is sent (the server answers at once, then drains and closes).
        let big = try LoopbackHTTP.connect(port: port)
        LoopbackHTTP.send(big, LoopbackHTTP.head("POST", "/v1/embeddings", port: port, contentLength: 3 << 20))
        let refused = try LoopbackHTTP.parse(LoopbackHTTP.readAll(big))
        close(big)
        let message = try assertError(refused, 413, code: "body_too_large")
        XCTAssertTrue(message.contains("2097152"), message)
        // 10,000 inputs: refused, naming the limit.
        let many = try LoopbackHTTP.post(
            port: port, "/v1/embeddings", json: ["input": (0..<10_000).map { "text \($0)" }])
        XCTAssertTrue(try assertError(many, 413, code: "too_many_inputs", param: "input").contains("2048"))
        // Invalid UTF-8 is repaired, with a warning header, as embed repairs its lines.
        let repaired = try LoopbackHTTP.request(
            port: port, "POST", "/v1/embeddings", body: Array(#"{"input": "caf"#.utf8) + [0xFF] + Array(#""}"#.utf8))
        XCTAssertEqual(repaired.status, 200, repaired.text)
        XCTAssertTrue(repaired.headers["warning"]?.contains("invalid UTF-8 repaired") ?? false, "\(repaired.headers)")
        XCTAssertEqual(try LoopbackHTTP.request(port: port, "GET", "/health").status, 200, "still serving")
    }

    func testKeyTokenLimitAndFullQueue() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("serve-key-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let keyFile = folder.appendingPathComponent("key")
        try Data("s3cret-key\n".utf8).write(to: keyFile)
        let served = try ServeProcess([
            "--api-key-file", keyFile.path, "--max-batch-tokens", "64", "--max-queue", "1", "--quiet",
        ])
        defer { _ = served.terminate() }
        let port = served.port
        let body = ["input": ["A river bank."]]
        try assertError(try LoopbackHTTP.post(port: port, "/v1/embeddings", json: body), 401, code: "invalid_api_key")
        try assertError(
            try LoopbackHTTP.post(
                port: port, "/v1/embeddings", json: body, headers: ["Authorization": "Bearer s3cret-kez"]), 401,
            code: "invalid_api_key")
        try assertError(
            try LoopbackHTTP.post(
                port: port, "/v1/embeddings", json: body, headers: ["Authorization": "Bearer s3cret-key-longer"]), 401)
        XCTAssertEqual(try LoopbackHTTP.request(port: port, "GET", "/health").status, 200, "/health needs no key")
        let key = ["Authorization": "Bearer s3cret-key"]
        XCTAssertEqual(try LoopbackHTTP.post(port: port, "/v1/embeddings", json: body, headers: key).status, 200)
        let tooMany = try LoopbackHTTP.post(
            port: port, "/v1/embeddings",
            json: ["input": Array(repeating: "Closures capture values from the scope around them.", count: 8)],
            headers: key)
        XCTAssertTrue(try assertError(tooMany, 413, code: "too_many_tokens").contains("at most 64"))

        // 24 requests sent at once, each on its own connection, before any answer is read: one
        // batch encodes, one request waits (--max-queue 1), the others arriving meanwhile get 503.
        let replies = try LoopbackHTTP.concurrently(
            port: port, 24, "POST", "/v1/embeddings",
            body: try JSONSerialization.data(withJSONObject: [
                "input": Array(repeating: "Closures capture values.", count: 6)
            ]),
            headers: key)
        let statuses = Dictionary(grouping: replies, by: \.status).mapValues(\.count)
        XCTAssertEqual(Set(statuses.keys).subtracting([200, 503]), [], "\(statuses)")
        XCTAssertGreaterThan(statuses[503] ?? 0, 0, "\(statuses)")
        XCTAssertGreaterThan(statuses[200] ?? 0, 0, "\(statuses)")
        for refusal in replies where refusal.status == 503 {
            XCTAssertEqual(refusal.headers["retry-after"], "1")
            try assertError(refusal, 503, code: "queue_full")
        }
        XCTAssertEqual(
            try LoopbackHTTP.post(port: port, "/v1/embeddings", json: body, headers: key).status, 200, "still serving")
    }

    // MARK: Hostile clients and load

    func testHostileClientsAndTheServerKeepsServing() throws {
        let served = try ServeProcess(["--timeout", "1", "--quiet"])
        defer { _ = served.terminate() }
        let port = served.port
        func healthy() throws { XCTAssertEqual(try LoopbackHTTP.request(port: port, "GET", "/health").status, 200) }

        // A client that stalls mid-headers is cut off by the timeout; others are served meanwhile.
        let stalled = try LoopbackHTTP.connect(port: port)
        XCTAssertTrue(LoopbackHTTP.send(stalled, Array("POST /v1/embeddings HTTP/1.1\r\nHost: x\r\nContent-Le".utf8)))
        try healthy()
        let start = Date()
        let answer = LoopbackHTTP.readAll(stalled)
        close(stalled)
        XCTAssertLessThan(Date().timeIntervalSince(start), 30, "closed by the 1 s timeout")
        XCTAssertFalse(String(decoding: answer, as: UTF8.self).contains("200 OK"))

        // A client that keeps its connection busy with a header byte every 250 ms (never silent
        // for the 1 s timeout) is cut off once its headers are 1 s late; others are served meanwhile.
        let dribbler = try LoopbackHTTP.connect(port: port)
        let slowHead = LoopbackHTTP.head("GET", "/health", port: port, contentLength: nil)
        var dribbled = 0
        var cut = false
        let began = Date()
        while dribbled < slowHead.count {
            guard LoopbackHTTP.send(dribbler, [slowHead[dribbled]]) else {
                cut = true
                break
            }
            dribbled += 1
            if dribbled == 2 { try healthy() }
            // The client's pace: up to 250 ms for the server to end the connection.
            var ready = pollfd(fd: dribbler, events: Int16(POLLIN), revents: 0)
            if poll(&ready, 1, 250) > 0 {
                cut = LoopbackHTTP.readAll(dribbler).isEmpty
                break
            }
        }
        close(dribbler)
        XCTAssertTrue(cut, "the dribbling client was cut off with nothing sent back")
        XCTAssertLessThan(dribbled, slowHead.count / 2, "cut after \(dribbled) of \(slowHead.count) bytes")
        XCTAssertLessThan(Date().timeIntervalSince(began), 10)

        // Headers and body one byte per write: parsed as any other request.
        let trickle = try LoopbackHTTP.connect(port: port)
        let body = Array(#"{"input": "A river bank."}"#.utf8)
        for byte in LoopbackHTTP.head("POST", "/v1/embeddings", port: port, contentLength: body.count) + body {
            XCTAssertTrue(LoopbackHTTP.send(trickle, [byte]))
        }
        XCTAssertEqual(try LoopbackHTTP.parse(LoopbackHTTP.readAll(trickle)).status, 200)
        close(trickle)

        // A 100 MiB body: 413 on its Content-Length, before the body is read; memory stays bounded.
        let peakBefore = try served.peakResidentBytes()
        let huge = try LoopbackHTTP.connect(port: port)
        XCTAssertTrue(
            LoopbackHTTP.send(huge, LoopbackHTTP.head("POST", "/v1/embeddings", port: port, contentLength: 100 << 20)))
        let refusal = try LoopbackHTTP.parse(LoopbackHTTP.readAll(huge))
        try assertError(refusal, 413, code: "body_too_large")
        let chunk = [UInt8](repeating: 0x61, count: 1 << 20)
        var sent = 0
        while sent < 100, LoopbackHTTP.send(huge, chunk) { sent += 1 }
        close(huge)
        XCTAssertLessThan(sent, 100, "the server closed the connection instead of reading 100 MiB")
        let peakAfter = try served.peakResidentBytes()
        XCTAssertLessThan(peakAfter - peakBefore, 16 << 20, "peak RSS \(peakBefore) → \(peakAfter) bytes")
        try healthy()

        // Disconnects: mid-body, and right after a complete request (before the answer).
        let half = try LoopbackHTTP.connect(port: port)
        LoopbackHTTP.send(
            half,
            LoopbackHTTP.head("POST", "/v1/embeddings", port: port, contentLength: 1000) + Array(#"{"input": "#.utf8))
        close(half)
        let gone = try LoopbackHTTP.connect(port: port)
        LoopbackHTTP.send(
            gone, LoopbackHTTP.head("POST", "/v1/embeddings", port: port, contentLength: body.count) + body)
        close(gone)
        XCTAssertEqual(try LoopbackHTTP.post(port: port, "/v1/embeddings", json: ["input": "still here"]).status, 200)
        try healthy()
        // And it still drains and exits 0 after all of that.
        let ended = served.terminate()
        XCTAssertTrue(ended.exited && ended.status == 0, "status \(ended.status): \(ended.stderr)")
    }

    /// An answer sent before the body is read (413 on `Content-Length`) reaches a client that reads
    /// only once it has sent its whole body: Python's `urllib` got "Broken pipe" 17–19 times in 20
    /// when the server closed at once. The server now drains the body (lingering close), within a
    /// bound past which a client that keeps sending is cut off.
    func testAnEarlyAnswerReachesAClientStillSendingItsBody() throws {
        let port = try server().port
        let script = """
            import json, sys, urllib.error, urllib.request
            body = b'{"input": "' + b'a' * (3 << 20) + b'"}'
            results = []
            for _ in range(20):
                request = urllib.request.Request("http://127.0.0.1:%s/v1/embeddings" % sys.argv[1], data=body, headers={"Content-Type": "application/json"})
                try:
                    with urllib.request.urlopen(request, timeout=120) as response:
                        results.append(str(response.status))
                except urllib.error.HTTPError as error:
                    results.append("%d %s" % (error.code, json.load(error)["error"]["code"]))
                except Exception as error:
                    results.append("%s: %s" % (type(error).__name__, error))
            print(json.dumps(results))
            """
        let run = try ChildProcess.run(URL(fileURLWithPath: "/usr/bin/env"), ["python3", "-c", script, "\(port)"])
        XCTAssertEqual(run.status, 0, run.stderr)
        let results = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String], run.stdout)
        XCTAssertEqual(results, Array(repeating: "413 body_too_large", count: 20))

        // A client that keeps sending after the answer: read and discarded up to the bound, then cut off.
        let bound = HTTPDaemon.Limits(maximumBody: 1, connections: 1, timeoutSeconds: 1).lingeringBytes
        let endless = try LoopbackHTTP.connect(port: port)
        defer { close(endless) }
        XCTAssertTrue(
            LoopbackHTTP.send(
                endless, LoopbackHTTP.head("POST", "/v1/embeddings", port: port, contentLength: 8 * bound)))
        try assertError(try LoopbackHTTP.parse(LoopbackHTTP.readAll(endless)), 413, code: "body_too_large")
        let mebibyte = [UInt8](repeating: 0x61, count: 1 << 20)
        var sent = 0
        while sent < 8 * bound, LoopbackHTTP.send(endless, mebibyte) { sent += mebibyte.count }
        // Unread, the socket buffers take about 4 MiB here; drained, the client gets past the bound.
        XCTAssertGreaterThanOrEqual(sent, bound, "drained: more was sent than the socket buffers hold")
        XCTAssertLessThan(sent, 8 * bound, "cut off after \(sent) bytes")
        XCTAssertEqual(try LoopbackHTTP.request(port: port, "GET", "/health").status, 200, "still serving")
    }

    func testThirtyTwoConcurrentClients() throws {
        let port = try server().port
        let texts = (0..<4).map { "Concurrent client text number \($0) about closures and optionals." }
        let expected = try Self.cli(["embed"], texts).map { Self.floats($0["vector"]) }
        let body = try JSONSerialization.data(withJSONObject: ["input": texts, "model": "m"])
        let batchesBefore = try batchCount(port)
        var failures = [String]()
        // Three rounds of 32 connections, each with its request sent before any answer is read.
        for round in 0..<3 {
            for (client, reply) in try LoopbackHTTP.concurrently(port: port, 32, "POST", "/v1/embeddings", body: body)
                .enumerated()
            {
                guard reply.status == 200, let data = (try reply.json() as? [String: Any])?["data"] as? [[String: Any]],
                    data.count == texts.count
                else {
                    failures.append("client \(client) round \(round): \(reply.status) \(reply.text.prefix(200))")
                    continue
                }
                for (i, item) in data.enumerated()
                where Self.cosine(Self.floats(item["embedding"]), expected[i]) < 0.999999 {
                    failures.append("client \(client) round \(round): input \(i) differs")
                }
            }
        }
        XCTAssertEqual(failures, [])
        // Requests that arrived while a batch ran were encoded together: fewer batches than requests.
        let batches = try batchCount(port) - batchesBefore
        XCTAssertLessThan(batches, 48, "\(batches) batches for 96 requests")
    }

    /// `embeddings_batch_inputs_count` from `/metrics`: the batches encoded so far.
    func batchCount(_ port: Int) throws -> Int {
        let metrics = try LoopbackHTTP.request(port: port, "GET", "/metrics").text
        let line = try XCTUnwrap(
            metrics.split(separator: "\n").first { $0.hasPrefix("embeddings_batch_inputs_count ") })
        return try XCTUnwrap(Int(line.split(separator: " ")[1]))
    }

    /// SIGTERM with a request in flight (its headers read: the server sent 100 Continue): the
    /// request is answered, then the process exits 0, well within 10 s; one log line per request.
    func testSIGTERMFinishesInFlightRequestsAndExitsZero() throws {
        let served = try ServeProcess()
        XCTAssertEqual(
            try LoopbackHTTP.post(port: served.port, "/v1/embeddings", json: ["input": ["one", "two"]]).status, 200)
        let body = Array(#"{"input": ["in flight", "when the signal came"]}"#.utf8)
        let flight = try LoopbackHTTP.connect(port: served.port)
        LoopbackHTTP.send(
            flight,
            LoopbackHTTP.head(
                "POST", "/v1/embeddings", port: served.port, contentLength: body.count,
                headers: ["Expect": "100-continue"]))
        var interim = [UInt8](repeating: 0, count: 25)
        XCTAssertEqual(recv(flight, &interim, interim.count, Int32(MSG_WAITALL)), 25)
        XCTAssertEqual(String(decoding: interim, as: UTF8.self), "HTTP/1.1 100 Continue\r\n\r\n")
        let start = Date()
        kill(served.pid, SIGTERM)
        LoopbackHTTP.send(flight, body)
        let answer = try LoopbackHTTP.parse(LoopbackHTTP.readAll(flight))
        close(flight)
        XCTAssertEqual(answer.status, 200, answer.text)
        let ended = served.terminate()
        XCTAssertLessThan(Date().timeIntervalSince(start), 10)
        XCTAssertTrue(ended.exited)
        XCTAssertEqual(ended.status, 0, ended.stderr)
        let log = ended.stderr.split(separator: "\n").filter { $0.hasPrefix("POST /v1/embeddings 200 ") }
        XCTAssertEqual(log.count, 2, ended.stderr)
        XCTAssertTrue(log.allSatisfy { $0.hasSuffix(" ms 2 inputs") }, ended.stderr)
    }
}
