import Foundation

/// Turns text into search terms: lower-case, diacritics folded, split into runs of letters and
/// digits, stop words dropped, each word stemmed (`EnglishStemmer`).
///
/// ```swift
/// Analyzer().terms("How do closures capture values?")  // ["closur", "captur", "valu"]
/// ```
public struct Analyzer: Sendable {
    public var stopWords: Set<String>
    public var stemmer: EnglishStemmer?

    public init(stopWords: Set<String> = Analyzer.englishStopWords, stemming: Bool = true) {
        self.stopWords = stopWords
        self.stemmer = stemming ? EnglishStemmer() : nil
    }

    /// The analyzed terms of `text`, in order (duplicates kept).
    public func terms(_ text: String) -> [String] {
        let folded = text.folding(options: [.diacriticInsensitive, .caseInsensitive], locale: nil).lowercased()
        var terms = [String]()
        var word = ""
        func flush() {
            defer { word = "" }
            guard !word.isEmpty, !stopWords.contains(word) else { return }
            terms.append(stemmer?.stem(word) ?? word)
        }
        for character in folded {
            if character.isLetter || character.isNumber {
                word.append(character)
            } else if character == "'" || character == "’" {
                continue  // "don't" → "dont", "Swift's" → "swifts"
            } else {
                flush()
            }
        }
        flush()
        return terms
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
