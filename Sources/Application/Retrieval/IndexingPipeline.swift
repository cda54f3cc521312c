import Embeddings
import Foundation

/// What a store holds for one chunk id, as far as an indexing run needs to know: the content hash
/// it was stored under, and whether it has a vector the run may keep.
package struct StoredChunk: Sendable, Equatable {
    /// The content hash the chunk was stored under (`IndexingPipeline.Plan.contentHashes`).
    package var contentHash: String
    /// Whether the store holds a vector for it, made by the run's model.
    package var hasVector: Bool

    package init(contentHash: String, hasVector: Bool) {
        self.contentHash = contentHash
        self.hasVector = hasVector
    }
}

/// The indexing run both stores make, written once: pages are chunked, each chunk hashed (with its
/// page under late chunking), compared with what the store holds, and only the chunks whose id or
/// hash changed (or that lack a vector) are embedded, in batches, each handed to the store as it
/// is made. A store says only what it holds (`plan(_:stored:)`) and how it writes a batch
/// (`run(_:progress:write:)`'s `write`); `EmbeddingStore` keeps the vectors for its file,
/// `PostgresStore` inserts rows inside its transaction.
package struct IndexingPipeline: Sendable {
    /// Chunks go to the encoder, and from it to the store, this many at a time (under late
    /// chunking, one page's chunks at a time: the encoder takes the page whole). A batch of 32
    /// gives every thread of the encoder several texts of its own, while a run holds the token
    /// matrices of one batch only (all at once would be about 20 GB for 100,000 chunks, see
    /// Docs/Reliability.md), the database store holds one batch of new vectors before it writes
    /// them, and progress moves every batch. A text's floats depend on the group it is encoded with
    /// (`ContextualEmbedding.sentenceVectors`), so the size is also part of what makes an index
    /// reproducible: both stores use this one, and give the same chunks the same vectors.
    package static let batchSize = 32

    /// How pages are cut into chunks.
    package let chunker: MarkdownChunker
    /// The model that embeds chunks; nil for a lexical-only run.
    package let embedding: ContextualEmbedding?
    /// Whether chunk vectors are pooled from their page's token vectors.
    package let lateChunking: Bool
    /// Vectors by chunk id used instead of encoding (the benchmark's copied corpora); counted as embedded.
    package let precomputedVectors: [String: [Float]]

    package init(
        chunker: MarkdownChunker, embedding: ContextualEmbedding?, lateChunking: Bool,
        precomputedVectors: [String: [Float]] = [:]
    ) {
        self.chunker = chunker
        self.embedding = embedding
        self.lateChunking = lateChunking
        self.precomputedVectors = precomputedVectors
    }

    /// What a run will do: the new contents, and which of them the store keeps or must write.
    package struct Plan: Sendable {
        /// The chunks of every page, in corpus order (pages in the order given, chunks in page order).
        package var chunks: [Chunk] = []
        /// Each chunk's content hash: of its text, and under late chunking of its page too (its
        /// vector depends on the whole page).
        package var contentHashes: [String] = []
        /// Positions in `chunks` that the store keeps as stored: same id and hash, and a vector when
        /// the run has a model.
        package var kept: [Int] = []
        /// Positions in `chunks` to write (and embed, when the run has a model).
        package var fresh: [Int] = []
        /// Ids the store holds that are not kept: chunks removed or changed.
        package var stale: [String] = []
        /// The counts so far: chunks, removed, reused and (to be) embedded.
        package var statistics = IndexingStatistics()
        /// Each chunk's page, by position in `pages`.
        fileprivate var pageOfChunk: [Int] = []
        fileprivate var pages: [Page] = []
    }

    /// Chunks and hashes `pages` and compares them with `stored` (what the store holds, by chunk id).
    package func plan(_ pages: [Page], stored: [String: StoredChunk]) -> Plan {
        var plan = Plan()
        plan.pages = pages
        for (p, page) in pages.enumerated() {
            let pageHash = ContentHash.of(page.text)
            for chunk in chunker.chunks(of: page.text, source: page.source) {
                plan.chunks.append(chunk)
                // With late chunking a chunk's vector depends on its whole page.
                plan.contentHashes.append(
                    lateChunking ? ContentHash.of(chunk.text + "\u{0}" + pageHash) : ContentHash.of(chunk.text))
                plan.pageOfChunk.append(p)
            }
        }
        let needsVectors = embedding != nil
        var keptIDs = Set<String>()
        for (i, chunk) in plan.chunks.enumerated() {
            if let old = stored[chunk.id], old.contentHash == plan.contentHashes[i], !needsVectors || old.hasVector {
                plan.kept.append(i)
                keptIDs.insert(chunk.id)
            } else {
                plan.fresh.append(i)
            }
        }
        let newIDs = Set(plan.chunks.map(\.id))
        plan.stale = stored.keys.filter { !keptIDs.contains($0) }.sorted()
        plan.statistics.chunks = plan.chunks.count
        plan.statistics.removed = stored.keys.filter { !newIDs.contains($0) }.count
        plan.statistics.reused = needsVectors ? plan.kept.count : 0
        plan.statistics.embedded = needsVectors ? plan.fresh.count : 0
        return plan
    }

    /// Writes `plan.fresh`: hands `write` each batch of positions in `plan.chunks` with their
    /// vectors (nil without a model), as they are made. Precomputed vectors come first, then the
    /// encoded ones (`batchSize` at a time; under late chunking a page at a time, then the chunks
    /// late chunking could not pool, encoded alone). `progress` reports the chunks embedded so far
    /// of `plan.statistics.embedded`; a lexical-only run reports none.
    /// - Returns: the run's statistics.
    /// - Throws: `EmbeddingsError` from the encoder; whatever `write` throws.
    package func run(
        _ plan: Plan, progress: IndexingProgress?,
        write: (_ positions: [Int], _ vectors: [[Float]]?) throws -> Void
    ) throws -> IndexingStatistics {
        var statistics = plan.statistics
        guard let embedding else {
            for batch in Self.batches(plan.fresh) { try write(batch, nil) }
            return statistics
        }
        let total = plan.fresh.count
        var done = 0
        func written(_ positions: [Int], _ vectors: [[Float]]) throws {
            try write(positions, vectors)
            done += positions.count
            progress?(done, total)
        }
        let known = plan.fresh.filter { precomputedVectors[plan.chunks[$0].id] != nil }
        for batch in Self.batches(known) {
            try written(batch, batch.map { precomputedVectors[plan.chunks[$0].id] ?? [] })
        }
        var plain = plan.fresh.filter { precomputedVectors[plan.chunks[$0].id] == nil }
        if lateChunking {
            let late = plain
            plain = []
            // Consecutive chunks of one page: the page is encoded once.
            var i = 0
            while i < late.count {
                var j = i
                while j + 1 < late.count, plan.pageOfChunk[late[j + 1]] == plan.pageOfChunk[late[i]] { j += 1 }
                let group = Array(late[i...j])
                let page = plan.pages[plan.pageOfChunk[late[i]]].text
                // The chunker says where each chunk lies in its page.
                let spans = group.map { plan.chunks[$0].range(in: page) }
                let found = group.indices.filter { spans[$0] != nil }
                let vectors = try embedding.lateChunkVectors(for: page, spans: found.compactMap { spans[$0] })
                var made = [Int]()
                var madeVectors = [[Float]]()
                for (k, vector) in zip(found, vectors) {
                    // A span that holds no token pools to zero: that chunk is encoded alone.
                    if vector.allSatisfy({ $0 == 0 }) {
                        plain.append(group[k])
                    } else {
                        made.append(group[k])
                        madeVectors.append(vector)
                    }
                }
                plain += group.indices.filter { spans[$0] == nil }.map { group[$0] }
                if !made.isEmpty { try written(made, madeVectors) }
                i = j + 1
            }
            statistics.lateChunkingFallbacks = plain.count
        }
        for batch in Self.batches(plain) {
            let texts = batch.map { plan.chunks[$0].text }
            try written(
                batch, try embedding.sentenceVectors(for: texts, inputType: .passage, batchSize: Self.batchSize))
        }
        return statistics
    }

    /// `positions` cut into runs of `batchSize`.
    private static func batches(_ positions: [Int]) -> [[Int]] {
        stride(from: 0, to: positions.count, by: batchSize).map {
            Array(positions[$0..<min(positions.count, $0 + batchSize)])
        }
    }
}
