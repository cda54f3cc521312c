import CommandLineOptions
import Embeddings
import Foundation
import PostgresStorage
import Retrieval

/// `--store <url>`: a PostgreSQL + pgvector database instead of an index file.
enum PostgresOption {
    /// The typed store error as the CLI reports it: cannot connect or no pgvector exit 69,
    /// permission denied 77, another model's store 65, anything else 1.
    static func cliError(_ error: PostgresStoreError) -> CLIError {
        switch error {
        case .cannotConnect, .vectorExtensionMissing: return .unavailable(error.description)
        case .permissionDenied: return .permission(error.description)
        case .fingerprintMismatch, .corruptStore, .noVectors: return .data(error.description)
        case .invalidTablePrefix: return .usage(error.description)
        case .queryFailed: return .failure(error.description)
        }
    }

    /// Runs `body`, turning store errors into CLI errors.
    static func mapping<R>(_ body: () throws -> R) throws -> R {
        do { return try body() } catch let error as PostgresStoreError { throw cliError(error) }
    }

    /// Connects to `--store` with `embedding` (nil: lexical only).
    static func open(_ parsed: ParsedArguments, embedding: ContextualEmbedding?) throws -> PostgresStore {
        let url = try parsed.value(SharedOptions.store)
        let prefix = try parsed.value(SharedOptions.tablePrefix)
        return try mapping { try PostgresStore(connection: url, embedding: embedding, tablePrefix: prefix) }
    }

    /// Options that only one of --out and --store take.
    static func checkIndexArguments(_ parsed: ParsedArguments) throws {
        let store = SharedOptions.store.name  // the option's spelling, for the messages
        if parsed.contains(SharedOptions.store) {
            if parsed.contains(SharedOptions.out) { throw CLIError.usage("\(SharedOptions.out.name) and \(store) exclude each other") }
            if parsed[IndexCommand.lateChunking] { throw CLIError.usage("\(IndexCommand.lateChunking.name) is for index files; it cannot go with \(store)") }
            if parsed.contains(IndexCommand.codes) { throw CLIError.usage("\(IndexCommand.codes.name) is for index files; pgvector has \(IndexCommand.hnsw.name)") }
            if parsed[IndexCommand.hnsw], parsed[IndexCommand.lexicalOnly] {
                throw CLIError.usage("\(IndexCommand.hnsw.name) needs embeddings; it cannot go with \(IndexCommand.lexicalOnly.name)")
            }
        } else {
            if parsed[IndexCommand.hnsw] { throw CLIError.usage("\(IndexCommand.hnsw.name) goes with \(store)") }
            if parsed.contains(SharedOptions.tablePrefix) { throw CLIError.usage("\(SharedOptions.tablePrefix.name) goes with \(store)") }
        }
    }

    /// The search function of `--index FILE` or `--store URL` (exactly one), for search and eval.
    static func searcher(_ parsed: ParsedArguments, mode: RetrievalMode) throws -> (String, RetrievalMode, Int) throws -> [RetrievalHit] {
        let indexOption = SharedOptions.index, storeOption = SharedOptions.store
        switch (parsed[indexOption], parsed[storeOption]) {
        case (nil, nil): throw CLIError.usage("missing \(indexOption.synopsis) (or \(storeOption.synopsis))")
        case (.some, .some): throw CLIError.usage("\(indexOption.name) and \(storeOption.name) exclude each other")
        case (.some, nil):
            if parsed.contains(SharedOptions.tablePrefix) || parsed.contains(SharedOptions.efSearch) {
                throw CLIError.usage("\(SharedOptions.tablePrefix.name) and \(SharedOptions.efSearch.name) go with \(storeOption.name)")
            }
            let store = try StoreOption.open(parsed, mode: mode)
            return { question, mode, k in
                do { return try blockingAwait { try await store.search(question, mode: mode, k: k) } } catch let error as RetrievalError {
                    throw CLIError.data(error.description)  // e.g. vectors of another model: bad input, 65
                }
            }
        case (nil, .some):
            let precision = try parsed.value(SharedOptions.precision)
            try precision.checkForStore()
            if parsed.contains(SharedOptions.rescore) { throw CLIError.usage("\(SharedOptions.rescore.name) is for index files") }
            if parsed.contains(SharedOptions.efSearch), precision != .hnsw {
                throw CLIError.usage("\(SharedOptions.efSearch.name) goes with \(SharedOptions.precision.name) hnsw")
            }
            let efSearch = try parsed.value(SharedOptions.efSearch)
            // Without --model, the model the store's fingerprint names, when the library knows it.
            var parsed = parsed
            if mode != .lexical, !parsed.contains(SharedOptions.model),
               let stored = try mapping({ try open(parsed, embedding: nil).fingerprint() })?.modelIdentifier,
               ModelCatalog.descriptor(for: stored) != nil {
                try parsed.set(SharedOptions.model, to: stored)
            }
            let embedding = mode == .lexical ? nil : try ModelOption.load(parsed)
            let store = try open(parsed, embedding: embedding)
            try mapping {
                try store.loadSettings()
                if mode != .lexical, try store.fingerprint() == nil {
                    throw PostgresStoreError.noVectors("the store holds no vectors (indexed with --lexical-only, or empty): use --mode lexical")
                }
            }
            store.vectorSearch = precision == .hnsw ? .hnsw(efSearch: efSearch) : .exact
            return { question, mode, k in try mapping { try store.search(question, mode: mode, k: k) } }
        }
    }
}
