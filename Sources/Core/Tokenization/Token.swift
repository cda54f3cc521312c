/// One token of tokenized text.
public struct Token: Equatable, Sendable {
    /// The vocabulary id.
    public var id: Int
    /// The token text as in the vocabulary (`##` continuation prefix included).
    public var text: String
    /// The token's range in the caller's original string; empty for added special tokens.
    public var range: Range<String.Index>
    /// Whether the tokenizer added this token (`[CLS]`, `[SEP]`) rather than reading it from the text.
    public var isSpecial: Bool

    /// A token from its parts; `range` must index the string the token is reported against.
    public init(id: Int, text: String, range: Range<String.Index>, isSpecial: Bool) {
        self.id = id
        self.text = text
        self.range = range
        self.isSpecial = isSpecial
    }
}

/// A tokenized string: its tokens, in order, and the string they index into.
public struct TokenizedText: Sendable {
    /// The original string.
    public let string: String
    /// The tokens, `[CLS]` first and `[SEP]` last.
    public let tokens: [Token]
    /// Whether content tokens were dropped to fit the maximum length.
    public let isTruncated: Bool

    /// A tokenized string from its parts; every token's range must index `string`.
    public init(string: String, tokens: [Token], isTruncated: Bool) {
        self.string = string
        self.tokens = tokens
        self.isTruncated = isTruncated
    }

    /// The token ids.
    public var ids: [Int] { tokens.map(\.id) }
    /// The token ranges.
    public var ranges: [Range<String.Index>] { tokens.map(\.range) }

    /// Each token's `[start, end)` offsets in Unicode scalars, as Hugging Face reports them
    /// (special tokens added by the tokenizer report `(0, 0)`).
    public var scalarOffsets: [(start: Int, end: Int)] {
        let scalars = string.unicodeScalars
        return tokens.map { token in
            if token.isSpecial { return (0, 0) }
            return (
                scalars.distance(from: scalars.startIndex, to: token.range.lowerBound),
                scalars.distance(from: scalars.startIndex, to: token.range.upperBound)
            )
        }
    }
}
