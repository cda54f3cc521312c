import Embeddings
import Foundation
import PostgresStorage
import Retrieval

/// `embeddings-bench stores --store URL [--copies N]`: the index file against PostgreSQL +
/// pgvector (exact and HNSW), on the built-in corpus with the real encoder, then on the corpus
/// copied N times (default 112: 100,688 chunks) with each distinct text's vector computed once
/// and reused, so that the large run measures the stores, not the encoder. Copies after the first
/// get their vector plus a little Gaussian noise (σ 0.02 per component, then unit length): near
/// duplicates, as a real large corpus has, rather than exact ones, which no ANN index handles
/// (with exact duplicates pgvector's HNSW recall@10 measured 0.53).
enum StoreBench {
    struct Row {
        var corpus: String
        var store: String
        var chunks: Int
        var indexSeconds: Double
        var embedded: Int
        var p50: Double
        var p90: Double
        var semanticP50: Double
        var recall: Double?
    }

    /// Seconds per query, p50 and p90, over the questions (each asked once after one warm-up).
    static func latency(_ questions: [String], _ search: (String) throws -> Void) rethrows -> (Double, Double) {
        if let first = questions.first { try search(first) }
        var times = [Double]()
        for q in questions {
            let start = DispatchTime.now().uptimeNanoseconds
            try search(q)
            times.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9)
        }
        return (percentile(times, 0.5), percentile(times, 0.9))
    }

    /// `vector` moved a little (seeded by `seed`) and scaled back to unit length.
    static func nearDuplicate(_ vector: [Float], seed: UInt64) -> [Float] {
        var state = seed &* 0x9E37_79B9_7F4A_7C15 | 1
        func uniform() -> Double {
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            return (Double(state >> 11) + 0.5) / Double(1 << 53)
        }
        var out = vector.map { x -> Float in
            let gaussian = (-2 * Foundation.log(uniform())).squareRoot() * Foundation.cos(2 * Double.pi * uniform())
            return x + Float(0.02 * gaussian)
        }
        let norm = out.reduce(0) { $0 + Double($1) * Double($1) }.squareRoot()
        if norm > 0 { out = out.map { $0 / Float(norm) } }
        return out
    }

    static func pages(_ corpus: URL, copies: Int) throws -> [Page] {
        let pages = try MarkdownChunker.pages(in: corpus).pages
        guard copies > 1 else { return pages }
        return (0..<copies).flatMap { copy in
            pages.map { Page(source: String(format: "copy-%03d/", copy + 1) + $0.source, text: $0.text) }
        }
    }

    /// HNSW recall@10 against exact, ties counted: a result counts when it scores at least the
    /// exact 10th best (the copied corpus holds every vector many times, so ids alone cannot tell).
    static func hnswRecall(_ store: PostgresStore, _ questions: [String], efSearch: Int) throws -> Double {
        var found = 0
        var wanted = 0
        for q in questions {
            try store.setVectorSearch(.exact)
            let exact = try store.semanticCandidates(q, count: 10)
            try store.setVectorSearch(.hnsw(efSearch: efSearch))
            let approximate = try store.semanticCandidates(q, count: 10)
            guard let tenth = exact.last?.score else { continue }
            found += approximate.filter { $0.score >= tenth - 1e-6 }.count
            wanted += exact.count
        }
        try store.setVectorSearch(.exact)
        return wanted == 0 ? 0 : Double(found) / Double(wanted)
    }

    /// An indexing run of `store` over `pages` and what makes it last (the file store's save), timed.
    static func indexing(_ store: any ChunkStore, _ pages: [Page], finish: () throws -> Void = {}) throws -> (
        IndexingStatistics, Double
    ) {
        let start = Date()
        let statistics = try store.replace(with: pages)
        try finish()
        return (statistics, Date().timeIntervalSince(start))
    }

    /// Hybrid p50 and p90 and semantic-only p50 over `questions`, in seconds.
    static func searching(_ store: any ChunkStore, _ questions: [String]) throws -> (Double, Double, Double) {
        let (hybrid50, hybrid90) = try latency(questions) { q in _ = try store.search(q, mode: .hybrid, k: 4) }
        let (semantic50, _) = try latency(questions) { q in _ = try store.search(q, mode: .semantic, k: 4) }
        return (hybrid50, hybrid90, semantic50)
    }

    static func run(url: String, copies: Int, embedding: ContextualEmbedding, corpus: URL, evaluation: EvaluationSet?)
        throws -> String
    {
        let questions = evaluation?.cases.map(\.question) ?? []
        var lexicalComparison =
            "| Mode | recall@4, BM25 from stored term counts | recall@4, PostgreSQL full-text search (ts_rank_cd, english) |\n|---|---|---|\n"
        var rows = [Row]()
        var recallSweep = ""
        var byText = [String: [Float]]()
        var cache = [String: [Float]]()
        for (label, n) in [("built-in", 1), ("copied ×\(copies)", copies)] where n >= 1 {
            let pages = try pages(corpus, copies: n)
            // The index file.
            let file = EmbeddingStore(embedding: embedding)
            if n > 1 {
                let known = cache
                file.precomputedVectors = known
            }
            let fileURL = FileManager.default.temporaryDirectory.appendingPathComponent("store-bench-\(UUID()).index")
            defer { try? FileManager.default.removeItem(at: fileURL) }
            let (fileStats, fileSeconds) = try indexing(file, pages) { try file.save(to: fileURL) }
            if n == 1 {
                // Every distinct chunk text's vector, for the copied corpus.
                let chunks = file.chunks
                let vectors = file.vectors()
                for chunk in chunks { if let v = vectors?.vector(for: chunk.id) { byText[chunk.text] = v } }
                // The copied corpus: copy-001 keeps the real vectors, later copies near duplicates.
                let copied = try Self.pages(corpus, copies: copies)
                let chunker = MarkdownChunker()
                var seed: UInt64 = 1
                for page in copied {
                    let isFirst = page.source.hasPrefix("copy-001/")
                    for chunk in chunker.chunks(of: page.text, source: page.source) {
                        guard let v = byText[chunk.text] else { continue }
                        cache[chunk.id] = isFirst ? v : nearDuplicate(v, seed: seed)
                        seed += 1
                    }
                }
            }
            let (fp50, fp90, fs50) = try searching(file, questions)
            rows.append(
                Row(
                    corpus: label, store: "index file", chunks: fileStats.chunks, indexSeconds: fileSeconds,
                    embedded: fileStats.embedded, p50: fp50, p90: fp90, semanticP50: fs50, recall: nil))
            // PostgreSQL, exact then HNSW.
            let postgres = try PostgresStore(connection: url, embedding: embedding, tablePrefix: "bench")
            try postgres.drop()
            if n > 1 { postgres.precomputedVectors = cache }
            let (stats, postgresSeconds) = try indexing(postgres, pages)
            try postgres.setVectorSearch(.exact)
            let (ep50, ep90, es50) = try searching(postgres, questions)
            rows.append(
                Row(
                    corpus: label, store: "PostgreSQL, exact", chunks: stats.chunks, indexSeconds: postgresSeconds,
                    embedded: stats.embedded, p50: ep50, p90: ep90, semanticP50: es50, recall: 1))
            if n == 1, let set = evaluation {
                // Which lexical engine keeps recall: the stored BM25 against PostgreSQL's full-text search.
                for mode in [RetrievalMode.lexical, .hybrid] {
                    let bm25 =
                        try set.recall(ks: [4]) { try postgres.search($0, mode: mode, k: 4).map(\.chunk.id) }.recall[4]
                        ?? 0
                    let fullText =
                        try set.recall(ks: [4]) {
                            try postgres.searchWithFullText($0, mode: mode, k: 4).map(\.chunk.id)
                        }.recall[4] ?? 0
                    lexicalComparison += String(format: "| %@ | %.3f | %.3f |\n", mode.rawValue, bm25, fullText)
                }
            }
            let start = Date()
            try postgres.buildHNSWIndex()
            let hnswSeconds = Date().timeIntervalSince(start)
            try postgres.setVectorSearch(.hnsw(efSearch: 40))
            let (hp50, hp90, hs50) = try searching(postgres, questions)
            let recall = try hnswRecall(postgres, questions, efSearch: 40)
            rows.append(
                Row(
                    corpus: label, store: "PostgreSQL, HNSW (ef_search 40)", chunks: stats.chunks,
                    indexSeconds: hnswSeconds,
                    embedded: 0, p50: hp50, p90: hp90, semanticP50: hs50, recall: recall))
            var sweep = [String]()
            for ef in [100, 400] {
                sweep.append(
                    String(format: "ef_search %d: %.3f", ef, try hnswRecall(postgres, questions, efSearch: ef)))
            }
            recallSweep += "- \(label): " + sweep.joined(separator: ", ") + "\n"
            try postgres.setVectorSearch(.exact)
            try postgres.drop()
        }
        var out =
            "| Corpus | Store | Chunks | Index (s) | Chunks/s | Hybrid query p50 (ms) | p90 (ms) | Semantic-only p50 (ms) | Semantic recall@10 vs exact |\n|---|---|---|---|---|---|---|---|---|\n"
        for r in rows {
            let rate =
                r.store.contains("HNSW")
                ? "(index build)" : String(format: "%.0f", Double(r.chunks) / max(r.indexSeconds, 1e-9))
            out += String(
                format: "| %@ | %@ | %d | %.1f | %@ | %.1f | %.1f | %.1f | %@ |\n", r.corpus, r.store, r.chunks,
                r.indexSeconds, rate,
                r.p50 * 1000, r.p90 * 1000, r.semanticP50 * 1000, r.recall.map { String(format: "%.3f", $0) } ?? "exact"
            )
        }
        out += "\nHNSW recall@10 against exact at other ef_search values:\n\n" + recallSweep
        return out + "\nLexical engine in the database, built-in corpus and its evaluation set:\n\n" + lexicalComparison
    }
}
