import Foundation

/// Okapi BM25 over a fixed set of documents (k1 = 1.2, b = 0.75 by default).
///
/// `score(q, d) = Σ_t idf(t) · tf·(k1 + 1) / (tf + k1·(1 − b + b·|d|/avgdl))`, with
/// `idf(t) = ln(1 + (N − df + 0.5)/(df + 0.5))`, over the distinct analyzed terms of the query.
public struct BM25: Codable, Sendable {
    public var k1: Double
    public var b: Double
    /// Per document: term → count.
    private(set) var termCounts: [[String: Int]]
    /// Per document: number of terms.
    private(set) var lengths: [Int]
    /// term → number of documents containing it.
    private(set) var documentFrequency: [String: Int]
    /// term → documents containing it (ascending).
    private(set) var postings: [String: [Int]]

    /// Indexes already-analyzed documents.
    public init(documents: [[String]], k1: Double = 1.2, b: Double = 0.75) {
        self.k1 = k1
        self.b = b
        termCounts = documents.map { terms in terms.reduce(into: [:]) { $0[$1, default: 0] += 1 } }
        lengths = documents.map(\.count)
        var df = [String: Int]()
        var postings = [String: [Int]]()
        for (d, counts) in termCounts.enumerated() {
            for term in counts.keys {
                df[term, default: 0] += 1
                postings[term, default: []].append(d)
            }
        }
        documentFrequency = df
        self.postings = postings.mapValues { $0.sorted() }
    }

    /// The number of documents.
    public var count: Int { lengths.count }

    var averageLength: Double {
        lengths.isEmpty ? 0 : Double(lengths.reduce(0, +)) / Double(lengths.count)
    }

    /// The inverse document frequency of a term (0 for unknown terms).
    public func idf(_ term: String) -> Double {
        guard let df = documentFrequency[term] else { return 0 }
        return log(1 + (Double(count) - Double(df) + 0.5) / (Double(df) + 0.5))
    }

    /// Scores of every document that shares at least one term with the query, best first
    /// (ties: lower document index first).
    /// - Complexity: O(Σ postings of the query's terms).
    public func search(_ queryTerms: [String]) -> [(document: Int, score: Double)] {
        var scores = [Int: Double]()
        let average = max(averageLength, 1e-9)
        for term in Set(queryTerms) {
            guard let documents = postings[term] else { continue }
            let weight = idf(term)
            for d in documents {
                let tf = Double(termCounts[d][term] ?? 0)
                let norm = k1 * (1 - b + b * Double(lengths[d]) / average)
                scores[d, default: 0] += weight * tf * (k1 + 1) / (tf + norm)
            }
        }
        return scores.map { ($0.key, $0.value) }.sorted { $0.1 > $1.1 || ($0.1 == $1.1 && $0.0 < $1.0) }
    }

    /// The plain-loop reference: scores every document term by term. Tests compare `search` to it.
    public func referenceScore(_ queryTerms: [String], document d: Int) -> Double {
        var total = 0.0
        let average = max(averageLength, 1e-9)
        for term in Set(queryTerms) {
            let tf = Double(termCounts[d][term] ?? 0)
            guard tf > 0 else { continue }
            total += idf(term) * tf * (k1 + 1) / (tf + k1 * (1 - b + b * Double(lengths[d]) / average))
        }
        return total
    }
}
