/// Hugging Face's `WordPiece` model: greedy longest-match-first over a vocabulary, continuation
/// pieces prefixed with `##`; a word with any unmatched remainder, or longer than
/// `maximumCharactersPerWord` scalars, becomes the unknown token as a whole.
public struct WordPieceModel: Sendable {
    /// The vocabulary.
    public let vocabulary: Vocabulary
    /// The unknown token, e.g. `[UNK]`.
    public let unknownToken: String
    /// The prefix of continuation pieces.
    public let continuingSubwordPrefix: String
    /// Longer words (in Unicode scalars, after normalization) become the unknown token.
    public let maximumCharactersPerWord: Int
    let unknownID: Int

    /// - Precondition: `unknownToken` is in the vocabulary (the tokenizer checks this with an error).
    public init(
        vocabulary: Vocabulary, unknownToken: String = "[UNK]", continuingSubwordPrefix: String = "##",
        maximumCharactersPerWord: Int = 100
    ) {
        precondition(vocabulary.id(for: unknownToken) != nil, "unknown token missing from the vocabulary")
        self.vocabulary = vocabulary
        self.unknownToken = unknownToken
        self.continuingSubwordPrefix = continuingSubwordPrefix
        self.maximumCharactersPerWord = maximumCharactersPerWord
        self.unknownID = vocabulary.id(for: unknownToken)!
    }

    /// A piece of a word: its id, its text, and the scalar range it covers in the word.
    struct Piece {
        var id: Int
        var text: String
        var range: Range<Int>
    }

    /// Splits one word (already normalized) into pieces.
    func pieces(of word: ArraySlice<Unicode.Scalar>) -> [Piece] {
        let count = word.count
        let whole = 0..<count
        guard count <= maximumCharactersPerWord else { return [Piece(id: unknownID, text: unknownToken, range: whole)] }
        var result = [Piece]()
        var start = 0
        let base = word.startIndex
        while start < count {
            // No vocabulary entry is longer than `longestTokenLength` scalars, so longer candidates
            // cannot match: starting there gives the same answer as starting at the word's end.
            var end = min(count, start + vocabulary.longestTokenLength)
            var found: Piece? = nil
            while start < end {
                var candidate = String(String.UnicodeScalarView(word[(base + start)..<(base + end)]))
                if start > 0 { candidate = continuingSubwordPrefix + candidate }
                if let id = vocabulary.id(for: candidate) {
                    found = Piece(id: id, text: candidate, range: start..<end)
                    break
                }
                end -= 1
            }
            guard let piece = found else { return [Piece(id: unknownID, text: unknownToken, range: whole)] }
            result.append(piece)
            start = end
        }
        return result
    }
}
