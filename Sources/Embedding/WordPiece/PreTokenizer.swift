/// Hugging Face's `BertPreTokenizer`: splits normalized text into words at white space (dropped)
/// and around every punctuation character (kept as a word of its own).
public struct BertPreTokenizer: Sendable {
    /// A pre-tokenizer; it has no settings.
    public init() {}

    /// Word boundaries as half-open ranges into `text`.
    func split(_ text: [AlignedScalar]) -> [Range<Int>] {
        var words = [Range<Int>]()
        var start: Int? = nil
        for (i, item) in text.enumerated() {
            if BertNormalizer.isWhitespace(item.scalar) {
                if let s = start {
                    words.append(s..<i)
                    start = nil
                }
            } else if BertNormalizer.isPunctuation(item.scalar) {
                if let s = start {
                    words.append(s..<i)
                    start = nil
                }
                words.append(i..<(i + 1))
            } else if start == nil {
                start = i
            }
        }
        if let s = start { words.append(s..<text.count) }
        return words
    }
}
