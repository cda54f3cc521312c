import Embeddings
import Foundation
import Hashing
import VectorIndex

/// What one indexing run (`ChunkStore.replace(with:progress:)`) did.
public struct IndexingStatistics: Sendable, Equatable {
    /// Chunks in the store after the run.
    public var chunks = 0
    /// Chunks whose vectors were computed by this run.
    public var embedded = 0
    /// Chunks whose vectors were kept from before (same id, text and model).
    public var reused = 0
    /// Chunks that were in the store and are gone (their pages changed or disappeared).
    public var removed = 0
    /// Late chunking only: chunks without a usable span in their page (or whose span held no
    /// token), embedded alone instead.
    public var lateChunkingFallbacks = 0

    /// Statistics of a run that did nothing yet.
    public init() {}
}

/// What a store holds now.
public struct StoreStatistics: Sendable, Equatable {
    /// The number of chunks.
    public var chunks: Int
    /// The fingerprint of the stored vectors; nil for a lexical-only or empty store.
    public var fingerprint: IndexFingerprint?

    /// Statistics from their parts.
    public init(chunks: Int, fingerprint: IndexFingerprint?) {
        self.chunks = chunks
        self.fingerprint = fingerprint
    }
}

/// The content hash that decides whether a chunk's stored vector can be reused: the first 24
/// hex digits of the SHA-256 of its text (shared by every store, so their hashes agree).
package enum ContentHash {
    package static func of(_ text: String) -> String {
        String(SHA256.hex(of: Array(text.utf8)).prefix(24))
    }
}

/// A progress report of an indexing run: chunks embedded so far, and how many will be.
public typealias IndexingProgress = @Sendable (_ done: Int, _ total: Int) -> Void

/// A searchable corpus of chunks with their vectors and BM25 statistics.
///
/// What both stores share is declared here: the model, the settings, how semantic search reads
/// the vectors, one indexing run (`replace`, written once as `IndexingPipeline`: each store only
/// reads what it holds and writes what the run makes), search and statistics.
///
/// Two stores implement it: `EmbeddingStore` (one index file) and `PostgresStore` (PostgreSQL
/// with pgvector, in the `PostgresStorage` module). Both have one calling convention: every
/// method blocks until its work is done and may be called from any thread at once. Call them
/// from a thread that may block (a Dispatch queue or a thread of your own), not from a task on
/// Swift concurrency's cooperative pool: encoding a corpus takes seconds to minutes.
///
/// ```swift
/// let store: any ChunkStore = EmbeddingStore(embedding: model)
/// let (statistics, skipped) = try store.index(folder: docs)
/// let hits = try store.search("How do closures capture values?", mode: .hybrid, k: 4)
/// ```
public protocol ChunkStore: Sendable {
    /// The model that embeds chunks and questions; nil for a lexical-only store.
    var embedding: ContextualEmbedding? { get }

    /// Hybrid-retrieval settings, saved with the store by `replace`. Setting them is an update:
    /// it waits for an indexing run in progress (both stores).
    var settings: RetrievalSettings { get nonmutating set }

    /// The vector searches this kind of store has, by `VectorSearch.name`: exact, int8 and binary
    /// for an index file; exact and hnsw for PostgreSQL.
    static var vectorSearchNames: [String] { get }

    /// How semantic search reads the vectors (`.exact` until set).
    var vectorSearch: VectorSearch { get }

    /// Makes semantic search read the vectors as `search` says, from the next search on.
    /// - Throws: `RetrievalError.unsupportedSearch` for a method this kind of store does not have
    ///   (`vectorSearchNames`); `VectorIndexError.invalidCodes` for a rescore factor below 1.
    func setVectorSearch(_ search: VectorSearch) throws

    /// Makes the store hold exactly `pages`, embedding only the chunks that changed (same id,
    /// same content hash and same model: the stored vector is kept). `progress` is called from
    /// the indexing thread as chunks are embedded; it may search the store, but must not update
    /// it (`replace`, or a store's own updates such as `EmbeddingStore.load`): updates wait for
    /// the run, so that would wait forever. Searches on the same store keep answering, from the
    /// previous contents, while the run embeds.
    /// - Throws: `VectorIndexError.fingerprintMismatch` when the store holds vectors of another
    ///   model, before anything changes (every store throws this one type for it); the store's
    ///   own errors (`VectorIndexError` for a file, `PostgresStoreError` for the database);
    ///   `EmbeddingsError` from the encoder. After an error the store holds what it held before.
    func replace(with pages: [Page], progress: IndexingProgress?) throws -> IndexingStatistics

    /// Up to `k` chunks for `question`, best first (see `HybridRetriever`). Semantic and hybrid
    /// modes need the model the vectors were made with.
    /// - Throws: `RetrievalError.noVectors` (semantic or hybrid) when the store has no vectors or
    ///   no model; `VectorIndexError.fingerprintMismatch` when its vectors were made by another
    ///   model than the store's; the store's own errors; `EmbeddingsError` from the encoder.
    func search(_ question: String, mode: RetrievalMode, k: Int) throws -> [RetrievalHit]

    /// How many chunks the store holds, and what made its vectors.
    func statistics() throws -> StoreStatistics
}

extension ChunkStore {
    /// `replace(with:progress:)` without progress reports.
    public func replace(with pages: [Page]) throws -> IndexingStatistics {
        try replace(with: pages, progress: nil)
    }

    /// Indexes every `*.md` below `folder` (`MarkdownChunker.pages(in:)`), replacing what the
    /// store held. Unreadable, empty or non-UTF-8 files are returned as problems and skipped.
    /// - Throws: `RetrievalError.unreadable` when `folder` is not a readable folder.
    public func index(folder: URL, progress: IndexingProgress? = nil) throws -> (IndexingStatistics, [RetrievalError]) {
        let (pages, problems) = try MarkdownChunker.pages(in: folder)
        return (try replace(with: pages, progress: progress), problems)
    }

    /// A conversation's follow-up: when `question` alone retrieves nothing ("and in Swift 6?"),
    /// it is retried together with the previous question.
    public func search(_ question: String, previousQuestion: String?, mode: RetrievalMode = .hybrid, k: Int = 4) throws
        -> [RetrievalHit]
    {
        try followUpSearch(question, previousQuestion: previousQuestion, mode: mode, k: k).hits
    }

    /// `search(_:previousQuestion:mode:k:)` with the text that was searched (`question`, or the
    /// previous question, a space and `question` on a retry), counting only hits scoring at least
    /// `minimumScore`: a question whose hits are all below it retrieved nothing.
    public func followUpSearch(
        _ question: String, previousQuestion: String?, mode: RetrievalMode = .hybrid, k: Int = 4,
        minimumScore: Double = 0
    ) throws -> (hits: [RetrievalHit], searched: String) {
        let hits = try search(question, mode: mode, k: k).filter { $0.score >= minimumScore }
        guard hits.isEmpty, let previousQuestion, !previousQuestion.isEmpty else { return (hits, question) }
        let followUp = previousQuestion + " " + question
        return (try search(followUp, mode: mode, k: k).filter { $0.score >= minimumScore }, followUp)
    }

    /// Recall at each of `ks` on `set` (see `EvaluationSet.recall`), searching with `mode` for
    /// the largest k.
    public func evaluate(_ set: EvaluationSet, ks: [Int], mode: RetrievalMode = .hybrid) throws -> (
        recall: [Int: Double], failures: [EvaluationSet.Case]
    ) {
        let k = ks.max() ?? 0
        return try set.recall(ks: ks) { question in try search(question, mode: mode, k: k).map(\.chunk.id) }
    }
}
