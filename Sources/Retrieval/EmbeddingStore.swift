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
        var searchPrecision: SearchPrecision = .exact
        var rescore: Int?
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
    public init(embedding: ContextualEmbedding?, lateChunking: Bool = false, chunker: MarkdownChunker = MarkdownChunker(), analyzer: Analyzer = Analyzer()) {
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
    /// How the semantic side scores the vectors (`exact` by default); see `setSearchPrecision`.
    public var searchPrecision: SearchPrecision { read(\.searchPrecision) }
    /// The rescore factor of int8 and binary searches (nil: the precision's default).
    public var rescore: Int? { read(\.rescore) }
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

    /// Reads a store saved by `save(to:)`; its vectors are reused when they were made by the same
    /// model (fingerprint), and re-made on the next `replace` otherwise.
    /// - Throws: `VectorIndexError` for a bad file, `RetrievalError.corruptStore` for bad metadata.
    ///   `verification: .skippingVectors` maps the vectors without reading them (for int8 or binary
    ///   search of a large index; see `IndexFile.Verification`).
    public func load(from url: URL, verification: IndexFile.Verification = .full) throws {
        try updating.withOrderedLock { _ in
            let stored = try IndexFile.read(from: url, verification: verification)
            let metadata: Metadata
            do { metadata = try JSONDecoder().decode(Metadata.self, from: stored.metadata) } catch {
                throw RetrievalError.corruptStore(path: url.path, reason: "retrieval metadata is missing or malformed")
            }
            guard metadata.chunks.count == stored.index.count, metadata.contentHashes.count == metadata.chunks.count,
                  metadata.bm25.count == metadata.chunks.count, metadata.chunks.map(\.id) == stored.index.ids else {
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

    /// Makes the semantic side search through `precision` codes, rescoring `k × rescore`
    /// candidates exactly. Codes the store does not keep yet are built (and kept).
    /// - Throws: `VectorIndexError.invalidCodes` for a rescore factor below 1 (what
    ///   `FlatIndex.search(_:k:precision:rescore:)` throws for it).
    public func setSearchPrecision(_ precision: SearchPrecision, rescore: Int? = nil) throws {
        if let rescore { try FlatIndex.checkRescore(rescore) }
        updating.withOrderedLock { _ in
            let kept = read(\.keptCodes)
            if precision != .exact, !kept.contains(precision) { setCodes(kept.union([precision])) }
            state.withOrderedLock { contents in
                contents.searchPrecision = precision
                contents.rescore = rescore
            }
        }
    }

    /// Writes everything to `url` atomically.
    public func save(to url: URL) throws {
        let contents = read { $0 }
        let metadata = Metadata(chunks: contents.chunks, contentHashes: contents.contentHashes, bm25: contents.bm25,
                                lateChunking: contents.lateChunking, settings: contents.settings)
        let fingerprint = try modelFingerprint() ?? contents.storedFingerprint
            ?? IndexFingerprint(modelIdentifier: Self.lexicalOnlyIdentifier, dimension: 1, pooling: "none", normalized: false, tokenizerHash: "none")
        let vectors = contents.index ?? FlatIndex(dimension: max(1, fingerprint.dimension))
        let data = try JSONEncoder().encode(metadata)
        let toWrite: FlatIndex
        if vectors.count == contents.chunks.count {
            toWrite = vectors
        } else {
            // Lexical-only store: write zero vectors so ids and chunks stay aligned.
            toWrite = try FlatIndex(dimension: fingerprint.dimension, ids: contents.chunks.map(\.id),
                                    rowMajorVectors: [Float](repeating: 0, count: contents.chunks.count * fingerprint.dimension))
        }
        try IndexFile.write(StoredIndex(index: toWrite, fingerprint: fingerprint, metadata: data), to: url)
    }

    /// Makes the store hold exactly `pages`, embedding only chunks that changed.
    public func replace(with pages: [Page], progress: IndexingProgress?) throws -> IndexingStatistics {
        try updating.withOrderedLock { _ in try update(to: pages, progress: progress) }
    }

    private func update(to pages: [Page], progress: IndexingProgress?) throws -> IndexingStatistics {
        let old = read { $0 }
        var newChunks = [Chunk]()
        var newHashes = [String]()
        var pageOfChunk = [Int]()
        for (p, page) in pages.enumerated() {
            let pageHash = ContentHash.of(page.text)
            for chunk in chunker.chunks(of: page.text, source: page.source) {
                newChunks.append(chunk)
                // With late chunking a chunk's vector depends on its whole page.
                newHashes.append(old.lateChunking ? ContentHash.of(chunk.text + "\u{0}" + pageHash) : ContentHash.of(chunk.text))
                pageOfChunk.append(p)
            }
        }
        var statistics = IndexingStatistics()
        statistics.chunks = newChunks.count
        let oldIDs = Set(old.chunks.map(\.id))
        statistics.removed = oldIDs.subtracting(newChunks.map(\.id)).count
        var vectors = [[Float]?](repeating: nil, count: newChunks.count)
        let fingerprint = try modelFingerprint()
        if let fingerprint, let index = old.index, old.storedFingerprint == nil || old.storedFingerprint == fingerprint {
            let oldHash = Dictionary(zip(old.chunks.map(\.id), old.contentHashes), uniquingKeysWith: { a, _ in a })
            for (i, chunk) in newChunks.enumerated() where oldHash[chunk.id] == newHashes[i] {
                vectors[i] = index.vector(for: chunk.id)
            }
        }
        statistics.reused = vectors.filter { $0 != nil }.count
        if fingerprint != nil, !old.precomputedVectors.isEmpty {
            for i in vectors.indices where vectors[i] == nil { vectors[i] = old.precomputedVectors[newChunks[i].id] }
        }
        if let embedding {
            let missing = vectors.indices.filter { vectors[$0] == nil }
            statistics.embedded = missing.count
            // The heavy part, with no lock held: searches continue meanwhile.
            let made = try Self.embed(missing.map { newChunks[$0] }, pages: missing.map { pages[pageOfChunk[$0]] },
                                      embedding: embedding, lateChunking: old.lateChunking, progress: progress)
            statistics.lateChunkingFallbacks = made.fallbacks
            for (slot, vector) in zip(missing, made.vectors) { vectors[slot] = vector }
        }
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
        state.withOrderedLock { [newChunks, newHashes, index] contents in
            contents.chunks = newChunks
            contents.contentHashes = newHashes
            contents.bm25 = bm25
            contents.index = index
            contents.storedFingerprint = storedFingerprint
        }
        return statistics
    }

    private static func embed(_ chunks: [Chunk], pages: [Page], embedding: ContextualEmbedding, lateChunking: Bool,
                              progress: IndexingProgress?) throws -> (vectors: [[Float]], fallbacks: Int) {
        var vectors = [[Float]](repeating: [], count: chunks.count)
        var fallbacks = 0
        var plain = [Int]()
        if lateChunking {
            // Group by page, in order, and encode each page once.
            var i = 0
            while i < chunks.count {
                var j = i
                while j + 1 < chunks.count, chunks[j + 1].source == chunks[i].source { j += 1 }
                let page = pages[i].text
                // The chunker says where each chunk lies in its page.
                let spans = (i...j).map { chunks[$0].range(in: page) }
                let found = (i...j).filter { spans[$0 - i] != nil }
                let late = try embedding.lateChunkVectors(for: page, spans: found.map { spans[$0 - i]! })
                for (k, vector) in zip(found, late) {
                    if vector.allSatisfy({ $0 == 0 }) { plain.append(k) } else { vectors[k] = vector }
                }
                plain.append(contentsOf: (i...j).filter { spans[$0 - i] == nil })
                i = j + 1
                progress?(i, chunks.count)
            }
            fallbacks = plain.count
        } else {
            plain = Array(chunks.indices)
        }
        let batch = 32
        var start = 0
        while start < plain.count {
            let slots = Array(plain[start..<min(plain.count, start + batch)])
            let made = try embedding.sentenceVectors(for: slots.map { chunks[$0].text }, inputType: .passage, batchSize: batch)
            for (slot, vector) in zip(slots, made) { vectors[slot] = vector }
            start += batch
            if !lateChunking { progress?(min(start, plain.count), plain.count) }
        }
        return (vectors, fallbacks)
    }

    /// Up to `k` chunks for `question`; see `HybridRetriever`. Semantic and hybrid modes need a model.
    /// The question is encoded with no lock held.
    public func search(_ question: String, mode: RetrievalMode = .hybrid, k: Int = 4) throws -> [RetrievalHit] {
        let contents = read { $0 }
        let semantic = mode == .lexical ? nil
            : try semanticCandidates(question, count: max(contents.settings.semanticCandidates, k), in: contents)
        return Self.retrieve(question, semantic: semantic, mode: mode, k: k, settings: contents.settings, contents: contents, analyzer: analyzer)
    }

    /// The `count` chunks nearest to the question's embedding: `(chunk index, cosine)`, best first.
    /// - Throws: `RetrievalError.noVectors` without vectors, `VectorIndexError.fingerprintMismatch`
    ///   when the loaded vectors were made by another model than this store's (never compares
    ///   vectors of two models).
    package func semanticCandidates(_ question: String, count: Int) throws -> [(document: Int, score: Float)] {
        try semanticCandidates(question, count: count, in: read { $0 })
    }

    private func semanticCandidates(_ question: String, count: Int, in contents: Contents) throws -> [(document: Int, score: Float)] {
        guard let embedding, let index = contents.index, index.count == contents.chunks.count else {
            throw RetrievalError.noVectors("semantic search needs vectors: open the store with the model that built it")
        }
        if let stored = contents.storedFingerprint, let mine = try modelFingerprint(), stored != mine {
            throw VectorIndexError.fingerprintMismatch(expected: mine, actual: stored)
        }
        let query = try embedding.sentenceVector(for: question, inputType: .query)
        return try index.search(query, k: count, precision: contents.searchPrecision, rescore: contents.rescore).map { ($0.row, $0.score) }
    }

    /// Retrieval with precomputed semantic candidates and explicit settings (for sweeps).
    package func search(_ question: String, semantic: [(document: Int, score: Float)]?, mode: RetrievalMode, k: Int,
                        settings: RetrievalSettings) -> [RetrievalHit] {
        Self.retrieve(question, semantic: semantic, mode: mode, k: k, settings: settings, contents: read { $0 }, analyzer: analyzer)
    }

    private static func retrieve(_ question: String, semantic: [(document: Int, score: Float)]?, mode: RetrievalMode, k: Int,
                                 settings: RetrievalSettings, contents: Contents, analyzer: Analyzer) -> [RetrievalHit] {
        HybridRetriever(settings: settings, analyzer: analyzer)
            .retrieve(question, chunks: contents.chunks, bm25: contents.bm25, semantic: semantic, mode: mode, k: k)
    }
}
