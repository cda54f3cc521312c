import Dispatch
import Embeddings
import Foundation
import JSONText
import LanguageModels
import Retrieval

/// The routes of `embeddings serve`, behind an `HTTPDaemon`: requests are screened on the HTTP
/// library's thread (route, method, key, declared size), read and answered on the server's
/// request queue, and encoded in batches on the encoder's queue (`EncodingBatcher`).
final class EmbeddingServer: HTTPHandler {
    /// The routes, each with its one method.
    enum Route: String, CaseIterable, Sendable {
        case embeddings = "/v1/embeddings"
        case embed = "/embed"
        case tokenEmbeddings = "/v1/token-embeddings"
        case tokenize = "/tokenize"
        case search = "/search"
        case health = "/health"
        case models = "/v1/models"
        case metrics = "/metrics"
        case chatCompletions = "/v1/chat/completions"

        var method: String {
            switch self {
            case .health, .models, .metrics: return "GET"
            default: return "POST"
            }
        }
    }

    /// The server's limits and defaults, from the command line.
    struct Configuration: Sendable {
        var maximumBody: Int
        var maximumBatchTokens: Int
        var maximumQueue: Int
        /// The key clients must send as `Authorization: Bearer <key>`; nil: no key needed.
        var apiKey: [UInt8]?
        /// The input type of requests that do not say.
        var inputType: ContextualEmbedding.InputType
        /// The precision the store searches with (a request may only name this one).
        var precision: String
        /// Chat completions generated at once (`--chat-concurrency`); `maximumQueue` more may wait.
        var chatConcurrency = 1
        /// Conversations whose decoder caches are kept between chat requests (`--chat-caches`).
        var chatCaches = 4
        /// The most texts one request may carry (OpenAI's own limit).
        static let maximumInputs = 2048
        /// Characters of chunk text in `/search`'s context unless the request says (as `search --budget`).
        static let searchBudget = 1_400
    }

    let embedding: ContextualEmbedding
    let store: (any ChunkStore)?
    let configuration: Configuration
    let metrics = ServerMetrics()
    let batcher: EncodingBatcher
    /// The model `/v1/chat/completions` answers with, loaded on the first chat request.
    let chatModel: SystemLanguageModel
    /// Chat completions running and waiting.
    let chat: ChatScheduler
    /// Decoder caches kept between chat requests: a request that continues an earlier
    /// conversation runs only its new tokens.
    let conversations: ConversationCache
    /// Where bodies are parsed and responses written: off the HTTP library's thread, and apart
    /// from the encoder's queue so that small requests are answered while a batch runs.
    let requests = DispatchQueue(label: "embeddings.serve.requests", attributes: .concurrent)

    init(
        embedding: ContextualEmbedding, store: (any ChunkStore)?, chatModel: SystemLanguageModel = .default,
        configuration: Configuration
    ) {
        self.embedding = embedding
        self.chatModel = chatModel
        chat = ChatScheduler(concurrency: configuration.chatConcurrency, maximumQueue: configuration.maximumQueue)
        conversations = ConversationCache(capacity: configuration.chatCaches)
        self.store = store
        self.configuration = configuration
        batcher = EncodingBatcher(
            embedding: embedding, maximumTokens: configuration.maximumBatchTokens,
            maximumQueue: configuration.maximumQueue, metrics: metrics)
    }

    // MARK: HTTPHandler

    func screen(_ head: HTTPRequestHead) -> HTTPResponse? {
        guard let route = Route(rawValue: head.path) else {
            return APIError(
                status: 404,
                message:
                    "no route \(head.path); see /v1/models, /v1/embeddings, /embed, /v1/token-embeddings, /v1/chat/completions, /tokenize, /search, /health, /metrics",
                code: "not_found"
            ).response
        }
        guard head.method == route.method else {
            return APIError(
                status: 405, message: "\(route.rawValue) takes \(route.method), not \(head.method)",
                code: "method_not_allowed",
                headers: [(name: "Allow", value: route.method)]
            ).response
        }
        if let key = configuration.apiKey, route != .health, !Self.authorized(head.header("Authorization"), key: key) {
            return APIError(
                status: 401,
                message: head.header("Authorization") == nil
                    ? "missing API key: send 'Authorization: Bearer <key>'" : "wrong API key",
                code: "invalid_api_key", headers: [(name: "WWW-Authenticate", value: "Bearer")]
            ).response
        }
        if let length = head.contentLength, length > configuration.maximumBody {
            // Answered before the body is read; libmicrohttpd then closes the connection, and the
            // daemon drains the unread body first (within bounds) so the client reads this answer.
            var refusal = APIError.tooLarge(
                "the body is \(length) bytes; this server takes at most \(configuration.maximumBody) (--max-body)",
                code: "body_too_large")
            refusal.headers = [(name: "Connection", value: "close")]
            return refusal.response
        }
        if route == .search, store == nil {
            return APIError(
                status: 404, message: "/search needs an index: start the server with --index FILE or --store URL",
                code: "no_index"
            ).response
        }
        return nil
    }

    func handle(_ request: HTTPRequest, reply: @escaping @Sendable (HTTPResponse) -> Void) {
        requests.async {
            guard let route = Route(rawValue: request.head.path) else {
                return reply(APIError(status: 404, message: "no route", code: "not_found").response)
            }
            let (data, repaired) = RequestDecoding.utf8(request.body)
            let answer: @Sendable (HTTPResponse) -> Void = { response in
                guard repaired else { return reply(response) }
                var response = response
                response.headers.append(
                    (
                        name: "Warning",
                        value: "199 embeddings \"invalid UTF-8 repaired (each bad byte sequence became U+FFFD)\""
                    ))
                reply(response)
            }
            if repaired {
                Console.warning(
                    "\(request.head.method) \(request.head.path): invalid UTF-8 repaired (each bad byte sequence became U+FFFD)"
                )
            }
            do {
                switch route {
                case .embeddings: try self.embeddings(data, reply: answer)
                case .embed: try self.embed(data, reply: answer)
                case .tokenEmbeddings: try self.tokenEmbeddings(data, reply: answer)
                case .tokenize: answer(try self.tokenize(data))
                case .search: answer(try self.search(data))
                case .health:
                    answer(self.health())
                case .models: answer(self.models())
                case .chatCompletions:
                    try self.chatCompletions(data, clientLeft: request.clientLeft, reply: answer)
                case .metrics:
                    let chat = self.chat.depth
                    var response = HTTPResponse(
                        status: 200,
                        body: Array(
                            self.metrics.text(
                                queueDepth: self.batcher.queueDepth, chatWaiting: chat.waiting,
                                chatRunning: chat.running
                            ).utf8))
                    response.contentType = "text/plain; version=0.0.4; charset=utf-8"
                    answer(response)
                }
            } catch let error as APIError {
                answer(error.response)
            } catch {
                answer(APIError(status: 500, message: "\(error)", code: "internal_error").response)
            }
        }
    }

    func responded(_ head: HTTPRequestHead, _ response: HTTPResponse, seconds: Double) {
        let route = Route(rawValue: head.path)?.rawValue ?? "other"
        metrics.request(route: route, status: response.status, seconds: seconds, inputs: response.inputs)
        Console.note(
            "\(Self.printable(head.method)) \(Self.printable(head.path)) \(response.status) \(String(format: "%.1f", seconds * 1000)) ms \(response.inputs) inputs\(response.note.map { " (\($0))" } ?? "")"
        )
    }

    func stopping() {
        chat.stop()
    }

    func abandoned(_ head: HTTPRequestHead, reason: String, seconds: Double) {
        Console.note(
            "\(Self.printable(head.method)) \(Self.printable(head.path)) - \(String(format: "%.1f", seconds * 1000)) ms (\(reason))"
        )
    }

    // MARK: Shared steps

    /// Whether `header` is `Bearer <key>`, compared in time independent of where they differ.
    static func authorized(_ header: String?, key: [UInt8]) -> Bool {
        guard let header, header.hasPrefix("Bearer ") else { return false }
        let given = Array(header.utf8.dropFirst("Bearer ".utf8.count))
        var difference = UInt8(truncatingIfNeeded: given.count ^ key.count)
        for i in 0..<max(given.count, key.count) {
            difference |= (i < given.count ? given[i] : 0) ^ (i < key.count ? key[i] : 0)
        }
        return difference == 0
    }

    /// `text` for a log line: control characters (a client's `%0A` in a path) become `?`, so
    /// every request stays one line.
    static func printable(_ text: String) -> String {
        String(String.UnicodeScalarView(text.unicodeScalars.map { $0.value < 0x20 || $0.value == 0x7F ? "?" : $0 }))
    }

    /// The inputs checked against the limits and tokenized: the tokens of each (to count them, and
    /// to refuse truncation when the route does). Empty input is refused.
    func prepare(_ texts: [String], param: String, inputType: ContextualEmbedding.InputType, refuseTruncation: Bool)
        throws -> [TokenizedText]
    {
        guard !texts.isEmpty else {
            throw APIError.badRequest("'\(param)' is empty; send at least one text", param: param, code: "empty_input")
        }
        guard texts.count <= Configuration.maximumInputs else {
            throw APIError.tooLarge(
                "\(texts.count) inputs; this server takes at most \(Configuration.maximumInputs) per request",
                param: param, code: "too_many_inputs")
        }
        let tokenized = try texts.map { try embedding.tokenize($0, inputType: inputType) }
        if refuseTruncation, let long = tokenized.firstIndex(where: \.isTruncated) {
            throw APIError.tooLarge(
                "input \(long) has more than \(embedding.maximumSequenceLength) tokens (the model's maximum); send \"truncate\": true to cut it",
                param: param, code: "input_too_long")
        }
        let tokens = tokenized.reduce(0) { $0 + $1.tokens.count }
        guard tokens <= configuration.maximumBatchTokens else {
            throw APIError.tooLarge(
                "\(tokens) tokens; this server takes at most \(configuration.maximumBatchTokens) per request (--max-batch-tokens)",
                param: param, code: "too_many_tokens")
        }
        return tokenized
    }

    /// Encodes `texts` in the next batch and replies with `respond(results, tokens)` (written on
    /// the request queue); 503 with `Retry-After` when the queue is full.
    func encode(
        _ texts: [String], tokens: Int, inputType: ContextualEmbedding.InputType,
        reply: @escaping @Sendable (HTTPResponse) -> Void,
        respond: @escaping @Sendable ([ContextualEmbeddingResult]) throws -> HTTPResponse
    ) {
        let job = EncodingBatcher.Job(texts: texts, tokens: tokens, inputType: inputType) { outcome in
            self.requests.async {
                do {
                    var response = try respond(try outcome.get())
                    response.inputs = texts.count
                    reply(response)
                } catch let error as APIError {
                    reply(error.response)
                } catch {
                    reply(APIError(status: 500, message: "\(error)", code: "encoder_error").response)
                }
            }
        }
        guard batcher.submit(job) else {
            var refusal = APIError(
                status: 503,
                message:
                    "the encoder's queue is full (\(configuration.maximumQueue) requests waiting, --max-queue); retry shortly",
                code: "queue_full", headers: [(name: "Retry-After", value: "1")]
            ).response
            refusal.inputs = texts.count
            return reply(refusal)
        }
    }

    /// `GET /health`: `{"status": "ok", "model"}`.
    private func health() -> HTTPResponse {
        var json = JSONWriter()
        json.beginObject()
        json.field("status", "ok")
        json.field("model", embedding.modelIdentifier)
        json.endObject()
        return .json(json.text)
    }

    /// `GET /v1/models`: the embedding model (with its dimension, maximum sequence length and
    /// quantization) and the chat model, in OpenAI's list shape.
    private func models() -> HTTPResponse {
        var json = JSONWriter()
        json.beginObject()
        json.field("object", "list")
        json.key("data")
        json.beginArray()
        json.beginObject()
        json.field("id", embedding.modelIdentifier)
        json.field("object", "model")
        json.field("created", 0)
        json.field("owned_by", "contextual-embeddings")
        json.field("dimension", embedding.dimension)
        json.field("max_sequence_length", embedding.maximumSequenceLength)
        json.field("quantization", embedding.quantization.rawValue)
        json.endObject()
        json.beginObject()
        json.field("id", chatModel.identifier)
        json.field("object", "model")
        json.field("created", 0)
        json.field("owned_by", "contextual-embeddings")
        json.endObject()
        json.endArray()
        json.endObject()
        return .json(json.text)
    }
}
