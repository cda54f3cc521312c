import Foundation
import LinearAlgebra
import Synchronization

/// Turns text into search terms: lower-case, diacritics folded, split into runs of letters and
/// digits, stop words dropped, each word stemmed (`EnglishStemmer`).
///
/// ```swift
/// Analyzer().terms("How do closures capture values?")  // ["closur", "captur", "valu"]
/// ```
public struct Analyzer: Sendable {
    /// Words dropped after lower-casing and folding, before stemming.
    public var stopWords: Set<String>
    /// The stemmer applied to each kept word; nil keeps words as they are.
    public var stemmer: EnglishStemmer?
    /// Stems already computed (a corpus repeats a few thousand words many times).
    private let stems = StemCache()

    /// An analyzer dropping `stopWords` and, when `stemming` is true, stemming with `EnglishStemmer`.
    public init(stopWords: Set<String> = Analyzer.englishStopWords, stemming: Bool = true) {
        self.stopWords = stopWords
        self.stemmer = stemming ? EnglishStemmer() : nil
    }

    /// The analyzed terms of `text`, in order (duplicates kept).
    public func terms(_ text: String) -> [String] {
        var terms = [String]()
        var word = String.UnicodeScalarView()
        var needsFolding = false
        func flush() {
            defer {
                word = String.UnicodeScalarView()
                needsFolding = false
            }
            guard !word.isEmpty else { return }
            var w = String(word)
            if needsFolding {
                w = w.folding(options: [.diacriticInsensitive, .caseInsensitive], locale: nil).lowercased()
            }
            guard !stopWords.contains(w) else { return }
            terms.append(stem(w))
        }
        for scalar in text.unicodeScalars {
            switch scalar.value {
            case 0x61...0x7A, 0x30...0x39: word.append(scalar)
            case 0x41...0x5A: word.append(Unicode.Scalar(scalar.value + 32)!)
            case 0x27, 0x2019: continue  // "don't" → "dont", "Swift's" → "swifts"
            case 0..<0x80: flush()
            default:
                let properties = scalar.properties
                if properties.isAlphabetic || properties.numericType != nil
                    || properties.generalCategory == .nonspacingMark
                {
                    word.append(scalar)
                    needsFolding = true
                } else {
                    flush()
                }
            }
        }
        flush()
        return terms
    }

    private func stem(_ word: String) -> String {
        guard let stemmer else { return word }
        if let known = stems.lookup(word) { return known }
        let stem = stemmer.stem(word)
        stems.store(word, stem)
        return stem
    }

    /// Common English words that carry no topic.
    public static let englishStopWords: Set<String> = [
        "a", "about", "above", "after", "again", "against", "all", "am", "an", "and", "any", "are", "as", "at",
        "be", "because", "been", "before", "being", "below", "between", "both", "but", "by", "can", "could",
        "did", "do", "does", "doing", "down", "during", "each", "few", "for", "from", "further", "had", "has",
        "have", "having", "he", "her", "here", "hers", "herself", "him", "himself", "his", "how", "i", "if",
        "in", "into", "is", "it", "its", "itself", "just", "me", "more", "most", "my", "myself", "no", "nor",
        "not", "now", "of", "off", "on", "once", "only", "or", "other", "our", "ours", "ourselves", "out",
        "over", "own", "same", "she", "should", "so", "some", "such", "than", "that", "the", "their", "theirs",
        "them", "themselves", "then", "there", "these", "they", "this", "those", "through", "to", "too",
        "under", "until", "up", "very", "was", "we", "were", "what", "when", "where", "which", "while", "who",
        "whom", "why", "will", "with", "would", "you", "your", "yours", "yourself", "yourselves", "s", "t",
        "dont", "doesnt", "isnt", "cant", "wont", "im", "ive", "youre", "whats", "hows", "there", "get", "got",
        "use", "using", "used", "make", "way", "want", "need", "also", "one", "like", "thing", "things",
    ]
}

/// A word → stem table shared by copies of one analyzer.
private final class StemCache: Sendable {
    private let table = Mutex<[String: String]>([:])

    func lookup(_ word: String) -> String? {
        table.withOrderedLock { $0[word] }
    }

    func store(_ word: String, _ stem: String) {
        table.withOrderedLock { table in
            if table.count < 1 << 20 { table[word] = stem }
        }
    }
}
