import ChatTemplates
import Foundation
import LinearAlgebra
import LlamaDecoder
import ModelTestSupport
import Synchronization
import TestSupport
import XCTest

@testable import EmbeddingsCLI

#if canImport(Glibc)
    import Glibc
#endif

/// `POST /v1/chat/completions` as a client sees it, on a real `embeddings serve` process with the
/// real default chat model (SmolLM2-135M): whole and streamed answers, structured output, limits,
/// stop sequences, refusals in OpenAI's error shape, a client that leaves mid-stream, a full queue.
final class ServerChatTests: XCTestCase {
    private static let shared = Mutex<ServeProcess?>(nil)
    static let question = "What is the capital of France?"

    override func setUpWithError() throws {
        _ = try TestModel.shared()  // the encoder the server loads at start
        _ = try TestLanguageModel.file()  // the chat model it loads on the first chat request
    }

    override class func tearDown() {
        if let server = shared.withOrderedLock({ $0 }) { _ = server.terminate() }
        super.tearDown()
    }

    func server() throws -> ServeProcess {
        try ServeProcess.shared(in: Self.shared)
    }

    // MARK: Helpers

    static func chat(_ port: Int, _ body: [String: Any]) throws -> (status: Int, json: [String: Any], reply: HTTPReply)
    {
        let reply = try LoopbackHTTP.post(port: port, "/v1/chat/completions", json: body)
        return (reply.status, try XCTUnwrap(reply.json() as? [String: Any], reply.text), reply)
    }

    static func request(_ content: String = question, maxTokens: Int = 24, _ more: [String: Any] = [:]) -> [String: Any]
    {
        [
            "model": "smollm2", "messages": [["role": "user", "content": content]], "temperature": 0,
            "max_tokens": maxTokens,
        ]
        .merging(more) { $1 }
    }

    static func message(_ json: [String: Any]) -> (content: String, finish: String, usage: [String: Int]) {
        let choice = (json["choices"] as? [[String: Any]])?.first ?? [:]
        let message = choice["message"] as? [String: Any] ?? [:]
        return (
            message["content"] as? String ?? "<none>", choice["finish_reason"] as? String ?? "<none>",
            usage(json["usage"])
        )
    }

    /// A `usage` object's counts, `prompt_tokens_details.cached_tokens` as `cached_tokens`.
    static func usage(_ value: Any?) -> [String: Int] {
        let object = value as? [String: Any] ?? [:]
        var counts = object.compactMapValues { $0 as? Int }
        if let details = object["prompt_tokens_details"] as? [String: Any] {
            counts["cached_tokens"] = details["cached_tokens"] as? Int
        }
        return counts
    }

    /// A chunked body's bytes joined.
    static func dechunked(_ body: Data) throws -> Data {
        let bytes = [UInt8](body)
        var out = Data()
        var at = 0
        while at < bytes.count {
            guard let lineEnd = (at..<(bytes.count - 1)).first(where: { bytes[$0] == 13 && bytes[$0 + 1] == 10 }),
                let size = Int(String(decoding: bytes[at..<lineEnd], as: UTF8.self), radix: 16)
            else { throw LoopbackHTTPError(description: "bad chunk at byte \(at)") }
            if size == 0 { return out }
            out.append(contentsOf: bytes[(lineEnd + 2)..<min(lineEnd + 2 + size, bytes.count)])
            at = lineEnd + 2 + size + 2
        }
        return out
    }

    /// The `data:` payloads of a server-sent event stream.
    static func events(_ text: String) -> [String] {
        text.components(separatedBy: "\n\n").compactMap { event in
            event.hasPrefix("data: ") ? String(event.dropFirst("data: ".count)) : nil
        }
    }

    /// A streamed completion: its events' JSON (without the final `[DONE]`), and whether it ended with it.
    static func stream(_ port: Int, _ body: [String: Any]) throws -> (
        chunks: [[String: Any]], done: Bool, reply: HTTPReply
    ) {
        let reply = try LoopbackHTTP.post(
            port: port, "/v1/chat/completions", json: body.merging(["stream": true]) { $1 })
        let text = String(decoding: try dechunked(reply.body), as: UTF8.self)
        let events = events(text)
        let chunks = try events.filter { $0 != "[DONE]" }.map {
            try XCTUnwrap(JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any], $0)
        }
        return (chunks, events.last == "[DONE]", reply)
    }

    static func deltas(_ chunks: [[String: Any]]) -> String {
        chunks.compactMap {
            (($0["choices"] as? [[String: Any]])?.first?["delta"] as? [String: Any])?["content"] as? String
        }
        .joined()
    }

    /// A metric's value in `/metrics`, or nil.
    /// `name`'s value once `reached` holds for it: the server's own count is the event waited for
    /// (read every 20 ms); a server that never gets there fails the test after 60 s, never hangs it.
    static func waitForMetric(_ port: Int, _ name: String, until reached: (Int?) -> Bool) throws -> Int? {
        let deadline = Date().addingTimeInterval(60)
        while true {
            let value = try metric(port, name)
            if reached(value) { return value }
            guard Date() < deadline else {
                throw LoopbackHTTPError(
                    description:
                        "\(name) did not reach the awaited value within 60 s (last: \(String(describing: value)))")
            }
            usleep(20_000)
        }
    }

    static func metric(_ port: Int, _ name: String) throws -> Int? {
        let text = try LoopbackHTTP.request(port: port, "GET", "/metrics").text
        return text.split(separator: "\n").first { $0.hasPrefix(name + " ") }.flatMap {
            Int($0.split(separator: " ").last ?? "")
        }
    }

    /// Reads `fd` until `condition` holds for what came (or the stream ends); returns what came.
    static func read(_ fd: Int32, until condition: (String) -> Bool) -> String {
        var received = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !condition(String(decoding: received, as: UTF8.self)) {
            let count = Glibc.read(fd, &buffer, buffer.count)
            if count <= 0 { break }
            received += buffer[0..<count]
        }
        return String(decoding: received, as: UTF8.self)
    }

    /// A request for a long answer: an array of at least 2,000 integers, which guided decoding
    /// cannot end sooner.
    static var long: [String: Any] {
        [
            "messages": [["role": "user", "content": "Count."]], "temperature": 0, "max_tokens": 4000, "stream": true,
            "response_format": [
                "type": "json_schema",
                "json_schema": [
                    "name": "Numbers", "schema": ["type": "array", "items": ["type": "integer"], "minItems": 2000],
                ],
            ],
        ]
    }

    /// Starts the long stream on a raw socket and returns it once content is arriving.
    static func startLongStream(_ port: Int) throws -> Int32 {
        let fd = try LoopbackHTTP.connect(port: port)
        let body = try JSONSerialization.data(withJSONObject: long)
        LoopbackHTTP.send(
            fd, LoopbackHTTP.head("POST", "/v1/chat/completions", port: port, contentLength: body.count) + [UInt8](body)
        )
        let first = read(fd) { $0.components(separatedBy: "\"content\":").count > 4 }
        XCTAssertTrue(first.hasPrefix("HTTP/1.1 200"), first)
        XCTAssertTrue(first.lowercased().contains("content-type: text/event-stream"), first)
        return fd
    }

    // MARK: Tests

    func testPlainCompletionWithRealUsage() throws {
        let port = try server().port
        let (status, json, _) = try Self.chat(port, Self.request())
        XCTAssertEqual(status, 200, "\(json)")
        XCTAssertEqual(json["object"] as? String, "chat.completion")
        XCTAssertTrue((json["id"] as? String ?? "").hasPrefix("chatcmpl-"))
        XCTAssertEqual(json["model"] as? String, "HuggingFaceTB/SmolLM2-135M-Instruct")
        let (content, finish, usage) = Self.message(json)
        XCTAssertTrue(content.contains("Paris"), content)
        XCTAssertEqual(finish, "stop")
        // The prompt's tokens are the chat template's rendering of the messages.
        let model = try TestLanguageModel.shared()
        let prompt = try model.chatPrompt([ChatMessage(role: .user, content: Self.question)])
        XCTAssertEqual(usage["prompt_tokens"], prompt.ids.count)
        XCTAssertEqual(usage["total_tokens"], (usage["prompt_tokens"] ?? 0) + (usage["completion_tokens"] ?? -1))
        XCTAssertEqual(usage["completion_tokens"], model.tokenizer.encode(content, parsingControlTokens: false).count)
        // Content as text parts, and a system message, are read too; /v1/models lists the chat model.
        let parts = try Self.chat(
            port,
            Self.request().merging([
                "messages": [
                    ["role": "system", "content": "Answer briefly."],
                    [
                        "role": "user",
                        "content": [
                            ["type": "text", "text": "What is the capital "], ["type": "text", "text": "of France?"],
                        ],
                    ],
                ]
            ]) { $1 })
        XCTAssertEqual(parts.status, 200, "\(parts.json)")
        let models = try LoopbackHTTP.request(port: port, "GET", "/v1/models").text
        XCTAssertTrue(models.contains("\"id\":\"HuggingFaceTB/SmolLM2-135M-Instruct\""), models)
    }

    func testStreamedDeltasMatchTheWholeAnswer() throws {
        let port = try server().port
        let body = Self.request(maxTokens: 40, ["seed": 7])
        let whole = Self.message(try Self.chat(port, body).json)
        let streamed = try Self.stream(port, body.merging(["stream_options": ["include_usage": true]]) { $1 })
        XCTAssertEqual(streamed.reply.status, 200)
        XCTAssertEqual(streamed.reply.headers["transfer-encoding"], "chunked")
        XCTAssertTrue(streamed.done, "ends with data: [DONE]")
        let chunks = streamed.chunks
        XCTAssertTrue(chunks.allSatisfy { $0["object"] as? String == "chat.completion.chunk" })
        XCTAssertEqual(Set(chunks.compactMap { $0["id"] as? String }).count, 1, "one id for every chunk")
        let first = ((chunks.first?["choices"] as? [[String: Any]])?.first?["delta"] as? [String: Any]) ?? [:]
        XCTAssertEqual(first["role"] as? String, "assistant")
        XCTAssertEqual(Self.deltas(chunks), whole.content)
        let finishes = chunks.compactMap { ($0["choices"] as? [[String: Any]])?.first?["finish_reason"] as? String }
        XCTAssertEqual(finishes, [whole.finish], "one finish_reason, in the last choice chunk")
        XCTAssertEqual((chunks.last?["choices"] as? [Any])?.count, 0, "the usage chunk has no choices")
        // The same counts, but for the prompt tokens found in a kept cache (the whole answer's).
        XCTAssertEqual(
            Self.usage(chunks.last?["usage"]).filter { $0.key != "cached_tokens" },
            whole.usage.filter { $0.key != "cached_tokens" })
        XCTAssertEqual(Self.usage(chunks.last?["usage"])["cached_tokens"], whole.usage["prompt_tokens"].map { $0 - 1 })
        // Without include_usage, no usage at all.
        let plain = try Self.stream(port, body)
        XCTAssertTrue(plain.chunks.allSatisfy { $0["usage"] == nil })
        XCTAssertEqual(Self.deltas(plain.chunks), whole.content)
        // Sampled with a seed: the same text every time, streamed or not; another seed, another text.
        let sampled = Self.request("Tell me about the sea.", maxTokens: 30, ["temperature": 0.9, "seed": 42])
        let drawn = Self.message(try Self.chat(port, sampled).json).content
        XCTAssertEqual(Self.message(try Self.chat(port, sampled).json).content, drawn)
        XCTAssertEqual(Self.deltas(try Self.stream(port, sampled).chunks), drawn)
        let reseeded = sampled.merging(["seed": 43]) { $1 }
        XCTAssertNotEqual(Self.message(try Self.chat(port, reseeded).json).content, drawn)
    }

    func testJSONSchemaOutputParsesAndSatisfiesIt() throws {
        let port = try server().port
        let schema: [String: Any] = [
            "type": "object", "additionalProperties": false, "required": ["name", "age", "colors"],
            "properties": [
                "name": ["type": "string", "pattern": "[A-Z][a-z]{1,10}"],
                "age": ["type": "integer", "minimum": 1, "maximum": 20],
                "colors": [
                    "type": "array", "items": ["enum": ["black", "white", "orange"]], "minItems": 1, "maxItems": 2,
                ],
            ],
        ]
        let (status, json, _) = try Self.chat(
            port,
            Self.request(
                "Describe a cat.", maxTokens: 80,
                [
                    "response_format": [
                        "type": "json_schema", "json_schema": ["name": "Cat", "strict": true, "schema": schema],
                    ]
                ]))
        XCTAssertEqual(status, 200, "\(json)")
        let (content, finish, _) = Self.message(json)
        XCTAssertEqual(finish, "stop")
        let cat = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(content.utf8)) as? [String: Any], content)
        XCTAssertEqual(Set(cat.keys), ["name", "age", "colors"])
        XCTAssertNotNil((cat["name"] as? String)?.range(of: "^[A-Z][a-z]{1,10}$", options: .regularExpression), content)
        XCTAssertTrue((1...20).contains(cat["age"] as? Int ?? 0), content)
        let colors = try XCTUnwrap(cat["colors"] as? [String], content)
        XCTAssertTrue(
            (1...2).contains(colors.count) && colors.allSatisfy(["black", "white", "orange"].contains), content)
    }

    func testJSONObjectOutputParsesAsAnObject() throws {
        let port = try server().port
        let (status, json, _) = try Self.chat(
            port,
            Self.request(
                "Describe a cat as JSON with its name and age.", maxTokens: 120,
                ["response_format": ["type": "json_object"]]))
        XCTAssertEqual(status, 200, "\(json)")
        let (content, finish, _) = Self.message(json)
        XCTAssertEqual(finish, "stop", content)
        XCTAssertNotNil(try JSONSerialization.jsonObject(with: Data(content.utf8)) as? [String: Any], content)
    }

    /// A follow-up (the conversation again, with the answer and a new question) finds the first
    /// turn in a kept decoder cache and runs only the rest; its answer is the one a server that
    /// keeps no cache gives.
    func testAFollowUpRunsOnlyItsNewTurnAndAnswersAsWithoutACache() throws {
        let port = try server().port
        let question = "Name three colors of the rainbow."
        let (status, first, reply) = try Self.chat(port, Self.request(question, maxTokens: 12))
        XCTAssertEqual(status, 200, reply.text)
        let opening = Self.message(first)
        var followUp = Self.request(question, maxTokens: 12)
        followUp["messages"] = [
            ["role": "user", "content": question], ["role": "assistant", "content": opening.content],
            ["role": "user", "content": "And one more?"],
        ]
        let (status2, second, reply2) = try Self.chat(port, followUp)
        XCTAssertEqual(status2, 200, reply2.text)
        let warm = Self.message(second)
        let prompt = try XCTUnwrap(warm.usage["prompt_tokens"])
        let cached = try XCTUnwrap(warm.usage["cached_tokens"], reply2.text)
        XCTAssertGreaterThanOrEqual(cached, try XCTUnwrap(opening.usage["prompt_tokens"]), "the first prompt was kept")
        XCTAssertLessThan(prompt - cached, 30, "only the answer's end and the new question ran: \(warm.usage)")
        let metric = try XCTUnwrap(Self.metric(port, "embeddings_chat_tokens_total{kind=\"cached\"}"))
        XCTAssertGreaterThanOrEqual(metric, cached)

        let cold = try ServeProcess(["--quiet", "--chat-caches", "0"])
        defer { _ = cold.terminate() }
        for round in 0..<2 {
            let (status3, third, reply3) = try Self.chat(cold.port, followUp)
            XCTAssertEqual(status3, 200, reply3.text)
            let answer = Self.message(third)
            XCTAssertEqual(answer.usage["cached_tokens"], 0, "round \(round): no cache is kept")
            XCTAssertEqual(answer.usage["prompt_tokens"], prompt)
            XCTAssertEqual(answer.content, warm.content, "the same greedy answer with and without a kept cache")
        }
    }

    func testMaxTokensEndsWithLength() throws {
        let port = try server().port
        for field in ["max_tokens", "max_completion_tokens"] {
            var body = Self.request("Write a long story about a dragon.", maxTokens: 3)
            body["max_tokens"] = nil
            body[field] = 3
            let (status, json, _) = try Self.chat(port, body)
            XCTAssertEqual(status, 200, "\(json)")
            let (_, finish, usage) = Self.message(json)
            XCTAssertEqual(finish, "length", field)
            XCTAssertEqual(usage["completion_tokens"], 3, field)
        }
    }

    func testStopSequenceCutsTheText() throws {
        let port = try server().port
        let whole = Self.message(try Self.chat(port, Self.request()).json).content
        let cut = try XCTUnwrap(whole.range(of: "Paris"), whole)
        for stop: Any in ["Paris", ["zzz", "Paris", "qq"]] {
            let answer = Self.message(
                try Self.chat(port, Self.request(Self.question, maxTokens: 24, ["stop": stop])).json)
            XCTAssertEqual(answer.content, String(whole[..<cut.lowerBound]))
            XCTAssertEqual(answer.finish, "stop")
            XCTAssertLessThan(answer.usage["completion_tokens"] ?? 99, 9)
            // Streamed, the start of the stop sequence is held back and never sent.
            let streamed = try Self.stream(port, Self.request(Self.question, maxTokens: 24, ["stop": stop]))
            XCTAssertEqual(Self.deltas(streamed.chunks), answer.content)
            XCTAssertTrue(streamed.done)
        }
    }

    func testBadRequestsAreRefusedInOpenAIsShape() throws {
        let port = try server().port
        let user = [["role": "user", "content": "hi"]]
        let cases: [(body: [String: Any], param: String?, code: String)] = [
            (["messages": "hi"], "messages", "invalid_type"),
            (["messages": user, "temperature": "hot"], "temperature", "invalid_type"),
            (["messages": user, "max_tokens": 0], "max_tokens", "invalid_value"),
            (["messages": user, "temperature": 3], "temperature", "invalid_value"),
            (["messages": [["role": "wizard", "content": "hi"]]], "messages[0].role", "invalid_value"),
            (
                ["messages": [["role": "user", "content": "hi"], ["role": "assistant", "content": "yo"]]],
                "messages[1].role", "invalid_value"
            ),
            (
                ["messages": [["role": "user", "content": [["type": "image_url", "image_url": ["url": "x"]]]]]],
                "messages[0].content[0].type", "unsupported_value"
            ),
            (["messages": [] as [Any]], "messages", "invalid_value"),
            (["messages": user, "n": 2], "n", "invalid_value"),
            (["messages": user, "stop": ["a", "b", "c", "d", "e"]], "stop", "invalid_value"),
            (
                ["messages": user, "tools": [["type": "retrieval", "function": ["name": "f"]]]], "tools[0].type",
                "invalid_value"
            ),
            (
                ["messages": user, "tools": [["type": "function", "function": ["name": "a b"]]]],
                "tools[0].function.name", "invalid_value"
            ),
            (
                [
                    "messages": user,
                    "tools": [
                        [
                            "type": "function",
                            "function": [
                                "name": "f",
                                "parameters": [
                                    "type": "object", "properties": ["d": ["type": "string", "format": "date"]],
                                ],
                            ],
                        ]
                    ],
                ], "tools[0].function.parameters", "unsupported_schema"
            ),
            (["messages": user, "tool_choice": "auto"], "tool_choice", "invalid_value"),
            (
                [
                    "messages": user, "tools": [["type": "function", "function": ["name": "f"]]],
                    "tool_choice": ["type": "function", "function": ["name": "g"]],
                ],
                "tool_choice", "invalid_value"
            ),
            (
                [
                    "messages": [
                        ["role": "user", "content": "hi"], ["role": "tool", "content": "42", "tool_call_id": "c1"],
                    ]
                ], "messages[1].tool_call_id", "invalid_value"
            ),
            (["messages": user, "response_format": ["type": "xml"]], "response_format.type", "invalid_value"),
            (
                [
                    "messages": user,
                    "response_format": [
                        "type": "json_schema",
                        "json_schema": ["name": "S", "schema": ["type": "string", "format": "email"]],
                    ],
                ],
                "response_format", "unsupported_schema"
            ),
            ([:], "messages", "missing_field"),
        ]
        for (body, param, code) in cases {
            let (status, json, reply) = try Self.chat(port, body)
            XCTAssertEqual(status, 400, "\(body): \(reply.text)")
            let error = try XCTUnwrap(json["error"] as? [String: Any], reply.text)
            XCTAssertEqual(error["type"] as? String, "invalid_request_error", reply.text)
            XCTAssertEqual(error["param"] as? String, param, reply.text)
            XCTAssertEqual(error["code"] as? String, code, reply.text)
            XCTAssertFalse((error["message"] as? String ?? "").isEmpty)
        }
        // The schema's refusal names the keyword and where it is.
        for field in ["response_format", "tools[0].function.parameters"] {
            let body = try XCTUnwrap(cases.first { $0.1 == field && $0.2 == "unsupported_schema" }).0
            let refused = try Self.chat(port, body).json
            XCTAssertTrue(
                ((refused["error"] as? [String: Any])?["message"] as? String ?? "").contains("'format' at #"),
                "\(refused)")
        }
    }

    func testClientLeavingMidStreamStopsGeneration() throws {
        let server = try ServeProcess(["--quiet"])
        defer { _ = server.terminate() }
        let fd = try Self.startLongStream(server.port)
        close(fd)
        // The generation ends as cancelled, long before its 2,000 integers.
        let cancelled = try Self.waitForMetric(
            server.port, "embeddings_chat_completions_total{finish_reason=\"cancelled\"}"
        ) { $0 != nil }
        XCTAssertEqual(cancelled, 1)
        XCTAssertLessThan(
            try XCTUnwrap(Self.metric(server.port, "embeddings_chat_tokens_total{kind=\"completion\"}")), 1000)
        XCTAssertEqual(try Self.metric(server.port, "embeddings_chat_running"), 0)
        XCTAssertEqual(try Self.chat(server.port, Self.request(maxTokens: 4)).status, 200)
        let log = server.terminate()
        XCTAssertEqual(log.status, 0, log.stderr)
    }

    /// A client that leaves a whole (not streamed) request while it generates, or while it waits
    /// for its turn: the generation stops within a token, or never starts.
    func testClientLeavingAWholeRequestStopsOrSkipsItsGeneration() throws {
        let server = try ServeProcess(["--quiet", "--chat-concurrency", "1"])
        defer { _ = server.terminate() }
        var whole = Self.long
        whole["stream"] = false
        let body = [UInt8](try JSONSerialization.data(withJSONObject: whole))
        func send() throws -> Int32 {
            let fd = try LoopbackHTTP.connect(port: server.port)
            LoopbackHTTP.send(
                fd,
                LoopbackHTTP.head("POST", "/v1/chat/completions", port: server.port, contentLength: body.count) + body)
            return fd
        }
        let running = try send()
        _ = try Self.waitForMetric(server.port, "embeddings_chat_running") { ($0 ?? 0) == 1 }
        let waiting = try send()
        _ = try Self.waitForMetric(server.port, "embeddings_chat_waiting") { ($0 ?? 0) == 1 }
        close(waiting)
        close(running)
        let cancelled = try Self.waitForMetric(
            server.port, "embeddings_chat_completions_total{finish_reason=\"cancelled\"}"
        ) { ($0 ?? 0) >= 2 }
        XCTAssertEqual(cancelled, 2)
        XCTAssertLessThan(
            try XCTUnwrap(Self.metric(server.port, "embeddings_chat_tokens_total{kind=\"completion\"}")), 1000)
        XCTAssertEqual(try Self.metric(server.port, "embeddings_chat_running"), 0)
        // At most the first request's prompt ran: the one whose client left while it waited never
        // started. (On a loaded machine the first client may leave before its own prompt is
        // rendered, and then no prompt ran at all.)
        let prompts = try XCTUnwrap(Self.metric(server.port, "embeddings_chat_tokens_total{kind=\"prompt\"}"))
        whole["max_tokens"] = 1
        let (status, json, reply) = try Self.chat(server.port, whole)
        XCTAssertEqual(status, 200, reply.text)
        let one = try XCTUnwrap(Self.message(json).usage["prompt_tokens"])
        XCTAssertTrue(prompts == one || prompts == 0, "\(prompts) prompt tokens ran before; one prompt is \(one)")
        let log = server.terminate()
        XCTAssertEqual(log.status, 0, log.stderr)
    }

    /// SIGTERM while a stream runs: after the grace period the generation is stopped, the stream
    /// ends whole (`finish_reason: length`, then `[DONE]`), and the server exits 0.
    func testStreamInProgressAtSIGTERMEndsAndTheServerExits() throws {
        let server = try ServeProcess()
        defer { _ = server.terminate() }
        let fd = try Self.startLongStream(server.port)
        defer { close(fd) }
        let started = DispatchTime.now()
        kill(server.pid, SIGTERM)
        let rest = Self.read(fd) { $0.contains("data: [DONE]") }
        let log = server.terminate()
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds) / 1e9
        XCTAssertEqual(log.status, 0, log.stderr)
        XCTAssertTrue(log.exited)
        XCTAssertLessThan(seconds, 5 + 1 + 3, "the grace period, a moment for streams to end, and slack")
        XCTAssertTrue(rest.contains("\"finish_reason\":\"length\""), String(rest.suffix(600)))
        XCTAssertTrue(rest.contains("data: [DONE]"), String(rest.suffix(600)))
        XCTAssertTrue(log.stderr.contains("POST /v1/chat/completions 200"), log.stderr)
    }

    func testFullQueueIsRefusedWith503AndRetryAfter() throws {
        let server = try ServeProcess(["--quiet", "--chat-concurrency", "1", "--max-queue", "1"])
        defer { _ = server.terminate() }
        let running = try Self.startLongStream(server.port)
        // A second request waits…
        let waiting = try LoopbackHTTP.connect(port: server.port)
        defer { close(waiting) }
        let body = try JSONSerialization.data(withJSONObject: Self.request(maxTokens: 4))
        LoopbackHTTP.send(
            waiting,
            LoopbackHTTP.head("POST", "/v1/chat/completions", port: server.port, contentLength: body.count)
                + [UInt8](body))
        _ = try Self.waitForMetric(server.port, "embeddings_chat_waiting") { $0 == 1 }
        // … and a third is refused.
        let (status, json, reply) = try Self.chat(server.port, Self.request(maxTokens: 4))
        XCTAssertEqual(status, 503, reply.text)
        XCTAssertEqual(reply.headers["retry-after"], "1")
        XCTAssertEqual((json["error"] as? [String: Any])?["code"] as? String, "queue_full")
        // When the running stream's client leaves, the waiting request is answered.
        close(running)
        let answered = try LoopbackHTTP.parse(LoopbackHTTP.readAll(waiting))
        XCTAssertEqual(answered.status, 200, answered.text)
    }
}

/// `StopScanner`: stop sequences found across pieces, the text that could begin one held back
/// and released when it turns out not to.
final class StopScannerTests: XCTestCase {
    func testStopAcrossPiecesIsCutAndNeverSent() {
        var scanner = StopScanner(stops: ["END"])
        XCTAssertEqual(scanner.append("Hello E"), "Hello ")
        XCTAssertEqual(scanner.append("N"), "")
        XCTAssertEqual(scanner.append("D and more"), "")
        XCTAssertTrue(scanner.stopped)
        XCTAssertEqual(scanner.text, "Hello ")
        XCTAssertEqual(scanner.flush(), "")
    }

    func testHeldBackTextIsReleasedWhenItIsNotAStop() {
        var scanner = StopScanner(stops: ["END", "ok!"])
        XCTAssertEqual(scanner.append("an E"), "an ")
        XCTAssertEqual(scanner.append("Nd"), "ENd")
        XCTAssertEqual(scanner.append(" o"), " ")
        XCTAssertFalse(scanner.stopped)
        XCTAssertEqual(scanner.flush(), "o")
        XCTAssertEqual(scanner.text, "an ENd o")
    }

    func testEarliestOfSeveralStopsWinsAndScalarsStayWhole() {
        var scanner = StopScanner(stops: ["🚀", "b"])
        XCTAssertEqual(scanner.append("café a"), "café a")
        XCTAssertEqual(scanner.append("b🚀"), "")
        XCTAssertEqual(scanner.text, "café a")
        var plain = StopScanner(stops: [])
        XCTAssertEqual(plain.append("x"), "x")
        XCTAssertEqual(plain.flush(), "")
        XCTAssertEqual(plain.text, "x")
    }

}

extension ServerChatTests {
    // MARK: Tools

    static var weatherTool: [String: Any] {
        [
            "type": "function",
            "function": [
                "name": "get_weather", "description": "The current weather in a city",
                "parameters": [
                    "type": "object",
                    "properties": [
                        "city": ["type": "string", "description": "The city"],
                        "unit": ["type": "string", "enum": ["celsius", "fahrenheit"]],
                    ],
                    "required": ["city", "unit"], "additionalProperties": false,
                ],
            ],
        ]
    }

    /// A required call comes back in OpenAI's shape, its arguments JSON text that follows the
    /// tool's schema; the client's follow-up with the tool's output gets a text answer.
    func testToolCallThenAnswerWithItsOutput() throws {
        let port = try server().port
        let (status, json, reply) = try Self.chat(
            port,
            Self.request(
                "What is the weather in Paris?", maxTokens: 40,
                ["tools": [Self.weatherTool], "tool_choice": "required"]))
        XCTAssertEqual(status, 200, reply.text)
        let choice = try XCTUnwrap((json["choices"] as? [[String: Any]])?.first, reply.text)
        XCTAssertEqual(choice["finish_reason"] as? String, "tool_calls")
        let message = try XCTUnwrap(choice["message"] as? [String: Any])
        XCTAssertTrue(message["content"] is NSNull, reply.text)
        let calls = try XCTUnwrap(message["tool_calls"] as? [[String: Any]], reply.text)
        XCTAssertEqual(calls.count, 1)
        let id = try XCTUnwrap(calls[0]["id"] as? String)
        XCTAssertTrue(id.hasPrefix("call_"), id)
        XCTAssertEqual(calls[0]["type"] as? String, "function")
        let function = try XCTUnwrap(calls[0]["function"] as? [String: Any])
        XCTAssertEqual(function["name"] as? String, "get_weather")
        let argumentsText = try XCTUnwrap(function["arguments"] as? String)
        let arguments = try XCTUnwrap(
            JSONSerialization.jsonObject(with: Data(argumentsText.utf8)) as? [String: Any], argumentsText)
        XCTAssertNotNil(arguments["city"] as? String, argumentsText)
        XCTAssertTrue(["celsius", "fahrenheit"].contains(arguments["unit"] as? String ?? ""), argumentsText)
        XCTAssertEqual(Set(arguments.keys), ["city", "unit"])
        let usage = Self.usage(json["usage"])
        XCTAssertGreaterThan(usage["completion_tokens"] ?? 0, 5)

        // The follow-up: the call and its output in the conversation, then the model's answer.
        var followUp = Self.request("What is the weather in Paris?", maxTokens: 16, ["tools": [Self.weatherTool]])
        followUp["messages"] = [
            ["role": "user", "content": "What is the weather in Paris?"],
            ["role": "assistant", "content": NSNull(), "tool_calls": calls],
            ["role": "tool", "tool_call_id": id, "content": "18 degrees and sunny"],
        ]
        let (status2, json2, reply2) = try Self.chat(port, followUp)
        XCTAssertEqual(status2, 200, reply2.text)
        let answer = Self.message(json2)
        XCTAssertTrue(["stop", "length"].contains(answer.finish), reply2.text)
        XCTAssertFalse(answer.content.isEmpty, reply2.text)
        XCTAssertGreaterThan(answer.usage["prompt_tokens"] ?? 0, usage["prompt_tokens"] ?? 0)
    }

    /// Streamed, a named call arrives as one `tool_calls` delta, then `finish_reason: tool_calls`
    /// and `[DONE]`; no content delta carries the call's markup.
    func testStreamedToolCall() throws {
        let port = try server().port
        let body = Self.request(
            "Weather in Rome?", maxTokens: 40,
            [
                "tools": [Self.weatherTool], "stream": true,
                "tool_choice": ["type": "function", "function": ["name": "get_weather"]],
            ])
        let reply = try LoopbackHTTP.post(port: port, "/v1/chat/completions", json: body)
        XCTAssertEqual(reply.status, 200)
        let text = String(decoding: try Self.dechunked(reply.body), as: UTF8.self)
        let events = text.components(separatedBy: "\n\n").filter { $0.hasPrefix("data: ") }.map {
            String($0.dropFirst(6))
        }
        XCTAssertEqual(events.last, "[DONE]")
        var calls: [[String: Any]] = []
        var finishes: [String] = []
        for event in events.dropLast() {
            let chunk = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(event.utf8)) as? [String: Any], event)
            let choice = try XCTUnwrap((chunk["choices"] as? [[String: Any]])?.first, event)
            let delta = try XCTUnwrap(choice["delta"] as? [String: Any])
            if let content = delta["content"] as? String { XCTAssertFalse(content.contains("tool_call"), content) }
            calls += delta["tool_calls"] as? [[String: Any]] ?? []
            if let finish = choice["finish_reason"] as? String { finishes.append(finish) }
        }
        XCTAssertEqual(finishes, ["tool_calls"])
        XCTAssertEqual(calls.count, 1)
        XCTAssertEqual(calls.first?["index"] as? Int, 0)
        let function = try XCTUnwrap(calls.first?["function"] as? [String: Any])
        XCTAssertEqual(function["name"] as? String, "get_weather")
        XCTAssertNoThrow(try JSONSerialization.jsonObject(with: Data((function["arguments"] as? String ?? "").utf8)))
    }

    /// A call cut short by `max_tokens` is not sent: no `tool_calls`, `finish_reason: length`;
    /// `tool_choice: none` with a JSON answer under the same tools answers JSON; two tools whose
    /// `$defs` disagree are refused.
    func testToolCallCutShortNoneWithJSONAndConflictingDefinitions() throws {
        let port = try server().port
        let (status, json, reply) = try Self.chat(
            port,
            Self.request("Weather in Lima?", maxTokens: 3, ["tools": [Self.weatherTool], "tool_choice": "required"]))
        XCTAssertEqual(status, 200, reply.text)
        let choice = try XCTUnwrap((json["choices"] as? [[String: Any]])?.first, reply.text)
        XCTAssertEqual(choice["finish_reason"] as? String, "length", reply.text)
        let message = try XCTUnwrap(choice["message"] as? [String: Any])
        XCTAssertNil(message["tool_calls"], reply.text)
        XCTAssertEqual(message["content"] as? String, "", reply.text)

        let schema: [String: Any] = [
            "type": "object", "properties": ["city": ["type": "string"]], "required": ["city"],
            "additionalProperties": false,
        ]
        let (status2, json2, reply2) = try Self.chat(
            port,
            Self.request(
                "Name a city.", maxTokens: 30,
                [
                    "tools": [Self.weatherTool], "tool_choice": "none",
                    "response_format": ["type": "json_schema", "json_schema": ["name": "City", "schema": schema]],
                ]))
        XCTAssertEqual(status2, 200, reply2.text)
        let answer = Self.message(json2)
        if answer.finish == "stop" {
            let object = try XCTUnwrap(
                JSONSerialization.jsonObject(with: Data(answer.content.utf8)) as? [String: Any], answer.content)
            XCTAssertNotNil(object["city"] as? String, answer.content)
        } else {
            XCTAssertTrue(answer.content.hasPrefix("{\"city\": \""), answer.content)
        }

        func tool(_ name: String, _ shape: String) -> [String: Any] {
            [
                "type": "function",
                "function": [
                    "name": name,
                    "parameters": [
                        "type": "object", "properties": ["x": ["$ref": "#/$defs/Shape"]], "required": ["x"],
                        "$defs": ["Shape": ["type": shape]],
                    ],
                ],
            ]
        }
        let (status3, json3, reply3) = try Self.chat(
            port, Self.request("Hi", maxTokens: 4, ["tools": [tool("a", "string"), tool("b", "integer")]]))
        XCTAssertEqual(status3, 400, reply3.text)
        let error = try XCTUnwrap(json3["error"] as? [String: Any], reply3.text)
        XCTAssertEqual(error["param"] as? String, "tools")
        XCTAssertEqual(error["code"] as? String, "unsupported_schema")
        // The same shape under one name in both is fine.
        let (status4, _, reply4) = try Self.chat(
            port, Self.request("Hi", maxTokens: 4, ["tools": [tool("a", "string"), tool("b", "string")]]))
        XCTAssertEqual(status4, 200, reply4.text)
    }

}
