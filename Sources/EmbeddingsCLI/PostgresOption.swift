import Embeddings
import Foundation
import PostgresStorage
import Retrieval

/// `--store <url>`: a PostgreSQL + pgvector database instead of an index file.
enum PostgresOption {
    /// The help rows shared by index, search and eval.
    static let help: [(String, String)] = [
        ("--store <url>", "A PostgreSQL database with pgvector instead of an index file: a libpq URI (postgresql://user@host/db) or key=value string; 'postgresql://' alone connects from PGHOST, PGDATABASE, PGUSER, ..."),
        ("--table-prefix <name>", "With --store: the tables' name prefix (default embeddings: embeddings_chunks, embeddings_terms, embeddings_meta)."),
    ]

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
        guard let url = parsed.values["store"] else { throw CLIError.usage("missing --store <url>") }
        let prefix = parsed.values["table-prefix"] ?? "embeddings"
        return try mapping { try PostgresStore(connection: url, embedding: embedding, tablePrefix: prefix) }
    }

    /// Options that only one of --out/--index and --store take.
    static func checkIndexArguments(_ parsed: ParsedArguments) throws {
        if parsed.values["store"] != nil {
            if parsed.values["out"] != nil { throw CLIError.usage("--out and --store exclude each other") }
            if parsed.flags.contains("late-chunking") { throw CLIError.usage("--late-chunking is for index files; it cannot go with --store") }
            if parsed.values["codes"] != nil { throw CLIError.usage("--codes is for index files; pgvector has --hnsw") }
            if parsed.flags.contains("hnsw"), parsed.flags.contains("lexical-only") { throw CLIError.usage("--hnsw needs embeddings; it cannot go with --lexical-only") }
        } else {
            if parsed.flags.contains("hnsw") { throw CLIError.usage("--hnsw goes with --store") }
            if parsed.values["table-prefix"] != nil { throw CLIError.usage("--table-prefix goes with --store") }
        }
    }

    /// The search function of `--index FILE` or `--store URL` (exactly one), for search and eval.
    static func searcher(_ parsed: ParsedArguments, mode: RetrievalMode) throws -> (String, RetrievalMode, Int) throws -> [RetrievalHit] {
        switch (parsed.values["index"], parsed.values["store"]) {
        case (nil, nil): throw CLIError.usage("missing --index <file> (or --store <url>)")
        case (.some, .some): throw CLIError.usage("--index and --store exclude each other")
        case (.some, nil):
            if parsed.values["table-prefix"] != nil || parsed.values["ef-search"] != nil {
                throw CLIError.usage("--table-prefix and --ef-search go with --store")
            }
            let store = try StoreOption.open(parsed, mode: mode)
            return { question, mode, k in
                do { return try blockingAwait { try await store.search(question, mode: mode, k: k) } } catch let error as RetrievalError {
                    throw CLIError.data(error.description)  // e.g. vectors of another model: bad input, 65
                }
            }
        case (nil, .some):
            let precision = parsed.values["precision"] ?? "exact"
            guard ["exact", "hnsw"].contains(precision) else {
                throw CLIError.usage("--precision with --store is exact or hnsw, got '\(precision)'")
            }
            if parsed.values["rescore"] != nil { throw CLIError.usage("--rescore is for index files") }
            if parsed.values["ef-search"] != nil, precision != "hnsw" { throw CLIError.usage("--ef-search goes with --precision hnsw") }
            let efSearch = try parsed.integer("ef-search", default: 40, range: 1...1000)
            // Without --model, the model the store's fingerprint names, when the library knows it.
            var parsed = parsed
            if mode != .lexical, parsed.values["model"] == nil,
               let stored = try mapping({ try open(parsed, embedding: nil).fingerprint() })?.modelIdentifier,
               ModelCatalog.descriptor(for: stored) != nil {
                parsed.values["model"] = stored
            }
            let embedding = mode == .lexical ? nil : try ModelOption.load(parsed)
            let store = try open(parsed, embedding: embedding)
            try mapping {
                try store.loadSettings()
                if mode != .lexical, try store.fingerprint() == nil {
                    throw PostgresStoreError.noVectors("the store holds no vectors (indexed with --lexical-only, or empty): use --mode lexical")
                }
            }
            store.vectorSearch = precision == "hnsw" ? .hnsw(efSearch: efSearch) : .exact
            return { question, mode, k in try mapping { try store.search(question, mode: mode, k: k) } }
        }
    }

    /// The --store rows of search and eval.
    static let searchHelp: [(String, String)] = help + [
        ("--ef-search <n>", "With --store --precision hnsw: HNSW candidates per query (default 40)."),
    ]
}

extension IndexCommand {
    /// `index DIR… --store URL`: one transaction; unchanged chunks keep their vectors.
    func runOnPostgres() throws {
        let embedding = parsed.flags.contains("lexical-only") ? nil : try ModelOption.load(parsed)
        let store = try PostgresOption.open(parsed, embedding: embedding)
        let pages = try readPages()
        let start = Date()
        let progressBox = ProgressBox(Progress("embedding", total: nil))
        let stats = try PostgresOption.mapping {
            try store.replace(with: pages) { done, total in progressBox.update(done, total) }
        }
        let seconds = Date().timeIntervalSince(start)
        if parsed.flags.contains("hnsw") {
            let indexStart = Date()
            try PostgresOption.mapping { try store.buildHNSWIndex() }
            Console.note(String(format: "built the HNSW index in %.2f s", Date().timeIntervalSince(indexStart)))
        }
        let rate = seconds > 0 ? Double(stats.embedded) / seconds : 0
        Console.note(String(format: "indexed %d pages, %d chunks: %d embedded, %d reused, %d removed in %.2f s (%.0f chunks/s)",
                            pages.count, stats.chunks, stats.embedded, stats.reused, stats.removed, seconds, rate))
        print("stored in \(store.tablePrefix)_chunks")
    }
}
