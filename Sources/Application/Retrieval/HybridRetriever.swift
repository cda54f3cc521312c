import Foundation

/// How a question is matched against chunks.
public enum RetrievalMode: String, Sendable, CaseIterable, Codable {
    /// BM25 only.
    case lexical
    /// Cosine similarity of embeddings only.
    case semantic
    /// Both, fused as `RetrievalSettings.fusion` says.
    case hybrid
}

/// One retrieved chunk and its score.
public struct RetrievalHit: Sendable, Equatable {
    /// The chunk.
    public var chunk: Chunk
    /// The score the hits are ranked by: BM25 in lexical mode, cosine similarity in semantic
    /// mode, the fused score (see `Fusion`) in hybrid mode.
    ///
    /// `Double`, where `SearchHit.score` (a vector index's cosine similarity) is `Float`, on
    /// purpose: BM25 and fusion are computed in `Double`, and `embeddings search --json` prints
    /// this value as it is. Rounding it to `Float` would change the printed digits and could
    /// reorder near-ties. A semantic-mode score is the index's `Float` cosine, widened exactly.
    public var score: Double
    /// The chunk's rank (from 1) in the lexical list, if it was there.
    public var lexicalRank: Int?
    /// The chunk's rank (from 1) in the semantic list, if it was there.
    public var semanticRank: Int?

    /// A hit from its parts.
    public init(chunk: Chunk, score: Double, lexicalRank: Int?, semanticRank: Int?) {
        self.chunk = chunk
        self.score = score
        self.lexicalRank = lexicalRank
        self.semanticRank = semanticRank
    }
}

/// How hybrid retrieval combines its two ranked lists.
public enum Fusion: String, Sendable, Equatable, Codable, CaseIterable {
    /// Weighted reciprocal rank fusion: `Σ weight / (k + rank)`.
    case reciprocalRank
    /// Weighted sum of scores scaled to [0, 1] within each list (BM25 ÷ best; cosine min–max).
    case relativeScore
}

/// The settings of hybrid retrieval. Defaults were chosen by measurement (Docs/Retrieval.md).
public struct RetrievalSettings: Sendable, Equatable, Codable {
    /// How the lexical and semantic lists are combined. Relative-score fusion measured best on
    /// both evaluation corpora (Docs/Retrieval.md); weighted RRF remains available.
    public var fusion: Fusion = .relativeScore
    /// Weight of the lexical list in the fusion.
    public var lexicalWeight: Double = 0.4
    /// Weight of the semantic list in the fusion.
    public var semanticWeight: Double = 0.6
    /// The RRF constant: `weight / (k + rank)`.
    public var rrfK: Double = 60
    /// Lexical hits scoring under this fraction of the best are dropped.
    public var lexicalFloor: Double = 0.25
    /// How many semantic candidates enter the fusion.
    public var semanticCandidates: Int = 50
    /// Semantic-only mode returns nothing below this cosine similarity.
    public var minimumSimilarity: Float = 0.35
    /// Hybrid mode returns nothing when no chunk reaches this cosine similarity to the question:
    /// an off-topic question that happens to share a word with the corpus ("mosquito bites") is
    /// not answered from whatever mentions that word. Measured: the best similarity of every
    /// on-topic question of both evaluation sets is ≥ 0.29, of every off-topic one ≤ 0.23
    /// (Docs/Retrieval.md).
    public var offTopicSimilarity: Float = 0.25

    /// The measured defaults.
    public init() {}

    private enum CodingKeys: String, CodingKey {
        case fusion, lexicalWeight, semanticWeight, rrfK, lexicalFloor, semanticCandidates, minimumSimilarity,
            offTopicSimilarity
    }

    /// Decodes settings; keys missing from older index files keep their defaults.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        fusion = try c.decodeIfPresent(Fusion.self, forKey: .fusion) ?? fusion
        lexicalWeight = try c.decodeIfPresent(Double.self, forKey: .lexicalWeight) ?? lexicalWeight
        semanticWeight = try c.decodeIfPresent(Double.self, forKey: .semanticWeight) ?? semanticWeight
        rrfK = try c.decodeIfPresent(Double.self, forKey: .rrfK) ?? rrfK
        lexicalFloor = try c.decodeIfPresent(Double.self, forKey: .lexicalFloor) ?? lexicalFloor
        semanticCandidates = try c.decodeIfPresent(Int.self, forKey: .semanticCandidates) ?? semanticCandidates
        minimumSimilarity = try c.decodeIfPresent(Float.self, forKey: .minimumSimilarity) ?? minimumSimilarity
        offTopicSimilarity = try c.decodeIfPresent(Float.self, forKey: .offTopicSimilarity) ?? offTopicSimilarity
    }
}

/// Hybrid search over chunks: BM25 and embeddings, fused by relative-score fusion or weighted
/// reciprocal rank fusion (`RetrievalSettings.fusion`; relative scores by default).
///
/// A question that shares no term with the corpus retrieves nothing in lexical and hybrid modes
/// (the lexical engine gates everything); in hybrid mode, neither does one that no chunk resembles
/// (`RetrievalSettings.offTopicSimilarity`). Several chunks of one section count once: only the
/// best of them is returned.
public struct HybridRetriever: Sendable {
    /// Fusion, weights and thresholds.
    public var settings: RetrievalSettings
    /// Turns questions into BM25 terms; it must match the analyzer the BM25 index was built with.
    public let analyzer: Analyzer

    /// A retriever with these settings and analyzer.
    public init(settings: RetrievalSettings = RetrievalSettings(), analyzer: Analyzer = Analyzer()) {
        self.settings = settings
        self.analyzer = analyzer
    }

    /// The section a chunk belongs to: its id without the `-N` piece suffix.
    public static func sectionID(of id: String) -> String {
        guard let hash = id.lastIndex(of: "#") else { return id }
        let label = id[id.index(after: hash)...]
        if let dash = label.lastIndex(of: "-"), let n = Int(label[label.index(after: dash)...]), n >= 2 {
            return String(id[..<dash])
        }
        return id
    }

    /// BM25 hits after the relative floor: `(chunk index, score)`, best first.
    public func lexicalHits(_ question: String, bm25: BM25) -> [(document: Int, score: Double)] {
        applyingLexicalFloor(bm25.search(analyzer.terms(question)))
    }

    /// BM25 hits (best first, from any engine that scores like `BM25`) without those under
    /// `RetrievalSettings.lexicalFloor` of the best; none when the best scores 0.
    package func applyingLexicalFloor(_ hits: [(document: Int, score: Double)]) -> [(document: Int, score: Double)] {
        guard let best = hits.first?.score, best > 0 else { return [] }
        return hits.filter { $0.score >= settings.lexicalFloor * best }
    }

    /// Retrieves up to `k` chunks, best first, at most one per section (`k ≤ 0` gives none).
    /// `semantic` lists `(chunk index, cosine similarity to the question)` pairs from the vector
    /// index, best first; pass `nil` in lexical mode. Ties rank the lower chunk index first.
    public func retrieve(
        _ question: String, chunks: [Chunk], bm25: BM25, semantic: [(document: Int, score: Float)]?,
        mode: RetrievalMode, k: Int
    ) -> [RetrievalHit] {
        guard k > 0, !chunks.isEmpty else { return [] }
        let lexical = mode == .semantic ? [] : lexicalHits(question, bm25: bm25)
        return fuse(lexical: lexical, semantic: semantic, mode: mode, k: k) {
            chunks.indices.contains($0) ? chunks[$0] : nil
        }
    }

    /// The fusion step of `retrieve` over lists computed elsewhere (a database, say): `lexical`
    /// after `applyingLexicalFloor`, `semantic` as in `retrieve`, and `chunk` giving the chunk of
    /// a document number in either list. Documents are numbered in corpus order, as chunk indexes
    /// are, so ties break the same way.
    package func fuse(
        lexical: [(document: Int, score: Double)], semantic: [(document: Int, score: Float)]?, mode: RetrievalMode,
        k: Int,
        chunk: (Int) -> Chunk?
    ) -> [RetrievalHit] {
        guard k > 0 else { return [] }
        if mode != .semantic, lexical.isEmpty { return [] }
        if mode == .hybrid, let best = semantic?.first?.score, best < settings.offTopicSimilarity { return [] }
        var fused = [Int: (score: Double, lexical: Int?, semantic: Int?)]()
        switch mode {
        case .lexical:
            for (rank, hit) in lexical.enumerated() { fused[hit.document] = (hit.score, rank + 1, nil) }
        case .semantic:
            for (rank, hit) in (semantic ?? []).enumerated() where hit.score >= settings.minimumSimilarity {
                fused[hit.document] = (Double(hit.score), nil, rank + 1)
            }
        case .hybrid where settings.fusion == .relativeScore:
            let best = lexical.first?.score ?? 1
            for (rank, hit) in lexical.enumerated() {
                fused[hit.document, default: (0, nil, nil)].score += settings.lexicalWeight * hit.score / best
                fused[hit.document]?.lexical = rank + 1
            }
            let candidates = (semantic ?? []).prefix(settings.semanticCandidates)
            if let top = candidates.first?.score, let bottom = candidates.last?.score {
                let spread = max(Double(top - bottom), 1e-6)
                for (rank, hit) in candidates.enumerated() {
                    fused[hit.document, default: (0, nil, nil)].score +=
                        settings.semanticWeight * Double(hit.score - bottom) / spread
                    fused[hit.document]?.semantic = rank + 1
                }
            }
        case .hybrid:
            for (rank, hit) in lexical.enumerated() {
                fused[hit.document, default: (0, nil, nil)].score +=
                    settings.lexicalWeight / (settings.rrfK + Double(rank + 1))
                fused[hit.document]?.lexical = rank + 1
            }
            for (rank, hit) in (semantic ?? []).prefix(settings.semanticCandidates).enumerated() {
                fused[hit.document, default: (0, nil, nil)].score +=
                    settings.semanticWeight / (settings.rrfK + Double(rank + 1))
                fused[hit.document]?.semantic = rank + 1
            }
        }
        let ordered = fused.sorted {
            $0.value.score > $1.value.score || ($0.value.score == $1.value.score && $0.key < $1.key)
        }
        var seenSections = Set<String>()
        var hits = [RetrievalHit]()
        for (document, value) in ordered {
            guard let chunk = chunk(document) else { continue }
            guard seenSections.insert(Self.sectionID(of: chunk.id)).inserted else { continue }
            hits.append(
                RetrievalHit(chunk: chunk, score: value.score, lexicalRank: value.lexical, semanticRank: value.semantic)
            )
            if hits.count == k { break }
        }
        return hits
    }
}
