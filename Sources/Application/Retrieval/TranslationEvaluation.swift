import Foundation
import LinearAlgebra

/// A translation-retrieval set: the same sentences in several languages, to measure whether a
/// model is cross-lingual (a sentence's nearest neighbour in another language is its translation).
///
/// File format: `{"languages": ["en", "fr", …], "sentences": [{"id": "s01", "en": "…", "fr": "…"}, …]}`;
/// every sentence has a text in every listed language.
public struct TranslationSet: Sendable {
    /// The languages, pivot first.
    public let languages: [String]
    /// The sentence ids, in file order.
    public let ids: [String]
    /// Texts by language, each in `ids` order.
    public let texts: [String: [String]]

    /// Reads a set.
    /// - Throws: `RetrievalError.unreadable` naming the file and the problem.
    public init(contentsOf url: URL) throws {
        func fail(_ reason: String) -> RetrievalError { .unreadable(path: url.path, reason: reason) }
        guard let data = try? Data(contentsOf: url) else { throw fail("cannot be read") }
        guard let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            throw fail("not a JSON object")
        }
        guard let languages = object["languages"] as? [String], languages.count >= 2 else {
            throw fail("\"languages\" must list at least two languages")
        }
        guard Set(languages).count == languages.count else { throw fail("\"languages\" repeats a language") }
        guard let sentences = object["sentences"] as? [[String: Any]], sentences.count >= 2 else {
            throw fail("\"sentences\" must hold at least two sentences")
        }
        var ids = [String]()
        var texts = [String: [String]]()
        for (n, sentence) in sentences.enumerated() {
            ids.append(sentence["id"] as? String ?? "#\(n + 1)")
            for language in languages {
                guard let text = sentence[language] as? String,
                    !text.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty
                else {
                    throw fail("sentence \(ids[n]) has no \(language) text")
                }
                texts[language, default: []].append(text)
            }
        }
        self.languages = languages
        self.ids = ids
        self.texts = texts
    }

    /// Accuracy of translation retrieval between the pivot (the first language) and one other.
    public struct Accuracy: Sendable {
        /// The other language.
        public var language: String
        /// Share of its sentences whose nearest pivot sentence (cosine) is the translation.
        public var toPivot: Double
        /// Share of pivot sentences whose nearest sentence in `language` is the translation.
        public var fromPivot: Double
        /// The ids of the sentences whose nearest pivot sentence was wrong, with the wrong id.
        public var misses: [(id: String, found: String)]
    }

    /// Translation-retrieval accuracy for every language against the pivot.
    /// - Parameter vectors: unit-length sentence vectors for texts, in order, one per text.
    /// - Throws: what `vectors` throws; `RetrievalError.invalidArgument` when it returns another count.
    public func accuracy(vectors: ([String]) throws -> [[Float]]) throws -> [Accuracy] {
        let pivot = languages[0]
        let pivotVectors = try vectors(texts[pivot]!)
        guard pivotVectors.count == ids.count else {
            throw RetrievalError.invalidArgument("\(pivotVectors.count) vectors for \(ids.count) sentences")
        }
        return try languages.dropFirst().map { language in
            let other = try vectors(texts[language]!)
            guard other.count == ids.count else {
                throw RetrievalError.invalidArgument("\(other.count) vectors for \(ids.count) sentences")
            }
            func nearest(_ query: [Float], among candidates: [[Float]]) -> Int {
                var best = 0
                var bestScore = -Float.infinity
                for (j, candidate) in candidates.enumerated() {
                    let score = VectorMath.dot(query, candidate)
                    if score > bestScore {
                        best = j
                        bestScore = score
                    }
                }
                return best
            }
            var misses = [(id: String, found: String)]()
            var toPivot = 0
            var fromPivot = 0
            for i in ids.indices {
                let found = nearest(other[i], among: pivotVectors)
                if found == i { toPivot += 1 } else { misses.append((ids[i], ids[found])) }
                if nearest(pivotVectors[i], among: other) == i { fromPivot += 1 }
            }
            return Accuracy(
                language: language, toPivot: Double(toPivot) / Double(ids.count),
                fromPivot: Double(fromPivot) / Double(ids.count), misses: misses)
        }
    }
}
