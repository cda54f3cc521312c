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

        /// The option that names it.
        var optionName: String {
            switch self {
            case .file: return SharedOptions.index.name
            case .database: return SharedOptions.store.name
            }
        }

        /// The vector searches the store there has (`ChunkStore.vectorSearchNames`).
        var vectorSearchNames: [String] {
            switch self {
            case .file: return EmbeddingStore.vectorSearchNames
            case .database: return PostgresStore.vectorSearchNames
            }
        }
    }

    /// The one location `parsed` names: `fileOption` (`--index` or `--out`) or `--store`, not both
    /// and not neither; options of the other kind are refused.
    static func location(_ parsed: ParsedArguments, fileOption: Option<String>) throws -> Location {
        let storeOption = SharedOptions.store
        switch (parsed[fileOption], parsed[storeOption]) {
        case (nil, nil): throw CLIError.usage("missing \(fileOption.synopsis) (or \(storeOption.synopsis))")
        case (.some, .some): throw CLIError.usage("\(fileOption.name) and \(storeOption.name) exclude each other")
        case (let path?, nil):
            if parsed.contains(SharedOptions.tablePrefix) {
                throw CLIError.usage("\(SharedOptions.tablePrefix.name) goes with \(storeOption.name)")
            }
            return .file(URL(fileURLWithPath: path))
        case (nil, let url?):
            return .database(url: url, tablePrefix: try parsed.value(SharedOptions.tablePrefix))
        }
    }

    /// Runs `body`, turning either store's errors into CLI errors: the database's by kind (cannot
    /// connect 69, permission 77, bad data 65, …), retrieval errors (no vectors, a malformed
    /// store) and the index's (another model's vectors, a bad file) as bad input, 65, except a
    /// failed file operation, 1.
    static func mapping<R>(_ body: () throws -> R) throws -> R {
        do { return try body() } catch { throw converted(error) }
    }

    /// A store's error as `mapping` reports it; any other error as it is.
    static func converted(_ error: any Error) -> any Error {
        switch error {
        case let error as PostgresStoreError: return cliError(error)
        case let error as RetrievalError: return CLIError.data(error.description)
        case let error as VectorIndexError: return cliError(error)
        default: return error
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

    /// The store `search`, `eval` and `serve` read, opened once with the model its vectors were
    /// made with (`--model`, else the one the store names) unless `mode` is lexical, and set to
    /// search as `--precision` says. Opening is the one step where the stores differ.
    static func openForSearch(_ parsed: ParsedArguments, mode: RetrievalMode) throws -> any ChunkStore {
        let location = try location(parsed, fileOption: SharedOptions.index)
        let search = try vectorSearch(parsed, at: location)
        // No model for lexical search, nor for a store without vectors (refused below).
        let model: (IndexFingerprint?) throws -> ContextualEmbedding? = { stored in
            mode == .lexical || stored == nil ? nil : try Self.model(parsed, stored: stored)
        }
        let store: any ChunkStore
        switch location {
        case .file(let url):
            try InputFile.check(url, what: "index file")
            // Searching through codes reads the vectors only to rescore: map them without a full read.
            let verification: IndexFile.Verification = search == .exact ? .full : .skippingVectors
            // A bad file is bad input (65); the model's errors are already the CLI's.
            do { store = try EmbeddingStore(contentsOf: url, verification: verification, embedding: model) } catch let
                error as CLIError
            {
                throw error
            } catch {
                throw CLIError.data("\(error)")
            }
        case .database(let url, let tablePrefix):
            store = try mapping { try PostgresStore(connection: url, tablePrefix: tablePrefix, embedding: model) }
        }
        if mode != .lexical {
            try mapping {
                if try store.statistics().fingerprint == nil {
                    throw RetrievalError.noVectors(
                        "the store holds no vectors (indexed with --lexical-only, or empty): use --mode lexical")
                }
                try store.setVectorSearch(search)
            }
        }
        return store
    }

    /// `--precision`, `--rescore` and `--ef-search` as one `VectorSearch`, checked against what
    /// the store at `location` has, before any work (usage errors, 64).
    static func vectorSearch(_ parsed: ParsedArguments, at location: Location) throws -> VectorSearch {
        let precision = SharedOptions.precision
        let rescore = SharedOptions.rescore
        let efSearch = SharedOptions.efSearch
        let name = try parsed.value(precision)
        guard location.vectorSearchNames.contains(name) else {
            throw CLIError.usage(
                "\(precision.name) with \(location.optionName) is \(HelpFormatter.alternatives(location.vectorSearchNames)), got '\(name)'"
            )
        }
        let search = VectorSearch(name: name, rescore: parsed[rescore], efSearch: try parsed.value(efSearch)) ?? .exact
        if parsed.contains(rescore), search.codes == nil || search == .exact {
            throw CLIError.usage("\(rescore.name) goes with \(precision.name) int8 or binary")
        }
        if parsed.contains(efSearch), search.codes != nil {
            throw CLIError.usage("\(efSearch.name) goes with \(precision.name) hnsw")
        }
        return search
    }

    /// `--model`, else the model the store's vectors name when the library knows it, else the
    /// default; multiplying as `--quantize` says, else as the store's vectors were made.
    private static func model(_ parsed: ParsedArguments, stored fingerprint: IndexFingerprint?) throws
        -> ContextualEmbedding
    {
        var parsed = parsed
        if !parsed.contains(SharedOptions.model), let identifier = fingerprint?.modelIdentifier,
            ModelCatalog.descriptor(for: identifier) != nil
        {
            try parsed.set(SharedOptions.model, to: identifier)
        }
        if !parsed.contains(SharedOptions.quantize), let quantization = fingerprint?.quantization,
            Quantization(rawValue: quantization) != nil
        {
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
    static func openForIndexing(_ parsed: ParsedArguments, embedding load: () throws -> ContextualEmbedding?) throws
        -> Indexing
    {
        let location = try location(parsed, fileOption: SharedOptions.out)
        switch location {
        case .file(let url):
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
        case .database(let url, let tablePrefix):
            let embedding = try load()
            let store = try mapping {
                try PostgresStore(
                    connection: url, embedding: embedding, tablePrefix: tablePrefix,
                    lateChunking: parsed[IndexCommand.lateChunking])
            }
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
        if parsed.contains(IndexCommand.codes) {
            throw CLIError.usage(
                "\(IndexCommand.codes.name) is for index files; pgvector has \(IndexCommand.hnsw.name)")
        }
        if parsed[IndexCommand.hnsw], parsed[IndexCommand.lexicalOnly] {
            throw CLIError.usage(
                "\(IndexCommand.hnsw.name) needs embeddings; it cannot go with \(IndexCommand.lexicalOnly.name)")
        }
    }

    static func mode(_ parsed: ParsedArguments) throws -> RetrievalMode {
        try parsed.value(SharedOptions.mode)
    }
}
