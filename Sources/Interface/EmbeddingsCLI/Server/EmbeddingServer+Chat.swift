import Foundation
import JSONText
import LanguageModels
import LinearAlgebra
import Synchronization

/// A chat completion request read and checked: the conversation as a transcript, and how to answer.
struct ChatCompletion: Sendable {
    /// Instructions, earlier turns (tool calls and outputs among them), and the user's last
    /// message (the prompt, showing `schema` when there is one) or the outputs of the last calls.
    var transcript: Transcript
    /// The functions the model may call.
    var tools: [Transcript.ToolDefinition]
    /// Which calls it may make.
    var toolChoice: ToolCalling.Choice
    /// Sampling and the token limit.
    var options: GenerationOptions
    /// The shape of a structured answer (nil: text).
    var schema: GenerationSchema?
    /// Stop sequences (at most `maximumStops`, none empty).
    var stop: [String]
    /// Whether to answer as server-sent events.
    var stream: Bool
    /// With `stream`: a last chunk with the usage.
    var includeUsage: Bool

    /// The most stop sequences a request may send (OpenAI's limit).
    static let maximumStops = 4

    /// `request` checked field by field.
    /// - Throws: `APIError` 400 naming the field.
    init(_ request: ChatCompletionRequest) throws {
        if let n = request.n, n != 1 {
            throw APIError.badRequest(
                "'n' must be 1 (one choice per request), got \(n)", param: "n", code: "invalid_value")
        }
        for (field, value) in [
            ("frequency_penalty", request.frequencyPenalty), ("presence_penalty", request.presencePenalty),
        ]
        where (value ?? 0) != 0 {
            throw APIError.badRequest(
                "'\(field)' is not supported (only 0)", param: field, code: "unsupported_parameter")
        }
        if !(request.logitBias ?? [:]).isEmpty {
            throw APIError.badRequest(
                "'logit_bias' is not supported", param: "logit_bias", code: "unsupported_parameter")
        }
        if request.logprobs == true || request.topLogprobs != nil {
            throw APIError.badRequest(
                "'logprobs' is not supported", param: request.logprobs == true ? "logprobs" : "top_logprobs",
                code: "unsupported_parameter")
        }
        transcript = try Self.transcript(request.messages)
        options = try Self.options(request)
        stop = request.stop?.texts ?? []
        guard stop.count <= Self.maximumStops else {
            throw APIError.badRequest(
                "'stop' holds \(stop.count) strings; at most \(Self.maximumStops)", param: "stop", code: "invalid_value"
            )
        }
        if stop.contains("") {
            throw APIError.badRequest("'stop' holds an empty string", param: "stop", code: "invalid_value")
        }
        schema = try Self.schema(request.responseFormat)
        tools = try Self.tools(request.tools ?? [])
        if let name = ToolCalling.conflict(in: tools) {
            throw APIError.badRequest(
                "two tools' parameters define different schemas named '\(EmbeddingServer.printable(name))' ($defs); rename one",
                param: "tools", code: "unsupported_schema")
        }
        toolChoice = try Self.toolChoice(request.toolChoice, tools: tools)
        if let schema, let last = transcript.indices.last, case .prompt(var prompt) = transcript[last] {
            // The prompt shows the schema, as a session's guided prompt does.
            prompt.responseFormat = Transcript.ResponseFormat(schema: schema)
            transcript[last] = .prompt(prompt)
        }
        stream = request.stream ?? false
        if request.streamOptions != nil, !stream {
            throw APIError.badRequest(
                "'stream_options' goes with \"stream\": true", param: "stream_options", code: "invalid_value")
        }
        includeUsage = request.streamOptions?.includeUsage ?? false
    }

    /// The messages as a transcript: system and developer messages are instructions, user
    /// messages prompts, assistant messages responses or tool calls, tool messages the outputs
    /// of earlier calls (by `tool_call_id`); the last must be the user's or a tool's.
    private static func transcript(_ messages: [ChatCompletionRequest.Message]) throws -> Transcript {
        guard !messages.isEmpty else {
            throw APIError.badRequest("'messages' is empty", param: "messages", code: "invalid_value")
        }
        var entries: [Transcript.Entry] = []
        /// Calls made so far, by id: their tool's name.
        var calls: [String: String] = [:]
        for (i, message) in messages.enumerated() {
            switch message.role {
            case "system", "developer":
                entries.append(.instructions(.init(segments: [.text(.init(content: try Self.text(message, at: i)))])))
            case "user":
                entries.append(.prompt(.init(segments: [.text(.init(content: try Self.text(message, at: i)))])))
            case "assistant":
                if let made = message.toolCalls, !made.isEmpty {
                    // Text beside calls is kept as its own response, before them.
                    if case .text(let text)? = message.content, !text.isEmpty {
                        entries.append(.response(.init(assetIDs: [], segments: [.text(.init(content: text))])))
                    }
                    entries.append(
                        .toolCalls(
                            Transcript.ToolCalls(
                                try made.enumerated().map { j, call in
                                    let param = "messages[\(i)].tool_calls[\(j)]"
                                    guard call.type == nil || call.type == "function" else {
                                        throw APIError.badRequest(
                                            "'\(param).type' must be 'function'", param: "\(param).type",
                                            code: "invalid_value")
                                    }
                                    let arguments: GeneratedContent
                                    do {
                                        arguments = try GeneratedContent(json: call.function.arguments)
                                        guard arguments.isComplete else {
                                            throw GeneratedContentError.typeMismatch("cut short")
                                        }
                                    } catch {
                                        throw APIError.badRequest(
                                            "'\(param).function.arguments' is not JSON: \(error)",
                                            param: "\(param).function.arguments", code: "invalid_value")
                                    }
                                    calls[call.id] = call.function.name
                                    return Transcript.ToolCall(
                                        id: call.id, toolName: call.function.name, arguments: arguments)
                                })))
                } else {
                    let text = try Self.text(message, at: i)
                    entries.append(.response(.init(assetIDs: [], segments: [.text(.init(content: text))])))
                }
            case "tool":
                guard let id = message.toolCallID else {
                    throw APIError.badRequest(
                        "missing 'messages[\(i)].tool_call_id'", param: "messages[\(i)].tool_call_id",
                        code: "missing_field")
                }
                guard let name = calls[id] else {
                    throw APIError.badRequest(
                        "'messages[\(i)].tool_call_id' \(JSONWriter.quoted(id)) answers no earlier assistant tool call",
                        param: "messages[\(i)].tool_call_id", code: "invalid_value")
                }
                entries.append(
                    .toolOutput(
                        .init(id: id, toolName: name, segments: [.text(.init(content: try Self.text(message, at: i)))]))
                )
            default:
                throw APIError.badRequest(
                    "'messages[\(i)].role' must be 'system', 'developer', 'user', 'assistant' or 'tool', got '\(EmbeddingServer.printable(message.role))'",
                    param: "messages[\(i)].role", code: "invalid_value")
            }
        }
        guard messages.last?.role == "user" || messages.last?.role == "tool" else {
            throw APIError.badRequest(
                "the last message must be the user's or a tool's (this server answers the next assistant turn)",
                param: "messages[\(messages.count - 1)].role", code: "invalid_value")
        }
        return Transcript(entries: entries)
    }

    /// The functions of `tools`, their parameter schemas read as JSON Schema; a function without
    /// `parameters` takes an empty object.
    private static func tools(_ tools: [ChatCompletionRequest.ToolSpecification]) throws
        -> [Transcript.ToolDefinition]
    {
        var names = Set<String>()
        return try tools.enumerated().map { i, tool in
            let param = "tools[\(i)]"
            guard tool.type == "function" else {
                throw APIError.badRequest(
                    "'\(param).type' must be 'function', got '\(EmbeddingServer.printable(tool.type))'",
                    param: "\(param).type", code: "invalid_value")
            }
            let name = tool.function.name
            guard !name.isEmpty, name.count <= 64,
                name.unicodeScalars.allSatisfy({
                    $0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "_" || $0 == "-"
                })
            else {
                throw APIError.badRequest(
                    "'\(param).function.name' must be 1 to 64 letters, digits, '_' or '-'",
                    param: "\(param).function.name", code: "invalid_value")
            }
            guard names.insert(name).inserted else {
                throw APIError.badRequest(
                    "two tools are named '\(name)'", param: "\(param).function.name", code: "invalid_value")
            }
            var parameters = GenerationSchema(type: GeneratedContent.self, properties: [])
            if let schema = tool.function.parameters {
                do {
                    parameters = try GenerationSchema(jsonSchema: GeneratedContent(schema), name: name)
                } catch {
                    throw APIError.badRequest(
                        "\(param).function.parameters: \(error)", param: "\(param).function.parameters",
                        code: "unsupported_schema")
                }
            }
            return Transcript.ToolDefinition(
                name: name, description: tool.function.description ?? "", parameters: parameters)
        }
    }

    /// `tool_choice` as the turn takes it: `auto` by default when there are tools, `none` without.
    private static func toolChoice(_ choice: ChatCompletionRequest.ToolChoice?, tools: [Transcript.ToolDefinition])
        throws -> ToolCalling.Choice
    {
        switch choice {
        case nil: return tools.isEmpty ? .none : .automatic
        case .word("none"): return .none
        case .word(let word) where word == "auto" || word == "required":
            guard !tools.isEmpty else {
                throw APIError.badRequest(
                    "'tool_choice' \"\(word)\" needs 'tools'", param: "tool_choice", code: "invalid_value")
            }
            return word == "auto" ? .automatic : .required
        case .word(let word):
            throw APIError.badRequest(
                "'tool_choice' must be 'none', 'auto', 'required' or a function, got '\(EmbeddingServer.printable(word))'",
                param: "tool_choice", code: "invalid_value")
        case .function(let name):
            guard tools.contains(where: { $0.name == name }) else {
                throw APIError.badRequest(
                    "'tool_choice' names '\(EmbeddingServer.printable(name))', which is not among 'tools'",
                    param: "tool_choice", code: "invalid_value")
            }
            return .named(name)
        }
    }

    /// A message's text: its string, or its text parts joined.
    private static func text(_ message: ChatCompletionRequest.Message, at i: Int) throws -> String {
        switch message.content {
        case .text(let text)?: return text
        case .parts(let parts)?:
            var text = ""
            for (j, part) in parts.enumerated() {
                guard part.type == "text" else {
                    throw APIError.badRequest(
                        "content parts of type '\(EmbeddingServer.printable(part.type))' are not supported; only 'text'",
                        param: "messages[\(i)].content[\(j)].type", code: "unsupported_value")
                }
                guard let piece = part.text else {
                    throw APIError.badRequest(
                        "missing 'messages[\(i)].content[\(j)].text'", param: "messages[\(i)].content[\(j)].text",
                        code: "missing_field")
                }
                text += piece
            }
            return text
        case nil:
            throw APIError.badRequest(
                "missing 'messages[\(i)].content'", param: "messages[\(i)].content", code: "missing_field")
        }
    }

    /// Sampling as OpenAI's fields ask: temperature 0 is greedy; otherwise nucleus sampling at
    /// `top_p` (default 1: every token) and `temperature` (default 1), from `seed` when given.
    private static func options(_ request: ChatCompletionRequest) throws -> GenerationOptions {
        let temperature = request.temperature ?? 1
        guard temperature.isFinite, (0...2).contains(temperature) else {
            throw APIError.badRequest(
                "'temperature' must be from 0 to 2, got \(temperature)", param: "temperature", code: "invalid_value")
        }
        let topP = request.topP ?? 1
        guard topP.isFinite, topP > 0, topP <= 1 else {
            throw APIError.badRequest(
                "'top_p' must be above 0 and at most 1, got \(topP)", param: "top_p", code: "invalid_value")
        }
        let limitField = request.maxCompletionTokens != nil ? "max_completion_tokens" : "max_tokens"
        let limit = request.maxCompletionTokens ?? request.maxTokens
        if let limit, limit < 1 {
            throw APIError.badRequest(
                "'\(limitField)' must be at least 1, got \(limit)", param: limitField, code: "invalid_value")
        }
        let seed = request.seed.map { UInt64(bitPattern: $0) }
        return GenerationOptions(
            sampling: temperature == 0 ? .greedy : .random(probabilityThreshold: topP, seed: seed),
            temperature: temperature, maximumResponseTokens: limit)
    }

    /// The schema `response_format` asks for: nil for text; `json_schema`'s schema read as JSON
    /// Schema; `json_object` any JSON object (without OpenAI's check that a message says "JSON").
    private static func schema(_ format: ChatCompletionRequest.ResponseFormat?) throws
        -> GenerationSchema?
    {
        guard let format else { return nil }
        switch format.type {
        case "text": return nil
        case "json_object": return .anyJSONObject
        case "json_schema":
            guard let declared = format.jsonSchema else {
                throw APIError.badRequest(
                    "missing 'response_format.json_schema'", param: "response_format.json_schema", code: "missing_field"
                )
            }
            guard let schema = declared.schema else {
                throw APIError.badRequest(
                    "missing 'response_format.json_schema.schema'", param: "response_format.json_schema.schema",
                    code: "missing_field")
            }
            do {
                return try GenerationSchema(jsonSchema: GeneratedContent(schema), name: declared.name)
            } catch {
                throw APIError.badRequest(
                    "response_format.json_schema.schema: \(error.description)", param: "response_format",
                    code: "unsupported_schema")
            }
        default:
            throw APIError.badRequest(
                "'response_format.type' must be 'text', 'json_object' or 'json_schema', got '\(EmbeddingServer.printable(format.type))'",
                param: "response_format.type", code: "invalid_value")
        }
    }
}

/// Finds stop sequences in a response as it grows, holding back the text that may be the start
/// of one, so that no stop sequence (nor its start) is ever sent.
struct StopScanner {
    /// The sequences that end the text.
    let stops: [String]
    /// The response so far.
    private(set) var text = ""
    /// How much of `text` (in Unicode scalars) has been released.
    private var released = 0
    /// Whether a stop sequence was found (`text` is then cut before it).
    private(set) var stopped = false

    init(stops: [String]) { self.stops = stops }

    /// Adds `piece`; returns the text that may now be sent (none once stopped).
    mutating func append(_ piece: String) -> String {
        guard !stopped else { return "" }
        text += piece
        if stops.isEmpty { return piece }
        let scalars = Array(text.unicodeScalars)
        var end = scalars.count
        for stop in stops {
            if let range = text.range(of: stop, options: .literal) {
                let cut = text.unicodeScalars.distance(from: text.unicodeScalars.startIndex, to: range.lowerBound)
                if cut < end {
                    end = cut
                    stopped = true
                }
            }
        }
        if stopped {
            text = String(String.UnicodeScalarView(scalars[..<end]))
        } else {
            // Hold back the longest end of the text that begins a stop sequence.
            for stop in stops {
                let head = Array(stop.unicodeScalars)
                for length in stride(from: min(head.count - 1, scalars.count), to: 0, by: -1)
                where scalars[(scalars.count - length)...].elementsEqual(head[..<length]) {
                    end = min(end, scalars.count - length)
                    break
                }
            }
        }
        guard end > released else { return "" }
        defer { released = end }
        return String(String.UnicodeScalarView(scalars[released..<end]))
    }

    /// What was held back, when the response ended without a stop sequence.
    mutating func flush() -> String {
        guard !stopped, !stops.isEmpty else { return "" }
        let scalars = Array(text.unicodeScalars)
        defer { released = scalars.count }
        return String(String.UnicodeScalarView(scalars[released...]))
    }
}

extension EmbeddingServer {
    /// `POST /v1/chat/completions`: OpenAI's chat completion, answered by the chat model
    /// (`serve --chat-model`), whole or streamed as server-sent events. The request is checked
    /// here (400 naming the field); the generation waits for its turn (`ChatScheduler`: 503 with
    /// `Retry-After` when too many wait) and runs on an engine thread. `clientLeft` says whether
    /// the client has gone: a request whose client left while it waited is not generated, and a
    /// generation stops within a token of its client leaving, streamed or not.
    func chatCompletions(
        _ data: Data, clientLeft: @escaping @Sendable () -> Bool = { false },
        reply: @escaping @Sendable (HTTPResponse) -> Void
    ) throws {
        let request = try RequestDecoding.decode(ChatCompletionRequest.self, from: data)
        let completion = try ChatCompletion(request)
        let job = ChatScheduler.Job(
            run: { stop in
                self.generate(completion, reply: reply, serverStopping: stop, clientLeft: clientLeft)
            },
            refuse: {
                reply(APIError(status: 503, message: "the server is shutting down", code: "shutting_down").response)
            })
        switch chat.submit(job) {
        case .admitted: break
        case .stopping:
            reply(APIError(status: 503, message: "the server is shutting down", code: "shutting_down").response)
        case .full:
            reply(
                APIError(
                    status: 503,
                    message:
                        "too many chat completions are waiting (\(chat.maximumQueue), --max-queue); retry shortly",
                    code: "queue_full", headers: [(name: "Retry-After", value: "1")]
                ).response)
        }
    }

    /// Runs one chat completion (on an engine thread) and replies: the JSON object, or a stream
    /// of chunks ending with `data: [DONE]`. A session over the request's transcript generates
    /// the next turn (with the kept decoder cache closest to its prompt, given back after it:
    /// `conversations`): text, or a call to one of the request's tools, returned in OpenAI's
    /// `tool_calls` shape (the client runs it).
    private func generate(
        _ completion: ChatCompletion, reply: @escaping @Sendable (HTTPResponse) -> Void,
        serverStopping: @escaping @Sendable () -> Bool, clientLeft: @escaping @Sendable () -> Bool
    ) {
        // A client that left while its request waited: nothing is generated for it. The reply
        // goes nowhere but is owed; its status, 499 (nginx's "client closed request"), marks it
        // in the log and the request metrics as the client's leaving, not an error of its request.
        if clientLeft() {
            metrics.chat(finish: "cancelled", promptTokens: 0, cachedTokens: 0, completionTokens: 0)
            return reply(
                APIError(status: 499, message: "the client closed the connection", code: "client_closed").response)
        }
        let session = LanguageModelSession(model: chatModel, transcript: completion.transcript, sharing: conversations)
        let id = "chatcmpl-" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
        let created = Int(Date().timeIntervalSince1970)
        let header = ChunkHeader(id: id, created: created, model: chatModel.identifier)
        let scanner = Mutex(StopScanner(stops: completion.stop))
        // The model is loaded (or found missing: 503) before a stream's headers go out.
        do { _ = try chatModel.contextSize } catch { return reply(Self.apiError(error).response) }
        let body = completion.stream ? HTTPBodyStream() : nil
        // The stream opens before the prompt is rendered, so that a client sees the headers at
        // once; an error after that (a prompt too long for the context) goes in the stream, as
        // OpenAI's does.
        if let body {
            var response = HTTPResponse(status: 200, body: [])
            response.contentType = "text/event-stream"
            response.headers = [(name: "Cache-Control", value: "no-cache")]
            response.stream = body
            response.inputs = 1
            reply(response)
            body.write(header.event(.role, usage: completion.includeUsage))
        }
        let turn: LanguageModelSession.Turn
        do {
            let sent = Mutex(0)
            turn = try session.generateTurn(
                tools: completion.tools, choice: completion.toolChoice, schema: completion.schema,
                options: completion.options,
                shouldContinue: { !(body?.isCancelled ?? false) && !serverStopping() && !clientLeft() },
                onText: { text in
                    // The whole answer so far: what is new since the last call goes to the scanner.
                    let piece = sent.withOrderedLock { sent in
                        defer { sent = text.utf8.count }
                        return String(text.utf8.dropFirst(sent)) ?? ""
                    }
                    let (ready, stopped) = scanner.withOrderedLock { scanner in (scanner.append(piece), scanner.stopped)
                    }
                    if let body, !ready.isEmpty {
                        body.write(header.event(.content(ready), usage: completion.includeUsage))
                    }
                    return !stopped && !(body?.isCancelled ?? false) && !serverStopping() && !clientLeft()
                })
        } catch {
            metrics.chat(finish: "error", promptTokens: 0, cachedTokens: 0, completionTokens: 0)
            if let body {
                body.write(
                    Array("data: \(String(decoding: Self.apiError(error).response.body, as: UTF8.self))\n\n".utf8))
                body.finish()
                return
            }
            return reply(Self.apiError(error).response)
        }
        let (rest, stoppedBySequence, text) = scanner.withOrderedLock { scanner in
            (scanner.flush(), scanner.stopped, scanner.text)
        }
        let calls: Transcript.ToolCalls?
        if case .toolCalls(let made) = turn.outcome { calls = made } else { calls = nil }
        // Cut short (the server stopping, the client gone) counts as `length`: the model did not end it.
        let cancelled = turn.wasStopped && !stoppedBySequence
        let finish =
            calls != nil
            ? "tool_calls" : (turn.reachedTokenLimit || cancelled) && !stoppedBySequence ? "length" : "stop"
        metrics.chat(
            finish: cancelled ? "cancelled" : finish, promptTokens: turn.promptTokens,
            cachedTokens: turn.cachedPromptTokens, completionTokens: turn.completionTokens)
        if let body {
            if !rest.isEmpty {
                body.write(header.event(.content(rest), usage: completion.includeUsage))
            }
            if let calls {
                // Each call whole in one chunk: its text was held back while it was generated.
                for (index, call) in calls.enumerated() {
                    body.write(header.event(.toolCall(call, index: index), usage: completion.includeUsage))
                }
            }
            body.write(header.event(.empty, finish: finish, usage: completion.includeUsage))
            if completion.includeUsage { body.write(header.usageEvent(turn)) }
            body.write(Array("data: [DONE]\n\n".utf8))
            body.finish()
            return
        }
        var json = JSONWriter()
        json.beginObject()
        json.field("id", id)
        json.field("object", "chat.completion")
        json.field("created", created)
        json.field("model", chatModel.identifier)
        json.key("choices")
        json.beginArray()
        json.beginObject()
        json.field("index", 0)
        json.key("message")
        json.beginObject()
        json.field("role", "assistant")
        if let calls {
            json.field("content", nil)
            json.key("tool_calls")
            json.beginArray()
            for call in calls { Self.writeToolCall(call, index: nil, into: &json) }
            json.endArray()
        } else {
            json.field("content", text)
        }
        json.field("refusal", nil)
        json.endObject()
        json.field("logprobs", nil)
        json.field("finish_reason", finish)
        json.endObject()
        json.endArray()
        json.key("usage")
        Self.writeUsage(turn, into: &json)
        json.field("system_fingerprint", nil)
        json.endObject()
        reply(.json(json.text, inputs: 1))
    }

    /// A call in OpenAI's shape: `{"id", "type": "function", "function": {"name", "arguments"}}`,
    /// the arguments as JSON text (a string); streamed chunks add the call's `index` first.
    static func writeToolCall(_ call: Transcript.ToolCall, index: Int?, into json: inout JSONWriter) {
        json.beginObject()
        if let index { json.field("index", index) }
        json.field("id", call.id)
        json.field("type", "function")
        json.key("function")
        json.beginObject()
        json.field("name", call.toolName)
        json.field("arguments", call.arguments.jsonString)
        json.endObject()
        json.endObject()
    }

    /// A turn's `usage` object: `{"prompt_tokens", "completion_tokens", "total_tokens",
    /// "prompt_tokens_details": {"cached_tokens"}}`.
    static func writeUsage(_ turn: LanguageModelSession.Turn, into json: inout JSONWriter) {
        json.beginObject()
        json.field("prompt_tokens", turn.promptTokens)
        json.field("completion_tokens", turn.completionTokens)
        json.field("total_tokens", turn.promptTokens + turn.completionTokens)
        json.key("prompt_tokens_details")
        json.beginObject()
        json.field("cached_tokens", turn.cachedPromptTokens)
        json.endObject()
        json.endObject()
    }

    /// A generation error as the route answers it.
    static func apiError(_ error: any Error) -> APIError {
        guard let error = error as? LanguageModelSession.GenerationError else {
            return APIError(status: 500, message: "\(error)", code: "internal_error")
        }
        switch error {
        case .exceededContextWindowSize:
            return .badRequest(error.description, param: "messages", code: "context_length_exceeded")
        case .unsupportedGuide:
            return .badRequest(error.description, param: "response_format", code: "unsupported_schema")
        case .invalidGenerationOptions:
            return .badRequest(error.description, code: "invalid_value")
        case .assetsUnavailable:
            return APIError(status: 503, message: error.description, code: "model_unavailable")
        case .decodingFailure, .concurrentRequests:
            return APIError(status: 500, message: error.description, code: "generation_error")
        }
    }
}

/// What every chunk of one streamed completion repeats, and the chunks' text.
private struct ChunkHeader {
    /// `chatcmpl-…`, the same in every chunk.
    let id: String
    /// Seconds since 1970 when the completion started.
    let created: Int
    /// The chat model's identifier.
    let model: String

    /// What a chunk's `delta` carries.
    enum Delta {
        /// The first chunk's `{"role": "assistant", "content": ""}`.
        case role
        /// `{"content": text}`: text generated since the last chunk.
        case content(String)
        /// `{"tool_calls": [call]}`: one whole call, with its index.
        case toolCall(Transcript.ToolCall, index: Int)
        /// `{}`: the last chunk's, beside its finish reason.
        case empty

        /// Writes the delta object.
        func write(into json: inout JSONWriter) {
            json.beginObject()
            switch self {
            case .role:
                json.field("role", "assistant")
                json.field("content", "")
            case .content(let text):
                json.field("content", text)
            case .toolCall(let call, let index):
                json.key("tool_calls")
                json.beginArray()
                EmbeddingServer.writeToolCall(call, index: index, into: &json)
                json.endArray()
            case .empty:
                break
            }
            json.endObject()
        }
    }

    /// `data: {chunk}` with one choice whose delta is `delta`.
    func event(_ delta: Delta, finish: String? = nil, usage: Bool) -> [UInt8] {
        var json = JSONWriter()
        open(&json)
        json.key("choices")
        json.beginArray()
        json.beginObject()
        json.field("index", 0)
        json.key("delta")
        delta.write(into: &json)
        json.field("logprobs", nil)
        json.field("finish_reason", finish)
        json.endObject()
        json.endArray()
        if usage { json.field("usage", nil) }
        json.endObject()
        return Self.frame(json)
    }

    /// The last chunk of `stream_options.include_usage`: no choices, the turn's usage.
    func usageEvent(_ turn: LanguageModelSession.Turn) -> [UInt8] {
        var json = JSONWriter()
        open(&json)
        json.key("choices")
        json.beginArray()
        json.endArray()
        json.key("usage")
        EmbeddingServer.writeUsage(turn, into: &json)
        json.endObject()
        return Self.frame(json)
    }

    /// Opens the chunk object with the members every chunk repeats.
    private func open(_ json: inout JSONWriter) {
        json.beginObject()
        json.field("id", id)
        json.field("object", "chat.completion.chunk")
        json.field("created", created)
        json.field("model", model)
        json.field("system_fingerprint", nil)
    }

    /// A Server-Sent Event carrying the chunk: `data: ` and the JSON, then a blank line.
    private static func frame(_ json: JSONWriter) -> [UInt8] {
        Array(("data: " + json.text + "\n\n").utf8)
    }
}
