import Embeddings
import Foundation
import Hashing
import LinearAlgebra
import VectorIndex

/// Chunks, their vectors and BM25 statistics, searchable, persisted in one index file.
///
/// Vectors are cached by (chunk id, content hash, model fingerprint): re-indexing an unchanged
/// corpus embeds nothing, and an edited chunk re-embeds only itself (with late chunking, its
/// page). Embedding happens off the actor, so searches keep running while documents are added.
///
/// ```swift
/// let store = EmbeddingStore(embedding: model)
/// let stats = try await store.index(folder: docs)
/// let hits = try await store.search("How do closures capture values?", mode: .hybrid, k: 4)
/// try await store.save(to: url)
/// ```
public actor EmbeddingStore {
    /// A page to index: its path relative to the corpus folder, and its Markdown.
    public struct Page: Sendable {
        /// The path relative to the corpus folder (chunk ids and `Chunk.source` come from it).
        public var source: String
        /// The page's Markdown, as read.
        public var text: String
        /// A page from its path and text.
        public init(source: String, text: String) {
            self.source = source
            self.text = text
        }
    }

    /// What an update did.
    public struct UpdateStatistics: Sendable, Equatable {
        /// Chunks in the store after the update.
        public var chunks = 0
        /// Chunks whose vectors were computed by this update.
        public var embedded = 0
        /// Chunks whose vectors were kept from before (same id, text and model).
        public var reused = 0
        /// Chunks that were in the store and are gone (their pages changed or disappeared).
        public var removed = 0
        /// Late chunking only: chunks without a usable span in their page (or whose span held no
        /// token), embedded alone instead.
        public var lateChunkingFallbacks = 0

        /// Statistics of an update that did nothing yet.
        public init() {}
    }

    /// What is stored in the index file's metadata next to the vectors.
    struct Metadata: Codable {
        var format = 1
        var chunks: [Chunk]
        var contentHashes: [String]
        var bm25: BM25
        var lateChunking: Bool
        var settings: RetrievalSettings
    }

    /// The model that embeds chunks and questions; nil for a lexical-only store.
    public let embedding: ContextualEmbedding?
    /// How pages are cut into chunks.
    public let chunker: MarkdownChunker
    /// How text becomes BM25 terms.
    public let analyzer: Analyzer
    /// Whether chunk vectors are pooled from their page's token vectors (late chunking) rather
    /// than from each chunk encoded alone. Read from the file when one is loaded.
    public private(set) var lateChunking: Bool
    /// Hybrid-retrieval settings, saved with the store.
    public var settings = RetrievalSettings()
    /// The chunks, in corpus order (pages sorted by path, chunks in page order).
    public private(set) var chunks: [Chunk] = []
    private var contentHashes: [String] = []
    private var bm25 = BM25(documents: [])
    private var index: FlatIndex?
    private var storedFingerprint: IndexFingerprint?
    /// The quantized codes kept with the vectors (and saved with them); see `keepCodes`.
    public private(set) var keptCodes: Set<SearchPrecision> = []
    /// How the semantic side scores the vectors (`exact` by default); see `setSearchPrecision`.
    public private(set) var searchPrecision: SearchPrecision = .exact
    /// The rescore factor of int8 and binary searches (nil: the precision's default).
    public private(set) var rescore: Int?
    /// Vectors by chunk id that `replace` uses instead of encoding (the benchmark's large copied
    /// corpora). Counted as embedded.
    package var precomputedVectors: [String: [Float]] = [:]

    /// Sets `precomputedVectors`.
    package func setPrecomputedVectors(_ vectors: [String: [Float]]) { precomputedVectors = vectors }

    /// A store embedding with `embedding` (nil: lexical search only).
    public init(embedding: ContextualEmbedding?, lateChunking: Bool = false, chunker: MarkdownChunker = MarkdownChunker(), analyzer: Analyzer = Analyzer()) {
        self.embedding = embedding
        self.lateChunking = lateChunking
        self.chunker = chunker
        self.analyzer = analyzer
    }

    /// The fingerprint of the vectors this store's model makes.
    public nonisolated func modelFingerprint() throws -> IndexFingerprint? {
        try embedding.map(Self.fingerprint(of:))
    }

    /// The fingerprint of the vectors `embedding` makes (shared by the stores).
    package static func fingerprint(of embedding: ContextualEmbedding) throws -> IndexFingerprint {
        try embedding.fingerprint
    }

    /// The number of chunks.
    public var count: Int { chunks.count }

    /// Reads a store saved by `save(to:)`; its vectors are reused when they were made by the same
    /// model (fingerprint), and re-made on the next `update` otherwise.
    /// - Throws: `VectorIndexError` for a bad file, `RetrievalError.corruptStore` for bad metadata.
    ///   `verification: .skippingVectors` maps the vectors without reading them (for int8 or binary
    ///   search of a large index; see `IndexFile.Verification`).
    public func load(from url: URL, verification: IndexFile.Verification = .full) throws {
        let stored = try IndexFile.read(from: url, verification: verification)
        let metadata: Metadata
        do { metadata = try JSONDecoder().decode(Metadata.self, from: stored.metadata) } catch {
            throw RetrievalError.corruptStore(path: url.path, reason: "retrieval metadata is missing or malformed")
        }
        guard metadata.chunks.count == stored.index.count, metadata.contentHashes.count == metadata.chunks.count,
              metadata.bm25.count == metadata.chunks.count, metadata.chunks.map(\.id) == stored.index.ids else {
            throw RetrievalError.corruptStore(path: url.path, reason: "chunks, hashes, BM25 and vectors disagree")
        }
        chunks = metadata.chunks
        contentHashes = metadata.contentHashes
        bm25 = metadata.bm25
        lateChunking = metadata.lateChunking
        settings = metadata.settings
        // A lexical-only file stores zero vectors under the "none" fingerprint: no vectors to keep.
        let lexicalOnly = stored.fingerprint.modelIdentifier == Self.lexicalOnlyIdentifier
        index = lexicalOnly ? nil : stored.index
        storedFingerprint = lexicalOnly ? nil : stored.fingerprint
        keptCodes = lexicalOnly ? [] : stored.index.precisions.subtracting([.exact])
    }

    /// The model identifier a lexical-only file's fingerprint carries.
    static let lexicalOnlyIdentifier = "none"

    /// Keeps int8 and/or binary codes beside the vectors from now on: built now (int8 ranges
    /// learned from the current vectors), rebuilt after every update, and saved by `save(to:)`.
    /// An empty set drops them.
    public func keepCodes(_ precisions: Set<SearchPrecision>) {
        keptCodes = precisions.subtracting([.exact])
        index?.removeCodes()
        if !keptCodes.isEmpty { index?.buildCodes(keptCodes) }
    }

    /// Makes the semantic side search through `precision` codes, rescoring `k × rescore`
    /// candidates exactly. Codes the store does not keep yet are built (and kept).
    /// - Throws: `RetrievalError.invalidArgument` for a rescore factor below 1.
    public func setSearchPrecision(_ precision: SearchPrecision, rescore: Int? = nil) throws {
        if let rescore, rescore < 1 { throw RetrievalError.invalidArgument("rescore factor must be at least 1, got \(rescore)") }
        searchPrecision = precision
        self.rescore = rescore
        if precision != .exact, !keptCodes.contains(precision) { keepCodes(keptCodes.union([precision])) }
    }

    /// Writes everything to `url` atomically.
    public func save(to url: URL) throws {
        let metadata = Metadata(chunks: chunks, contentHashes: contentHashes, bm25: bm25, lateChunking: lateChunking, settings: settings)
        let fingerprint = try modelFingerprint() ?? storedFingerprint
            ?? IndexFingerprint(modelIdentifier: Self.lexicalOnlyIdentifier, dimension: 1, pooling: "none", normalized: false, tokenizerHash: "none")
        let vectors = index ?? FlatIndex(dimension: max(1, fingerprint.dimension))
        let data = try JSONEncoder().encode(metadata)
        let toWrite: FlatIndex
        if vectors.count == chunks.count {
            toWrite = vectors
        } else {
            // Lexical-only store: write zero vectors so ids and chunks stay aligned.
            toWrite = try FlatIndex(dimension: fingerprint.dimension, ids: chunks.map(\.id),
                                    rowMajorVectors: [Float](repeating: 0, count: chunks.count * fingerprint.dimension))
        }
        try IndexFile.write(StoredIndex(index: toWrite, fingerprint: fingerprint, metadata: data), to: url)
    }

    /// Indexes every `*.md` below `folder`, replacing what the store held. Unreadable, empty or
    /// non-UTF-8 files are returned as problems and skipped.
    public func index(folder: URL, progress: (@Sendable (Int, Int) -> Void)? = nil) async throws -> (UpdateStatistics, [RetrievalError]) {
        var pages = [Page]()
        var problems = [RetrievalError]()
        for (url, relative) in try MarkdownChunker.markdownFiles(in: folder) {
            do { pages.append(Page(source: relative, text: try MarkdownChunker.readText(url))) } catch let error as RetrievalError {
                problems.append(error)
            }
        }
        return (try await replace(with: pages, progress: progress), problems)
    }

    /// Makes the store hold exactly `pages`, embedding only chunks that changed.
    public func replace(with pages: [Page], progress: (@Sendable (Int, Int) -> Void)? = nil) async throws -> UpdateStatistics {
        var newChunks = [Chunk]()
        var newHashes = [String]()
        var pageOfChunk = [Int]()
        for (p, page) in pages.enumerated() {
            let pageHash = Self.hash(page.text)
            for chunk in chunker.chunks(of: page.text, source: page.source) {
                newChunks.append(chunk)
                // With late chunking a chunk's vector depends on its whole page.
                newHashes.append(lateChunking ? Self.hash(chunk.text + "\u{0}" + pageHash) : Self.hash(chunk.text))
                pageOfChunk.append(p)
            }
        }
        var statistics = UpdateStatistics()
        statistics.chunks = newChunks.count
        let oldIDs = Set(chunks.map(\.id))
        statistics.removed = oldIDs.subtracting(newChunks.map(\.id)).count
        var vectors = [[Float]?](repeating: nil, count: newChunks.count)
        let fingerprint = try modelFingerprint()
        if let fingerprint, let index, storedFingerprint == nil || storedFingerprint == fingerprint {
            let oldHash = Dictionary(zip(chunks.map(\.id), contentHashes), uniquingKeysWith: { a, _ in a })
            for (i, chunk) in newChunks.enumerated() where oldHash[chunk.id] == newHashes[i] {
                vectors[i] = index.vector(for: chunk.id)
            }
        }
        statistics.reused = vectors.filter { $0 != nil }.count
        if fingerprint != nil, !precomputedVectors.isEmpty {
            for i in vectors.indices where vectors[i] == nil { vectors[i] = precomputedVectors[newChunks[i].id] }
        }
        if let embedding {
            let missing = vectors.indices.filter { vectors[$0] == nil }
            statistics.embedded = missing.count
            // The heavy part runs off the actor: searches continue meanwhile.
            let made = try await Self.embed(missing.map { newChunks[$0] }, pages: missing.map { pages[pageOfChunk[$0]] },
                                            embedding: embedding, lateChunking: lateChunking, progress: progress)
            statistics.lateChunkingFallbacks = made.fallbacks
            for (slot, vector) in zip(missing, made.vectors) { vectors[slot] = vector }
        }
        chunks = newChunks
        contentHashes = newHashes
        bm25 = BM25(documents: newChunks.map { analyzer.terms($0.text) })
        if let embedding, let fingerprint {
            // Move the vectors into one buffer, freeing each as it is copied (peak: one copy).
            var flat = [Float]()
            flat.reserveCapacity(vectors.count * embedding.dimension)
            for i in vectors.indices {
                flat += vectors[i] ?? [Float](repeating: 0, count: embedding.dimension)
                vectors[i] = nil
            }
            index = try FlatIndex(dimension: embedding.dimension, ids: newChunks.map(\.id), rowMajorVectors: flat)
            if !keptCodes.isEmpty { index?.buildCodes(keptCodes) }
            storedFingerprint = fingerprint
        } else {
            // Without a model the store becomes lexical-only: vectors of the previous chunks
            // would no longer line up with the new ones, so none are kept (or saved).
            index = nil
            storedFingerprint = nil
        }
        return statistics
    }

    private static func embed(_ chunks: [Chunk], pages: [Page], embedding: ContextualEmbedding, lateChunking: Bool,
                              progress: (@Sendable (Int, Int) -> Void)?) async throws -> (vectors: [[Float]], fallbacks: Int) {
        // Encoding blocks for seconds to minutes: it runs on a Dispatch thread, never on a thread
        // of Swift concurrency's cooperative pool.
        try await onBlockingThread {
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
    }

    /// Up to `k` chunks for `question`; see `HybridRetriever`. Semantic and hybrid modes need a model.
    public func search(_ question: String, mode: RetrievalMode = .hybrid, k: Int = 4) throws -> [RetrievalHit] {
        let semantic = mode == .lexical ? nil : try semanticCandidates(question, count: max(settings.semanticCandidates, k))
        return search(question, semantic: semantic, mode: mode, k: k, settings: settings)
    }

    /// A conversation's follow-up: when `question` alone retrieves nothing ("and in Swift 6?"),
    /// it is retried together with the previous question.
    public func search(_ question: String, previousQuestion: String?, mode: RetrievalMode = .hybrid, k: Int = 4) throws -> [RetrievalHit] {
        let hits = try search(question, mode: mode, k: k)
        guard hits.isEmpty, let previousQuestion, !previousQuestion.isEmpty else { return hits }
        return try search(previousQuestion + " " + question, mode: mode, k: k)
    }

    /// The model identifier of the vectors a loaded file holds (nil: none loaded, or lexical-only).
    public var storedModelIdentifier: String? { storedFingerprint?.modelIdentifier }

    /// The `count` chunks nearest to the question's embedding: `(chunk index, cosine)`, best first.
    /// - Throws: `RetrievalError.invalidArgument` without vectors, or when the loaded vectors were
    ///   made by another model than this store's (never compares vectors of two models).
    public func semanticCandidates(_ question: String, count: Int) throws -> [(document: Int, score: Float)] {
        guard let embedding, let index, index.count == chunks.count else {
            throw RetrievalError.invalidArgument("semantic search needs vectors: open the store with the model that built it")
        }
        if let stored = storedFingerprint, let mine = try modelFingerprint(), stored != mine {
            throw RetrievalError.invalidArgument("the vectors were made by \(stored.modelIdentifier), not by \(mine.modelIdentifier): open the store with the model that built it (or re-index)")
        }
        let query = try embedding.sentenceVector(for: question, inputType: .query)
        return try index.search(query, k: count, precision: searchPrecision, rescore: rescore).map { ($0.row, $0.score) }
    }

    /// Retrieval with precomputed semantic candidates and explicit settings (for sweeps).
    public func search(_ question: String, semantic: [(document: Int, score: Float)]?, mode: RetrievalMode, k: Int,
                       settings: RetrievalSettings) -> [RetrievalHit] {
        HybridRetriever(settings: settings, analyzer: analyzer)
            .retrieve(question, chunks: chunks, bm25: bm25, semantic: semantic, mode: mode, k: k)
    }

    /// The stored vectors (for export), in chunk order; nil for a lexical-only store.
    public func vectors() -> FlatIndex? { index }

    /// The content hash that decides whether a chunk's vector can be reused (shared by the stores).
    package static func hash(_ text: String) -> String {
        String(SHA256.hex(of: Array(text.utf8)).prefix(24))
    }
}

/// Runs blocking work on a Dispatch thread and resumes the caller with its result.
func onBlockingThread<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        DispatchQueue.global(qos: .userInitiated).async {
            continuation.resume(with: Result { try work() })
        }
    }
}
