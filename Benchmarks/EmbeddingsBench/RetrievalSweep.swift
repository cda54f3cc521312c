import Embeddings
import Foundation
import LinearAlgebra
import Retrieval

/// `embeddings-bench sweep`: recall@2 and recall@4 of every mode, with and without late chunking,
/// and a grid of fusion weights, on a corpus and its evaluation set. Used to choose the defaults.
enum RetrievalSweep {
    struct Line {
        var label: String
        var recall2: Double
        var recall4: Double
    }

    static func run(corpus: URL, cases: URL, embedding: ContextualEmbedding) throws -> String {
        let set = try EvaluationSet(contentsOf: cases)
        var out =
            "### Retrieval — \(corpus.lastPathComponent), \(set.cases.count) questions, on \(CPUInfo.current.modelName)\n\n"
        var rows = [[String]]()
        var best: (Double, Double, String) = (0, 0, "")
        for late in [false, true] {
            let store = EmbeddingStore(embedding: embedding, lateChunking: late)
            let start = now()
            let (stats, _) = try store.index(folder: corpus)
            let seconds = now() - start
            let candidates = try set.cases.map { try store.semanticCandidates($0.question, count: 100) }
            func recall(_ mode: RetrievalMode, _ settings: RetrievalSettings) -> (Double, Double) {
                var hits = [[String]]()
                for (c, semantic) in zip(set.cases, candidates) {
                    hits.append(
                        store.search(c.question, semantic: semantic, mode: mode, k: 4, settings: settings).map(
                            \.chunk.id))
                }
                var i = 0
                let r = set.recall(ks: [2, 4]) { _ in
                    defer { i += 1 }
                    return hits[i]
                }.recall
                return (r[2] ?? 0, r[4] ?? 0)
            }
            let name = late ? "late chunking" : "chunk embeddings"
            rows.append([
                "indexing (\(name))",
                String(
                    format: "%d chunks in %.1f s (%.0f chunks/s)", stats.chunks, seconds, Double(stats.chunks) / seconds
                ), "", "",
            ])
            let reindexStart = now()
            let (again, _) = try store.index(folder: corpus)
            let reindex = now() - reindexStart
            rows.append([
                "re-indexing, unchanged (\(name))",
                String(format: "%.2f s, %d embedded, %.0f× faster", reindex, again.embedded, seconds / reindex), "", "",
            ])
            var latencies = [Double]()
            for c in set.cases {
                let t = now()
                _ = try store.search(c.question, mode: .hybrid, k: 4)
                latencies.append(now() - t)
            }
            latencies.sort()
            rows.append([
                "question → hits, hybrid, embedding included (\(name))",
                String(
                    format: "p50 %.1f ms, p90 %.1f ms", latencies[latencies.count / 2] * 1000,
                    latencies[latencies.count * 9 / 10] * 1000), "", "",
            ])
            for mode in [RetrievalMode.lexical, .semantic] {
                let (r2, r4) = recall(mode, RetrievalSettings())
                rows.append([mode.rawValue, name, String(format: "%.3f", r2), String(format: "%.3f", r4)])
            }
            for lexicalWeight in stride(from: 0.3, through: 0.7, by: 0.1) {
                for (k, fusion) in [(60.0, Fusion.reciprocalRank), (20.0, .reciprocalRank), (0, .relativeScore)] {
                    var settings = RetrievalSettings()
                    settings.fusion = fusion
                    settings.lexicalWeight = lexicalWeight
                    settings.semanticWeight = 1 - lexicalWeight
                    settings.rrfK = k
                    let (r2, r4) = recall(.hybrid, settings)
                    let label =
                        fusion == .reciprocalRank
                        ? String(format: "hybrid RRF %.1f/%.1f, k %.0f", lexicalWeight, 1 - lexicalWeight, k)
                        : String(format: "hybrid relative score %.1f/%.1f", lexicalWeight, 1 - lexicalWeight)
                    rows.append([label, name, String(format: "%.3f", r2), String(format: "%.3f", r4)])
                    if r4 + r2 / 10 > best.0 + best.1 / 10 { best = (r4, r2, label + ", " + name) }
                }
            }
        }
        out += table(["Setting", "Vectors", "recall@2", "recall@4"], rows)
        out +=
            "\nBest hybrid setting here: \(best.2) (recall@4 \(String(format: "%.3f", best.0)), recall@2 \(String(format: "%.3f", best.1))).\n"
        return out
    }
}
