import Embeddings
import Foundation
import LinearAlgebra
import Synchronization
import VectorIndex

/// Chunks, their vectors and BM25 statistics, searchable, persisted in one index file.
///
/// Vectors are cached by (chunk id, content hash, model fingerprint): re-indexing an unchanged
/// corpus embeds nothing, and an edited chunk re-embeds only itself (with late chunking, its
/// page). The store is a `ChunkStore`: every method blocks the calling thread until its work is
/// done, and the store may be used from many threads at once. The contents sit behind a `Mutex`
/// that is held only to read or swap them, never while encoding: searches keep answering from
/// the previous contents while `replace` embeds, and updates (`replace`, `load`, codes) run one
/// at a time.
///
/// ```swift
/// let store = EmbeddingStore(embedding: model)
/// let (statistics, skipped) = try store.index(folder: docs)
/// let hits = try store.search("How do closures capture values?", mode: .hybrid, k: 4)
/// try store.save(to: url)
/// ```
public final class EmbeddingStore: ChunkStore {
    /// What is stored in the index file's metadata next to the vectors.
    struct Metadata: Codable {
        var format = 1
        var chunks: [Chunk]
        var contentHashes: [String]
        var bm25: BM25
        var lateChunking: Bool
        var settings: RetrievalSettings
    }

    /// Everything the store holds; swapped whole under `state`'s lock.
    private struct Contents: Sendable {
        var lateChunking: Bool
        var settings = RetrievalSettings()
        var chunks: [Chunk] = []
        var contentHashes: [String] = []
        var bm25 = BM25(documents: [])
        var index: FlatIndex?
        var storedFingerprint: IndexFingerprint?
        var keptCodes: Set<SearchPrecision> = []
        var vectorSearch = VectorSearch.exact
        var precomputedVectors: [String: [Float]] = [:]
    }

    /// The model that embeds chunks and questions; nil for a lexical-only store.
    public let embedding: ContextualEmbedding?
    /// How pages are cut into chunks.
    public let chunker: MarkdownChunker
    /// How text becomes BM25 terms.
    public let analyzer: Analyzer
    private let state: Mutex<Contents>
    /// Held for the whole of an update, so that updates never interleave; searches do not take it.
    private let updating = Mutex(())

    /// A store embedding with `embedding` (nil: lexical search only).
    public init(
        embedding: ContextualEmbedding?, lateChunking: Bool = false, chunker: MarkdownChunker = MarkdownChunker(),
        analyzer: Analyzer = Analyzer()
    ) {
        self.embedding = embedding
        self.chunker = chunker
        self.analyzer = analyzer
        state = Mutex(Contents(lateChunking: lateChunking))
    }

    private func read<T: Sendable>(_ body: (Contents) -> T) -> T {
        state.withOrderedLock { body($0) }
    }

    /// Whether chunk vectors are pooled from their page's token vectors (late chunking) rather
    /// than from each chunk encoded alone. Read from the file when one is loaded.
    public var lateChunking: Bool { read(\.lateChunking) }
    /// Hybrid-retrieval settings, saved with the store.
    public var settings: RetrievalSettings {
        get { read(\.settings) }
        // Like every update, after any update in progress (`load` replaces the settings).
        set { updating.withOrderedLock { _ in state.withOrderedLock { $0.settings = newValue } } }
    }
    /// The chunks, in corpus order (pages sorted by path, chunks in page order).
    public var chunks: [Chunk] { read(\.chunks) }
    /// The quantized codes kept with the vectors (and saved with them); see `keepCodes`.
    public var keptCodes: Set<SearchPrecision> { read(\.keptCodes) }
    /// The vector searches an index file has: exact, and through its int8 or binary codes.
    public static let vectorSearchNames = ["exact", "int8", "binary"]
    /// How the semantic side reads the vectors (`.exact` by default); see `setVectorSearch`.
    public var vectorSearch: VectorSearch { read(\.vectorSearch) }
    /// The stored vectors (for export), in chunk order; nil for a lexical-only store.
    public func vectors() -> FlatIndex? { read(\.index) }

    /// Vectors by chunk id that `replace` uses instead of encoding (the benchmark's large copied
    /// corpora). Counted as embedded.
    package var precomputedVectors: [String: [Float]] {
        get { read(\.precomputedVectors) }
        set { state.withOrderedLock { $0.precomputedVectors = newValue } }
    }

    /// The fingerprint of the vectors this store's model makes.
    public func modelFingerprint() throws -> IndexFingerprint? {
        try embedding?.fingerprint
    }

    /// The number of chunks and the fingerprint of the stored vectors.
    public func statistics() throws -> StoreStatistics {
        read { StoreStatistics(chunks: $0.chunks.count, fingerprint: $0.storedFingerprint) }
    }

    /// Opens a store saved by `save(to:)`, reading the file once: the model is the one `embedding`
    /// picks from the fingerprint of its vectors (nil for a lexical-only file), and everything else
    /// (chunks, settings, late chunking, codes) is the file's.
    /// - Throws: as `load(from:verification:)`, and what `embedding` throws.
    public convenience init(
        contentsOf url: URL, verification: IndexFile.Verification = .full,
        embedding: (IndexFingerprint?) throws -> ContextualEmbedding?
    ) throws {
        let stored = try IndexFile.read(from: url, verification: verification)
        let lexicalOnly = stored.fingerprint.modelIdentifier == Self.lexicalOnlyIdentifier
        self.init(embedding: try embedding(lexicalOnly ? nil : stored.fingerprint))
        try updating.withOrderedLock { _ in try install(stored, from: url) }
    }

    /// Reads a store saved by `save(to:)`; its vectors are reused when they were made by the same
    /// model (fingerprint), and re-made on the next `replace` otherwise.
    /// - Throws: `VectorIndexError` for a bad file, `RetrievalError.corruptStore` for bad metadata.
    ///   `verification: .skippingVectors` maps the vectors without reading them (for int8 or binary
    ///   search of a large index; see `IndexFile.Verification`).
    public func load(from url: URL, verification: IndexFile.Verification = .full) throws {
        try updating.withOrderedLock { _ in
            try install(try IndexFile.read(from: url, verification: verification), from: url)
        }
    }

    /// Makes the file read from `url` the store's contents (the caller holds `updating`).
    private func install(_ stored: StoredIndex, from url: URL) throws {
        let metadata: Metadata
        do { metadata = try JSONDecoder().decode(Metadata.self, from: stored.metadata) } catch {
            throw RetrievalError.corruptStore(path: url.path, reason: "retrieval metadata is missing or malformed")
        }
        guard metadata.chunks.count == stored.index.count, metadata.contentHashes.count == metadata.chunks.count,
            metadata.bm25.count == metadata.chunks.count, metadata.chunks.map(\.id) == stored.index.ids
        else {
            throw RetrievalError.corruptStore(path: url.path, reason: "chunks, hashes, BM25 and vectors disagree")
        }
        // A lexical-only file stores zero vectors under the "none" fingerprint: no vectors to keep.
        let lexicalOnly = stored.fingerprint.modelIdentifier == Self.lexicalOnlyIdentifier
        state.withOrderedLock { contents in
            contents.chunks = metadata.chunks
            contents.contentHashes = metadata.contentHashes
            contents.bm25 = metadata.bm25
            contents.lateChunking = metadata.lateChunking
            contents.settings = metadata.settings
            contents.index = lexicalOnly ? nil : stored.index
            contents.storedFingerprint = lexicalOnly ? nil : stored.fingerprint
            contents.keptCodes = lexicalOnly ? [] : stored.index.precisions.subtracting([.exact])
        }
    }

    /// The model identifier a lexical-only file's fingerprint carries.
    static let lexicalOnlyIdentifier = "none"

    /// Keeps int8 and/or binary codes beside the vectors from now on: built now (int8 ranges
    /// learned from the current vectors), rebuilt after every update, and saved by `save(to:)`.
    /// An empty set drops them.
    public func keepCodes(_ precisions: Set<SearchPrecision>) {
        updating.withOrderedLock { _ in setCodes(precisions.subtracting([.exact])) }
    }

    /// Builds `kept` codes outside the contents' lock (an update is in progress: nothing else
    /// changes the index meanwhile) and swaps them in.
    private func setCodes(_ kept: Set<SearchPrecision>) {
        var index = read(\.index)
        index?.removeCodes()
        if !kept.isEmpty { index?.buildCodes(kept) }
        state.withOrderedLock { contents in
            contents.keptCodes = kept
            contents.index = index
        }
    }

    /// Makes the semantic side search as `search` says: exactly, or through int8 or binary codes,
    /// rescoring `k × rescore` candidates exactly. Codes the store does not keep yet are built
    /// (and kept). Like every update, after any update in progress.
    /// - Throws: `RetrievalError.unsupportedSearch` for HNSW (an index file has none);
    ///   `VectorIndexError.invalidCodes` for a rescore factor below 1 (what
    ///   `FlatIndex.search(_:k:precision:rescore:)` throws for it).
    public func setVectorSearch(_ search: VectorSearch) throws {
        guard let precision = search.codes else {
            throw RetrievalError.unsupportedSearch(
                "an index file has no \(search.name) index: search it \(Self.vectorSearchNames.joined(separator: ", "))"
            )
        }
        if let rescore = search.rescore { try FlatIndex.checkRescore(rescore) }
        updating.withOrderedLock { _ in
            let kept = read(\.keptCodes)
            if precision != .exact, !kept.contains(precision) { setCodes(kept.union([precision])) }
            state.withOrderedLock { $0.vectorSearch = search }
        }
    }

    /// Writes everything to `url` atomically.
    public func save(to url: URL) throws {
        let contents = read { $0 }
        let metadata = Metadata(
            chunks: contents.chunks, contentHashes: contents.contentHashes, bm25: contents.bm25,
            lateChunking: contents.lateChunking, settings: contents.settings)
        let fingerprint =
            try modelFingerprint() ?? contents.storedFingerprint
            ?? IndexFingerprint(
                modelIdentifier: Self.lexicalOnlyIdentifier, dimension: 1, pooling: "none", normalized: false,
                tokenizerHash: "none")
        let vectors = contents.index ?? FlatIndex(dimension: max(1, fingerprint.dimension))
        let data = try IndexFile.jsonEncoder.encode(metadata)
        let toWrite: FlatIndex
        if vectors.count == contents.chunks.count {
            toWrite = vectors
        } else {
            // Lexical-only store: write zero vectors so ids and chunks stay aligned.
            toWrite = try FlatIndex(
                dimension: fingerprint.dimension, ids: contents.chunks.map(\.id),
                rowMajorVectors: [Float](repeating: 0, count: contents.chunks.count * fingerprint.dimension))
        }
        try IndexFile.write(StoredIndex(index: toWrite, fingerprint: fingerprint, metadata: data), to: url)
    }

    /// Makes the store hold exactly `pages`, embedding only chunks that changed.
    public func replace(with pages: [Page], progress: IndexingProgress?) throws -> IndexingStatistics {
        try updating.withOrderedLock { _ in try update(to: pages, progress: progress) }
    }

    /// One indexing run (`IndexingPipeline`): this store reads what it holds from its contents
    /// and keeps the vectors the run makes for its index, then swaps the new contents in.
    private func update(to pages: [Page], progress: IndexingProgress?) throws -> IndexingStatistics {
        let old = read { $0 }
        let fingerprint = try modelFingerprint()
        // Vectors of another model are never kept (they are re-made, and the file says so on save).
        let vectorsUsable =
            fingerprint != nil && old.index != nil
            && (old.storedFingerprint == nil || old.storedFingerprint == fingerprint)
        var stored = [String: StoredChunk]()
        for (chunk, hash) in zip(old.chunks, old.contentHashes) where stored[chunk.id] == nil {
            stored[chunk.id] = StoredChunk(contentHash: hash, hasVector: vectorsUsable)
        }
        let pipeline = IndexingPipeline(
            chunker: chunker, embedding: embedding, lateChunking: old.lateChunking,
            precomputedVectors: fingerprint == nil ? [:] : old.precomputedVectors)
        let plan = pipeline.plan(pages, stored: stored)
        var vectors = [[Float]?](repeating: nil, count: plan.chunks.count)
        if embedding != nil, let index = old.index {
            for i in plan.kept { vectors[i] = index.vector(for: plan.chunks[i].id) }
        }
        // The heavy part, with no lock held: searches continue meanwhile.
        let statistics = try pipeline.run(plan, progress: progress) { positions, made in
            guard let made else { return }
            for (i, vector) in zip(positions, made) { vectors[i] = vector }
        }
        let newChunks = plan.chunks
        let bm25 = BM25(documents: newChunks.map { analyzer.terms($0.text) })
        var index: FlatIndex?
        var storedFingerprint: IndexFingerprint?
        if let embedding, let fingerprint {
            // Move the vectors into one buffer, freeing each as it is copied (peak: one copy).
            var flat = [Float]()
            flat.reserveCapacity(vectors.count * embedding.dimension)
            for i in vectors.indices {
                flat += vectors[i] ?? [Float](repeating: 0, count: embedding.dimension)
                vectors[i] = nil
            }
            index = try FlatIndex(dimension: embedding.dimension, ids: newChunks.map(\.id), rowMajorVectors: flat)
            if !old.keptCodes.isEmpty { index?.buildCodes(old.keptCodes) }
            storedFingerprint = fingerprint
        }
        // Without a model the store becomes lexical-only: vectors of the previous chunks would no
        // longer line up with the new ones, so none are kept (or saved).
        state.withOrderedLock { [newChunks, index] contents in
            contents.chunks = newChunks
            contents.contentHashes = plan.contentHashes
            contents.bm25 = bm25
            contents.index = index
            contents.storedFingerprint = storedFingerprint
        }
        return statistics
    }

    /// Up to `k` chunks for `question`; see `HybridRetriever`. Semantic and hybrid modes need a model.
    /// The question is encoded with no lock held.
    public func search(_ question: String, mode: RetrievalMode = .hybrid, k: Int = 4) throws -> [RetrievalHit] {
        let contents = read { $0 }
        let semantic =
            mode == .lexical
            ? nil
            : try semanticCandidates(question, count: max(contents.settings.semanticCandidates, k), in: contents)
        return Self.retrieve(
            question, semantic: semantic, mode: mode, k: k, settings: contents.settings, contents: contents,
            analyzer: analyzer)
    }

    /// The `count` chunks nearest to the question's embedding: `(chunk index, cosine)`, best first.
    /// - Throws: `RetrievalError.noVectors` without vectors, `VectorIndexError.fingerprintMismatch`
    ///   when the loaded vectors were made by another model than this store's (never compares
    ///   vectors of two models).
    package func semanticCandidates(_ question: String, count: Int) throws -> [(document: Int, score: Float)] {
        try semanticCandidates(question, count: count, in: read { $0 })
    }

    private func semanticCandidates(_ question: String, count: Int, in contents: Contents) throws -> [(
        document: Int, score: Float
    )] {
        guard let embedding, let index = contents.index, index.count == contents.chunks.count else {
            throw RetrievalError.noVectors("semantic search needs vectors: open the store with the model that built it")
        }
        if let stored = contents.storedFingerprint, let mine = try modelFingerprint(), stored != mine {
            throw VectorIndexError.fingerprintMismatch(expected: mine, actual: stored)
        }
        let query = try embedding.sentenceVector(for: question, inputType: .query)
        let search = contents.vectorSearch
        return try index.search(query, k: count, precision: search.codes ?? .exact, rescore: search.rescore).map {
            ($0.row, $0.score)
        }
    }

    /// Retrieval with precomputed semantic candidates and explicit settings (for sweeps).
    package func search(
        _ question: String, semantic: [(document: Int, score: Float)]?, mode: RetrievalMode, k: Int,
        settings: RetrievalSettings
    ) -> [RetrievalHit] {
        Self.retrieve(
            question, semantic: semantic, mode: mode, k: k, settings: settings, contents: read { $0 },
            analyzer: analyzer)
    }

    private static func retrieve(
        _ question: String, semantic: [(document: Int, score: Float)]?, mode: RetrievalMode, k: Int,
        settings: RetrievalSettings, contents: Contents, analyzer: Analyzer
    ) -> [RetrievalHit] {
        HybridRetriever(settings: settings, analyzer: analyzer)
            .retrieve(question, chunks: contents.chunks, bm25: contents.bm25, semantic: semantic, mode: mode, k: k)
    }
}
