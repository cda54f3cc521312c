import CommandLineOptions
import Embeddings
import Foundation
import PostgresStorage
import Retrieval
import VectorIndex

/// `--index FILE` (`--out FILE` for `index`) or `--store URL`: where the corpus is kept. The two
/// differ only in how the store is opened, here; `index`, `search` and `eval` then talk to a
/// `ChunkStore`.
enum StoreOption {
    /// Where the corpus is.
    enum Location {
        case file(URL)
        case database(url: String, tablePrefix: String)
    }

    /// The one location `parsed` names: `fileOption` (`--index` or `--out`) or `--store`, not both
    /// and not neither; options of the other kind are refused.
    static func location(_ parsed: ParsedArguments, fileOption: Option<String>) throws -> Location {
        let storeOption = SharedOptions.store
        switch (parsed[fileOption], parsed[storeOption]) {
        case (nil, nil): throw CLIError.usage("missing \(fileOption.synopsis) (or \(storeOption.synopsis))")
        case (.some, .some): throw CLIError.usage("\(fileOption.name) and \(storeOption.name) exclude each other")
        case let (path?, nil):
            if parsed.contains(SharedOptions.tablePrefix) {
                throw CLIError.usage("\(SharedOptions.tablePrefix.name) goes with \(storeOption.name)")
            }
            return .file(URL(fileURLWithPath: path))
        case let (nil, url?):
            return .database(url: url, tablePrefix: try parsed.value(SharedOptions.tablePrefix))
        }
    }

    /// Runs `body`, turning either store's errors into CLI errors: the database's by kind (cannot
    /// connect 69, permission 77, bad data 65, …), retrieval errors (no vectors, a malformed
    /// store) and the index's (another model's vectors, a bad file) as bad input, 65, except a
    /// failed file operation, 1.
    static func mapping<R>(_ body: () throws -> R) throws -> R {
        do { return try body() } catch let error as PostgresStoreError {
            throw cliError(error)
        } catch let error as RetrievalError {
            throw CLIError.data(error.description)
        } catch let error as VectorIndexError {
            throw cliError(error)
        }
    }

    /// The typed database error as the CLI reports it.
    static func cliError(_ error: PostgresStoreError) -> CLIError {
        switch error {
        case .cannotConnect, .vectorExtensionMissing: return .unavailable(error.description)
        case .permissionDenied: return .permission(error.description)
        case .corruptStore: return .data(error.description)
        case .invalidTablePrefix: return .usage(error.description)
        case .queryFailed: return .failure(error.description)
        }
    }

    /// The index's error as the CLI reports it: a failed file operation is a failure (1), every
    /// other case (another model's vectors, a bad file, a bad vector) bad input (65).
    static func cliError(_ error: VectorIndexError) -> CLIError {
        if case .io = error { return .failure(error.description) }
        return .data(error.description)
    }

    // MARK: Searching

    /// The store `search` and `eval` read, opened with the model its vectors were made with
    /// (`--model`, else the one the store names) unless `mode` is lexical.
    static func openForSearch(_ parsed: ParsedArguments, mode: RetrievalMode) throws -> any ChunkStore {
        let location = try location(parsed, fileOption: SharedOptions.index)
        let precision = try parsed.value(SharedOptions.precision)
        switch location {
        case let .file(url):
            if parsed.contains(SharedOptions.efSearch) {
                throw CLIError.usage("\(SharedOptions.efSearch.name) goes with \(SharedOptions.store.name)")
            }
            let codes = try precision.ofIndexFile()
            let rescore = parsed[SharedOptions.rescore]
            if rescore != nil, codes == .exact {
                throw CLIError.usage("\(SharedOptions.rescore.name) goes with \(SharedOptions.precision.name) int8 or binary")
            }
            try InputFile.check(url, what: "index file")
            let embedding = mode == .lexical ? nil : try model(parsed, stored: { try? IndexFile.fingerprint(of: url) })
            let store = EmbeddingStore(embedding: embedding)
            // Searching through codes reads the vectors only to rescore: map them without a full read.
            try load(store, from: url, verification: codes == .exact ? .full : .skippingVectors)
            if mode != .lexical { try mapping { try store.setSearchPrecision(codes, rescore: rescore) } }
            return store
        case let .database(url, tablePrefix):
            try precision.checkForStore()
            if parsed.contains(SharedOptions.rescore) { throw CLIError.usage("\(SharedOptions.rescore.name) is for index files") }
            if parsed.contains(SharedOptions.efSearch), precision != .hnsw {
                throw CLIError.usage("\(SharedOptions.efSearch.name) goes with \(SharedOptions.precision.name) hnsw")
            }
            let efSearch = try parsed.value(SharedOptions.efSearch)
            let embedding = mode == .lexical ? nil : try model(parsed, stored: {
                try mapping { try PostgresStore(connection: url, embedding: nil, tablePrefix: tablePrefix).fingerprint() }
            })
            let store = try mapping { try PostgresStore(connection: url, embedding: embedding, tablePrefix: tablePrefix) }
            try mapping {
                try store.loadSettings()
                if mode != .lexical, try store.fingerprint() == nil {
                    throw RetrievalError.noVectors("the store holds no vectors (indexed with --lexical-only, or empty): use --mode lexical")
                }
            }
            store.vectorSearch = precision == .hnsw ? .hnsw(efSearch: efSearch) : .exact
            return store
        }
    }

    /// `--model`, else the model the store's vectors name when the library knows it, else the
    /// default; multiplying as `--quantize` says, else as the store's vectors were made.
    private static func model(_ parsed: ParsedArguments, stored: () throws -> IndexFingerprint?) throws -> ContextualEmbedding {
        var parsed = parsed
        let fingerprint = parsed.contains(SharedOptions.model) && parsed.contains(SharedOptions.quantize) ? nil : try stored()
        if !parsed.contains(SharedOptions.model), let identifier = fingerprint?.modelIdentifier, ModelCatalog.descriptor(for: identifier) != nil {
            try parsed.set(SharedOptions.model, to: identifier)
        }
        if !parsed.contains(SharedOptions.quantize), let quantization = fingerprint?.quantization, Quantization(rawValue: quantization) != nil {
            try parsed.set(SharedOptions.quantize, to: quantization)
        }
        return try ModelOption.load(parsed)
    }

    /// Loads an index file into `store`; a bad file is bad input (65).
    static func load(_ store: EmbeddingStore, from url: URL, verification: IndexFile.Verification = .full) throws {
        do { try store.load(from: url, verification: verification) } catch {
            throw CLIError.data("\(error)")
        }
    }

    // MARK: Indexing

    /// The store an `index` run replaces, and what ends the run once it has (the file store saves
    /// the file; the database store committed already and may build its HNSW index).
    struct Indexing {
        let store: any ChunkStore
        /// Makes the run's result last and says where it went.
        let finish: () throws -> String
    }

    /// Opens the store `index` writes: `--out FILE` (an existing file's vectors are reused) or
    /// `--store URL`. `embedding` loads the model (nil: lexical-only), once the location is known
    /// to be usable.
    static func openForIndexing(_ parsed: ParsedArguments, embedding load: () throws -> ContextualEmbedding?) throws -> Indexing {
        let location = try location(parsed, fileOption: SharedOptions.out)
        switch location {
        case let .file(url):
            // Fail now, before the model loads and minutes of embedding, when the index cannot be
            // written there.
            do { try AtomicFile.checkWritable(url) } catch let error as VectorIndexError {
                throw CLIError.failure(error.description)
            }
            let embedding = try load()
            let store = EmbeddingStore(embedding: embedding, lateChunking: parsed[IndexCommand.lateChunking])
            if FileManager.default.fileExists(atPath: url.path) {
                do {
                    try InputFile.check(url, what: "index file")
                    try store.load(from: url)
                } catch {
                    Console.note("note: not reusing \(url.path) (\(error)); indexing from scratch")
                }
            }
            if let codes = parsed[IndexCommand.codes] { store.keepCodes(codes) }
            return Indexing(store: store) {
                do { try store.save(to: url) } catch let error as VectorIndexError {
                    throw CLIError.failure(error.description)
                }
                return "wrote \(url.path)"
            }
        case let .database(url, tablePrefix):
            let embedding = try load()
            let store = try mapping { try PostgresStore(connection: url, embedding: embedding, tablePrefix: tablePrefix) }
            let hnsw = parsed[IndexCommand.hnsw]
            return Indexing(store: store) {
                if hnsw {
                    let start = Date()
                    try mapping { try store.buildHNSWIndex() }
                    Console.note(String(format: "built the HNSW index in %.2f s", Date().timeIntervalSince(start)))
                }
                return "stored in \(store.tablePrefix)_chunks"
            }
        }
    }

    /// Options that only an index file or only the database takes, refused before any work.
    static func checkIndexArguments(_ parsed: ParsedArguments) throws {
        let store = SharedOptions.store.name
        guard case .database = try location(parsed, fileOption: SharedOptions.out) else {
            if parsed[IndexCommand.hnsw] { throw CLIError.usage("\(IndexCommand.hnsw.name) goes with \(store)") }
            return
        }
        if parsed[IndexCommand.lateChunking] { throw CLIError.usage("\(IndexCommand.lateChunking.name) is for index files; it cannot go with \(store)") }
        if parsed.contains(IndexCommand.codes) { throw CLIError.usage("\(IndexCommand.codes.name) is for index files; pgvector has \(IndexCommand.hnsw.name)") }
        if parsed[IndexCommand.hnsw], parsed[IndexCommand.lexicalOnly] {
            throw CLIError.usage("\(IndexCommand.hnsw.name) needs embeddings; it cannot go with \(IndexCommand.lexicalOnly.name)")
        }
    }

    static func mode(_ parsed: ParsedArguments) throws -> RetrievalMode {
        try parsed.value(SharedOptions.mode)
    }
}
