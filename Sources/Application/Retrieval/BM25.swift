import Foundation

/// Okapi BM25 over a fixed set of documents (k1 = 1.2, b = 0.75 by default).
///
/// `score(q, d) = Σ_t idf(t) · tf·(k1 + 1) / (tf + k1·(1 − b + b·|d|/avgdl))`, with
/// `idf(t) = ln(1 + (N − df + 0.5)/(df + 0.5))`, over the distinct analyzed terms of the query.
public struct BM25: Codable, Sendable {
    /// Term-frequency saturation (default 1.2): the larger, the more repeats of a term keep adding.
    public var k1: Double
    /// Length normalization (default 0.75): 0 ignores document length, 1 scales fully by `|d|/avgdl`.
    public var b: Double
    /// Per document: term → count.
    private(set) var termCounts: [[String: Int]]
    /// Per document: number of terms.
    private(set) var lengths: [Int]
    /// term → documents containing it (ascending); its count is the term's document frequency.
    private(set) var postings: [String: [Int]]

    /// Indexes already-analyzed documents.
    public init(documents: [[String]], k1: Double = 1.2, b: Double = 0.75) {
        self.init(
            termCounts: documents.map { terms in terms.reduce(into: [:]) { $0[$1, default: 0] += 1 } }, k1: k1, b: b)
    }

    /// Indexes documents given as term → count tables.
    init(termCounts: [[String: Int]], k1: Double, b: Double) {
        self.k1 = k1
        self.b = b
        self.termCounts = termCounts
        lengths = termCounts.map { $0.values.reduce(0, +) }
        var postings = [String: [Int]]()
        for (d, counts) in termCounts.enumerated() {
            for term in counts.keys { postings[term, default: []].append(d) }  // d ascends: lists stay sorted
        }
        self.postings = postings
    }

    /// The number of documents.
    public var count: Int { lengths.count }

    var averageLength: Double {
        lengths.isEmpty ? 0 : Double(lengths.reduce(0, +)) / Double(lengths.count)
    }

    /// The inverse document frequency of a term (0 for unknown terms).
    public func idf(_ term: String) -> Double {
        guard let df = postings[term]?.count else { return 0 }
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

    /// The plain-loop reference: scores one document term by term. Tests compare `search` to it.
    package func referenceScore(_ queryTerms: [String], document d: Int) -> Double {
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

extension BM25 {
    private enum CodingKeys: String, CodingKey {
        case k1, b, terms, counts
        /// The first format (kept readable) spelled every table out as JSON; its term counts
        /// are all that is needed to rebuild the rest.
        case termCounts
    }

    /// Stored compactly: the sorted distinct terms, and one binary table (base64 in JSON) of
    /// little-endian `UInt32`s holding, per document, its number of distinct terms followed by
    /// (term number, count) pairs in term order. Lengths, document frequencies and postings are
    /// rebuilt on load. A JSON object per document made saving 100,000 chunks several times
    /// slower and hundreds of MB heavier (Docs/Reliability.md).
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(k1, forKey: .k1)
        try c.encode(b, forKey: .b)
        let terms = postings.keys.sorted()
        let number = Dictionary(uniqueKeysWithValues: terms.enumerated().map { ($0.element, UInt32($0.offset)) })
        var table = [UInt32]()
        table.reserveCapacity(termCounts.count + 2 * termCounts.reduce(0) { $0 + $1.count })
        for counts in termCounts {
            table.append(UInt32(counts.count))
            for (term, count) in counts.map({ (number[$0.key]!, $0.value) }).sorted(by: { $0.0 < $1.0 }) {
                table.append(term)
                table.append(UInt32(clamping: count))
            }
        }
        try c.encode(terms, forKey: .terms)
        try c.encode(table.map(\.littleEndian).withUnsafeBufferPointer { Data(buffer: $0) }, forKey: .counts)
    }

    /// Reads either format.
    /// - Throws: `DecodingError.dataCorrupted` when the tables are inconsistent.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let k1 = try c.decode(Double.self, forKey: .k1)
        let b = try c.decode(Double.self, forKey: .b)
        if c.contains(.termCounts) {
            let termCounts = try c.decode([[String: Int]].self, forKey: .termCounts)
            guard termCounts.allSatisfy({ $0.values.allSatisfy { $0 > 0 } }) else {
                throw DecodingError.dataCorruptedError(
                    forKey: .termCounts, in: c, debugDescription: "BM25 counts must be positive")
            }
            self.init(termCounts: termCounts, k1: k1, b: b)
            return
        }
        let terms = try c.decode([String].self, forKey: .terms)
        let data = try c.decode(Data.self, forKey: .counts)
        func corrupt(_ why: String) -> DecodingError {
            DecodingError.dataCorruptedError(forKey: .counts, in: c, debugDescription: "BM25 table: \(why)")
        }
        guard data.count % 4 == 0 else { throw corrupt("length \(data.count) is not a multiple of 4") }
        let table = data.littleEndianWords()
        var termCounts = [[String: Int]]()
        var i = 0
        while i < table.count {
            let n = Int(table[i])
            i += 1
            guard n <= (table.count - i) / 2 else { throw corrupt("document \(termCounts.count) runs past the end") }
            var counts = [String: Int](minimumCapacity: n)
            for _ in 0..<n {
                let term = Int(table[i])
                let count = Int(table[i + 1])
                i += 2
                guard term < terms.count, count > 0, counts.updateValue(count, forKey: terms[term]) == nil else {
                    throw corrupt("bad entry in document \(termCounts.count)")
                }
            }
            termCounts.append(counts)
        }
        self.init(termCounts: termCounts, k1: k1, b: b)
    }
}

extension Data {
    /// The bytes read as little-endian `UInt32`s (trailing bytes short of a word are ignored).
    fileprivate func littleEndianWords() -> [UInt32] {
        var words = [UInt32](repeating: 0, count: count / 4)
        _ = words.withUnsafeMutableBytes { copyBytes(to: $0) }
        return words.map { UInt32(littleEndian: $0) }
    }
}
