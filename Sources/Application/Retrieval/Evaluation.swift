import Foundation

/// An evaluation set (see Docs/Retrieval.md): questions and the chunk ids (or id prefixes) that answer them.
public struct EvaluationSet: Codable, Sendable {
    /// One question and what should answer it.
    public struct Case: Codable, Sendable, Equatable {
        /// The question as a user would ask it.
        public var question: String
        /// Chunk ids, or id prefixes, any one of which answers it; empty for an off-topic question.
        public var expected: [String]
        /// A label for grouping results (the fixtures use `keyword`, `natural`, `paraphrase`,
        /// `off-topic`); not used in scoring.
        public var kind: String?

        /// A case from its parts.
        public init(question: String, expected: [String], kind: String? = nil) {
            self.question = question
            self.expected = expected
            self.kind = kind
        }
    }

    /// The questions, in file order.
    public var cases: [Case]

    /// A set of these cases.
    public init(cases: [Case]) { self.cases = cases }

    /// Reads `{"cases": [{"question", "expected"}]}`.
    /// - Throws: `RetrievalError.unreadable` or `.corruptStore` (not valid JSON of that shape).
    public init(contentsOf url: URL) throws {
        let data: Data
        do { data = try Data(contentsOf: url) } catch {
            throw RetrievalError.unreadable(path: url.path, reason: error.localizedDescription)
        }
        do { self = try JSONDecoder().decode(EvaluationSet.self, from: data) } catch {
            throw RetrievalError.corruptStore(path: url.path, reason: "not an evaluation set: \(error)")
        }
    }

    /// Whether a case passes at `k`: some top-k id starts with an expected string; a case that
    /// expects nothing passes when nothing is retrieved.
    public static func passes(_ c: Case, hits: [String], k: Int) -> Bool {
        let top = hits.prefix(k)
        if c.expected.isEmpty { return top.isEmpty }
        return top.contains { id in c.expected.contains { id.hasPrefix($0) } }
    }

    /// Recall at each of `ks`: the fraction of cases that pass, plus the failing questions at the largest k.
    public func recall(ks: [Int], retrieve: (String) throws -> [String]) rethrows -> (
        recall: [Int: Double], failures: [Case]
    ) {
        var passed = [Int: Int]()
        var failures = [Case]()
        let largest = ks.max() ?? 0
        for c in cases {
            let hits = try retrieve(c.question)
            for k in ks where Self.passes(c, hits: hits, k: k) { passed[k, default: 0] += 1 }
            if !Self.passes(c, hits: hits, k: largest) { failures.append(c) }
        }
        let total = Double(max(cases.count, 1))
        return (Dictionary(uniqueKeysWithValues: ks.map { ($0, Double(passed[$0] ?? 0) / total) }), failures)
    }
}
