import CommandLineOptions
import Embeddings
import Foundation
import LanguageModels
import LlamaDecoder
import Retrieval
import Synchronization

/// `embeddings serve`: the model (and optionally an index) over HTTP, in the shapes other
/// languages already speak: OpenAI's `/v1/embeddings`, text-embeddings-inference's `/embed`,
/// token vectors with their ranges, `/tokenize`, `/search`, `/health`, `/v1/models`, `/metrics`,
/// and OpenAI's `/v1/chat/completions` on a language model (see Docs/Server.md).
struct ServeCommand: Command {
    static let name = "serve"
    static let abstract =
        "Serve the model over HTTP: OpenAI's /v1/embeddings and /v1/chat/completions, TEI's /embed, token vectors with their ranges, /search."

    static let host = Option<String>(
        "--host", valueName: "address",
        help:
            "The numeric IPv4 or IPv6 address to listen on, or localhost. Anything but loopback exposes the model: put a reverse proxy and --api-key-file in front.",
        default: "127.0.0.1")
    static let port = Option<Int>(
        "--port", valueName: "n", help: "The TCP port; 0 picks a free one. The ready line on standard error names it.",
        default: 8080, range: 0...65_535)
    static let apiKeyFile = Option<String>(
        "--api-key-file", valueName: "file",
        help:
            "A file holding the key every request but /health must send as 'Authorization: Bearer <key>' (white space around it is ignored)."
    )
    static let maxBatchTokens = Option<Int>(
        "--max-batch-tokens", valueName: "n",
        help:
            "Tokens encoded together in one batch. Requests arriving together share a batch; one request may carry at most this many.",
        default: 16_384, range: 1...10_000_000)
    static let maxQueue = Option<Int>(
        "--max-queue", valueName: "n",
        help:
            "Requests waiting for the encoder, and chat completions waiting to generate; more are refused with 503 and Retry-After.",
        default: 256,
        range: 1...1_000_000)
    static let maxBody = Option<Int>(
        "--max-body", valueName: "n",
        help: "The largest request body in bytes; a larger one gets 413 before it is read.", default: 2 << 20,
        range: 1...(1 << 30))
    static let timeout = Option<Int>(
        "--timeout", valueName: "n",
        help:
            "Seconds a connection may stay silent (mid-request or idle), and a new connection may take to send its first request's headers, before it is closed.",
        default: 30, range: 1...3_600)
    static let maxConnections = Option<Int>(
        "--max-connections", valueName: "n", help: "Connections open at once; further ones are closed as they arrive.",
        default: 256, range: 1...10_000)

    static let chatModel = Option<String>(
        "--chat-model", valueName: "id|file",
        help:
            "The language model /v1/chat/completions answers with: a GGUF file, or a known language model's identifier: \(DecoderCatalog.known.map(\.identifier).joined(separator: ", ")). It loads on the first chat request; a known model must be installed first ('embeddings assets install --model ID').",
        defaultDescription: DecoderCatalog.defaultModel.identifier.split(separator: "/").last.map(String.init))
    static let chatConcurrency = Option<Int>(
        "--chat-concurrency", valueName: "n",
        help:
            "Chat completions generated at once (each uses every core); others wait, up to --max-queue.",
        default: 1, range: 1...64)
    static let chatCaches = Option<Int>(
        "--chat-caches", valueName: "n",
        help:
            "Conversations whose decoder caches are kept between chat requests, so that a request continuing one runs only its new tokens; each holds memory for its tokens; 0 keeps none.",
        default: 4, range: 0...256)

    static var options: [any OptionDeclaration] {
        [
            SharedOptions.model,
            SharedOptions.quantize.with(defaultDescription: "float32; with --index or --store, the index's"),
            SharedOptions.index, SharedOptions.store, SharedOptions.tablePrefix, SharedOptions.precision,
            SharedOptions.rescore,
            SharedOptions.efSearch, host, port, apiKeyFile, maxBatchTokens, maxQueue, maxBody, timeout, maxConnections,
            chatModel, LanguageModelOption.chatTemplate, chatConcurrency, chatCaches,
            SharedOptions.inputType.with(
                help:
                    "The input type of requests that send no \"input_type\". e5 reads \"query: \" or \"passage: \" in front of the text; MiniLM nothing."
            ),
            SharedOptions.quiet.with(
                help: "No request log or notes on standard error (the ready line, warnings and errors still print)."),
        ]
    }

    /// How long requests still being received get after SIGTERM; those being encoded always finish.
    static let drainSeconds = 5.0

    let parsed: ParsedArguments
    let address: String
    let hasStore: Bool

    init(parsed: ParsedArguments) throws {
        self.parsed = parsed
        guard parsed.positionals.isEmpty else { throw CLIError.usage("unexpected argument '\(parsed.positionals[0])'") }
        let host = try parsed.value(Self.host)
        address = host == "localhost" ? "127.0.0.1" : host
        var v6 = in6_addr()
        guard inet_pton(AF_INET, address, &v6) == 1 || inet_pton(AF_INET6, address, &v6) == 1 else {
            throw CLIError.usage("\(Self.host.name) must be a numeric IPv4 or IPv6 address or localhost, got '\(host)'")
        }
        hasStore = parsed.contains(SharedOptions.index) || parsed.contains(SharedOptions.store)
        if hasStore {
            _ = try StoreOption.location(parsed, fileOption: SharedOptions.index)
        } else {
            // The store's own options, given without a store.
            let storeOptions = [
                (SharedOptions.tablePrefix.name, parsed.contains(SharedOptions.tablePrefix)),
                (SharedOptions.precision.name, parsed.contains(SharedOptions.precision)),
                (SharedOptions.rescore.name, parsed.contains(SharedOptions.rescore)),
                (SharedOptions.efSearch.name, parsed.contains(SharedOptions.efSearch)),
            ]
            if let given = storeOptions.first(where: { $0.1 }) {
                throw CLIError.usage("\(given.0) goes with \(SharedOptions.index.name) or \(SharedOptions.store.name)")
            }
        }
        _ = try parsed.value(Self.port)
        _ = try parsed.value(Self.chatConcurrency)
        _ = try parsed.value(Self.chatCaches)
        _ = try ModelOption.inputType(parsed)
        _ = try Self.languageModel(parsed)
    }

    /// The chat model `--chat-model` names, not loaded (`LanguageModelOption.system`).
    static func languageModel(_ parsed: ParsedArguments) throws -> SystemLanguageModel {
        try LanguageModelOption.system(
            parsed[chatModel], option: chatModel.name, chatTemplate: LanguageModelOption.template(parsed))
    }

    func run() throws {
        Console.configure(parsed)
        // The key first: a bad file should not wait for the model to load.
        let apiKey = try parsed[Self.apiKeyFile].map(Self.readKey)
        let store: (any ChunkStore)? = try hasStore ? StoreOption.openForSearch(parsed, mode: .hybrid) : nil
        let embedding = try store?.embedding ?? ModelOption.load(parsed)
        let configuration = EmbeddingServer.Configuration(
            maximumBody: try parsed.value(Self.maxBody), maximumBatchTokens: try parsed.value(Self.maxBatchTokens),
            maximumQueue: try parsed.value(Self.maxQueue), apiKey: apiKey, inputType: try ModelOption.inputType(parsed),
            precision: try parsed.value(SharedOptions.precision),
            chatConcurrency: try parsed.value(Self.chatConcurrency), chatCaches: try parsed.value(Self.chatCaches))
        let chatModel = try Self.languageModel(parsed)
        let server = EmbeddingServer(
            embedding: embedding, store: store, chatModel: chatModel, configuration: configuration)
        let daemon = HTTPDaemon(
            handler: server,
            limits: HTTPDaemon.Limits(
                maximumBody: configuration.maximumBody, connections: try parsed.value(Self.maxConnections),
                timeoutSeconds: try parsed.value(Self.timeout)))
        let signals = try ShutdownSignals()
        let port: Int
        do { port = try daemon.start(host: address, port: try parsed.value(Self.port)) } catch let error
            as HTTPDaemon.StartError
        {
            throw CLIError.unavailable(error.description)
        }
        let shown = address.contains(":") ? "[\(address)]" : address
        // The one line a supervisor (or a test) waits for, even under --quiet.
        Console.write(
            "listening on http://\(shown):\(port) (\(embedding.modelIdentifier), \(embedding.dimension) dimensions, \(embedding.quantization.rawValue) encoder\(store == nil ? "" : ", with /search"); chat: \(chatModel.identifier))\n"
        )
        let received = signals.wait()
        Console.note("\(received == SIGINT ? "SIGINT" : "SIGTERM"): finishing the requests in progress")
        daemon.stop(grace: Self.drainSeconds)
        Console.note("stopped")
    }

    /// The key in `path`, checked as the CLI checks its input files.
    static func readKey(_ path: String) throws -> [UInt8] {
        let url = URL(fileURLWithPath: path)
        try InputFile.check(url, what: "API key file")
        guard let data = FileManager.default.contents(atPath: path) else {
            throw CLIError.noInput("API key file '\(path)' cannot be read")
        }
        let key = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard !key.isEmpty else { throw CLIError.data("API key file '\(path)' is empty") }
        return Array(key.utf8)
    }
}

/// SIGTERM and SIGINT, turned into a byte on a pipe that `wait()` reads: the handler only writes
/// (async-signal-safe), and the command's thread blocks on the read.
final class ShutdownSignals: Sendable {
    private static let writeEnd = Atomic<Int32>(-1)
    private let readEnd: Int32

    init() throws {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else {
            throw CLIError.failure("cannot create a pipe for signals: \(String(cString: strerror(errno)))")
        }
        readEnd = ends[0]
        Self.writeEnd.store(ends[1], ordering: .relaxed)
        for number in [SIGTERM, SIGINT] {
            signal(number) { received in
                var byte = UInt8(truncatingIfNeeded: received)
                _ = write(ShutdownSignals.writeEnd.load(ordering: .relaxed), &byte, 1)
            }
        }
    }

    /// Blocks until SIGTERM or SIGINT arrives; returns which.
    func wait() -> Int32 {
        var byte: UInt8 = 0
        while read(readEnd, &byte, 1) < 0, errno == EINTR {}
        return Int32(byte)
    }
}
