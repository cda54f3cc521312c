/// What the encoders need from a tokenizer, whatever its algorithm: ids for a text, each token
/// tied to its range in the caller's string, with the model's begin and end tokens around them.
///
/// `BertTokenizer` (WordPiece) and `XLMRobertaTokenizer` (SentencePiece unigram) conform.
public protocol TextTokenizer: Sendable {
    /// The most tokens one text may have, special tokens included; longer texts are truncated.
    var maximumLength: Int { get }
    /// A short hex fingerprint of the vocabulary and settings, so index files can tell tokenizers apart.
    var fingerprint: String { get }
    /// The id of the token put first (`[CLS]`, `<s>`).
    var beginTokenID: Int { get }
    /// The id of the token put last (`[SEP]`, `</s>`).
    var endTokenID: Int { get }
    /// The begin token, the content tokens (at most `maximumLength − 2`), the end token.
    func tokenize(_ text: String) -> TokenizedText
    /// The content tokens of `text`, without begin and end tokens and without truncation.
    func tokenizeWithoutSpecialTokens(_ text: String) -> [Token]
    /// Tokenizes `prefix + text` with every range relative to `text`: tokens made only of the
    /// prefix are marked special and get an empty range at the start of `text`, and a token that
    /// spans the join starts at `text`'s start.
    func tokenize(_ text: String, prefix: String) -> TokenizedText
    /// The content tokens of `text` (as `tokenizeWithoutSpecialTokens`), produced lazily where
    /// the tokenizer can read a text in blocks, so memory follows the block, not the text.
    func lazyContentTokens(of text: String) -> AnyIterator<Token>
}

extension TextTokenizer {
    /// All content tokens at once, handed out one by one (for tokenizers without a block reader).
    public func lazyContentTokens(of text: String) -> AnyIterator<Token> {
        AnyIterator(tokenizeWithoutSpecialTokens(text).makeIterator())
    }

    /// Tokenizes `prefix + text` and moves every range into `text` (see the requirement).
    public func tokenize(_ text: String, prefix: String) -> TokenizedText {
        guard !prefix.isEmpty else { return tokenize(text) }
        let whole = tokenize(prefix + text)
        let shift = prefix.utf8.count
        let utf8 = text.utf8
        let wholeUTF8 = whole.string.utf8
        func moved(_ index: String.Index) -> String.Index {
            let byte = wholeUTF8.distance(from: wholeUTF8.startIndex, to: index) - shift
            return utf8.index(utf8.startIndex, offsetBy: min(max(0, byte), utf8.count))
        }
        let tokens = whole.tokens.map { token -> Token in
            let upper = wholeUTF8.distance(from: wholeUTF8.startIndex, to: token.range.upperBound)
            if !token.isSpecial, upper <= shift {
                return Token(id: token.id, text: token.text, range: text.startIndex..<text.startIndex, isSpecial: true)
            }
            let lower = moved(token.range.lowerBound)
            return Token(
                id: token.id, text: token.text, range: lower..<max(lower, moved(token.range.upperBound)),
                isSpecial: token.isSpecial)
        }
        return TokenizedText(string: text, tokens: tokens, isTruncated: whole.isTruncated)
    }
}
