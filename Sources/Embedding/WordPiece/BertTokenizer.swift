import Foundation
import Hashing

/// Hugging Face's fast BERT tokenizer (`BertNormalizer`, `BertPreTokenizer`, `WordPiece`, and the
/// `[CLS] … [SEP]` template), producing the same ids and offsets, with every token's range in the
/// caller's original string.
///
/// ```swift
/// let tokenizer = try BertTokenizer(contentsOf: modelFolder, maximumLength: 256)
/// let tokens = tokenizer.tokenize("Héllo, wörld!")
/// tokens.ids                       // [101, 7592, 1010, 2088, 999, 102]
/// tokens.string[tokens.tokens[1].range]   // "Héllo"
/// ```
public struct BertTokenizer: TextTokenizer {
    /// The normalizer.
    public let normalizer: BertNormalizer
    /// The pre-tokenizer.
    public let preTokenizer = BertPreTokenizer()
    /// The WordPiece model and its vocabulary.
    public let model: WordPieceModel
    /// The most tokens one text may have, `[CLS]` and `[SEP]` included; longer texts are truncated.
    public let maximumLength: Int
    /// Special tokens matched literally in the raw text (before normalization), longest first.
    public let specialTokens: [String]
    /// The classifier token put first.
    public let classifierToken: String
    /// The separator token put last.
    public let separatorToken: String
    private let specialScalars: [(text: String, scalars: [Unicode.Scalar], id: Int)]
    private let classifierID: Int
    private let separatorID: Int
    /// The id of `classifierToken`.
    public var beginTokenID: Int { classifierID }
    /// The id of `separatorToken`.
    public var endTokenID: Int { separatorID }
    /// ASCII scalars after which a text may be cut into blocks (see `contentTokens(of:)`).
    private let blockBoundary: [Bool]
    /// A short hex fingerprint of the vocabulary and settings, so index files can tell tokenizers apart.
    public let fingerprint: String

    /// A tokenizer over a vocabulary.
    /// - Throws: `WordPieceError.invalidVocabulary` when a special token is missing from it.
    public init(
        vocabulary: Vocabulary, normalizer: BertNormalizer = BertNormalizer(), maximumLength: Int = 512,
        unknownToken: String = "[UNK]", classifierToken: String = "[CLS]", separatorToken: String = "[SEP]",
        paddingToken: String = "[PAD]", maskToken: String = "[MASK]"
    ) throws {
        precondition(maximumLength >= 2, "maximumLength must leave room for [CLS] and [SEP]")
        let specials = [paddingToken, unknownToken, classifierToken, separatorToken, maskToken]
        for token in specials where vocabulary.id(for: token) == nil {
            throw WordPieceError.invalidVocabulary(path: "vocabulary", reason: "special token \(token) is missing")
        }
        self.normalizer = normalizer
        self.model = WordPieceModel(vocabulary: vocabulary, unknownToken: unknownToken)
        self.maximumLength = maximumLength
        self.classifierToken = classifierToken
        self.separatorToken = separatorToken
        self.specialTokens = specials.sorted { $0.unicodeScalars.count > $1.unicodeScalars.count }
        self.specialScalars = specialTokens.map { ($0, Array($0.unicodeScalars), vocabulary.id(for: $0)!) }
        self.classifierID = vocabulary.id(for: classifierToken)!
        self.separatorID = vocabulary.id(for: separatorToken)!
        // White space and ASCII punctuation always end a word, before and after normalization;
        // a scalar that occurs in a special token is excluded so no literal match is cut.
        let inSpecialTokens = Set(specials.flatMap { $0.unicodeScalars.map(\.value) })
        self.blockBoundary = (0..<128).map { (value: UInt32) in
            let ascii = Unicode.Scalar(UInt8(value))
            let boundary =
                ascii == " " || ascii == "\n" || ascii == "\t" || ascii == "\r"
                || (33...47).contains(value) || (58...64).contains(value) || (91...96).contains(value)
                || (123...126).contains(value)
            return boundary && !inSpecialTokens.contains(value)
        }
        var bytes = [UInt8]()
        for token in vocabulary.tokens { bytes += Array(token.utf8) + [10] }
        let strip = normalizer.stripAccents.map { $0 ? "true" : "false" } ?? "default"
        bytes += Array(
            "lower=\(normalizer.lowercase) strip=\(strip) cjk=\(normalizer.handleChineseCharacters) max=\(maximumLength) words=\(model.maximumCharactersPerWord)"
                .utf8)
        self.fingerprint = String(SHA256.hex(of: bytes).prefix(16))
    }

    /// Reads `vocab.txt` and, when present, `tokenizer_config.json` (lower-casing, accent
    /// stripping, CJK handling, special token names) from a model folder.
    public init(contentsOf folder: URL, maximumLength: Int) throws {
        let vocabulary = try Vocabulary(contentsOf: folder.appendingPathComponent("vocab.txt"))
        var config: [String: Any] = [:]
        let configURL = folder.appendingPathComponent("tokenizer_config.json")
        if FileManager.default.fileExists(atPath: configURL.path) {
            guard let data = try? Data(contentsOf: configURL),
                let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
            else {
                throw WordPieceError.invalidVocabulary(path: configURL.path, reason: "not a JSON object")
            }
            config = object
        }
        func token(_ key: String, _ fallback: String) -> String {
            if let s = config[key] as? String { return s }
            if let d = config[key] as? [String: Any], let s = d["content"] as? String { return s }
            return fallback
        }
        let normalizer = BertNormalizer(
            cleanText: true,
            handleChineseCharacters: config["tokenize_chinese_chars"] as? Bool ?? true,
            stripAccents: config["strip_accents"] as? Bool,
            lowercase: config["do_lower_case"] as? Bool ?? true)
        do {
            try self.init(
                vocabulary: vocabulary, normalizer: normalizer, maximumLength: maximumLength,
                unknownToken: token("unk_token", "[UNK]"), classifierToken: token("cls_token", "[CLS]"),
                separatorToken: token("sep_token", "[SEP]"), paddingToken: token("pad_token", "[PAD]"),
                maskToken: token("mask_token", "[MASK]"))
        } catch WordPieceError.invalidVocabulary(_, let reason) {
            throw WordPieceError.invalidVocabulary(
                path: folder.appendingPathComponent("vocab.txt").path, reason: reason)
        }
    }

    /// Tokenizes `text`: `[CLS]`, the content tokens (at most `maximumLength − 2`), `[SEP]`.
    /// Reading stops once the limit is reached, so a huge text costs no more than its first blocks.
    /// - Complexity: O(n·L) for the n scalars read and the longest vocabulary entry L.
    public func tokenize(_ text: String) -> TokenizedText {
        let limit = maximumLength - 2
        var content = [Token]()
        var truncated = false
        for token in contentTokens(of: text) {
            if content.count == limit {
                truncated = true
                break
            }
            content.append(token)
        }
        let start = text.startIndex..<text.startIndex
        let endPosition = content.last?.range.upperBound ?? text.startIndex
        var tokens = [Token(id: classifierID, text: classifierToken, range: start, isSpecial: true)]
        tokens.reserveCapacity(content.count + 2)
        tokens.append(contentsOf: content)
        tokens.append(Token(id: separatorID, text: separatorToken, range: endPosition..<endPosition, isSpecial: true))
        return TokenizedText(string: text, tokens: tokens, isTruncated: truncated)
    }

    /// The tokens of `text` without `[CLS]`/`[SEP]` and without truncation, all at once.
    /// For long texts prefer `contentTokens(of:)`, which holds only one block at a time.
    public func tokenizeWithoutSpecialTokens(_ text: String) -> [Token] {
        Array(contentTokens(of: text))
    }

    /// The tokens of `text` without `[CLS]`/`[SEP]` and without truncation, produced lazily.
    ///
    /// The text is read in blocks of about `blockScalars` Unicode scalars, each ending just after
    /// an ASCII space, tab, CR, LF or punctuation character. No token can straddle such a cut:
    /// these scalars pass through normalization unchanged (white space as white space) and always
    /// end a word in pre-tokenization, and scalars that occur in a special token (`[`, `]`) are
    /// never used as cuts. So the tokens are exactly those of the whole text, while memory stays
    /// proportional to one block. A run of more than `blockScalars` scalars containing none of
    /// these (CJK prose without spaces, base64) is read as one longer block.
    public func contentTokens(of text: String, blockScalars: Int = 16_384) -> ContentTokens {
        ContentTokens(tokenizer: self, text: text, blockScalars: max(1, blockScalars))
    }

    /// `contentTokens(of:)` as an iterator of the `TextTokenizer` protocol.
    public func lazyContentTokens(of text: String) -> AnyIterator<Token> {
        AnyIterator(contentTokens(of: text))
    }

    /// The lazily produced content tokens of one text; see `BertTokenizer.contentTokens(of:blockScalars:)`.
    public struct ContentTokens: Sequence, IteratorProtocol, Sendable {
        let tokenizer: BertTokenizer
        let text: String
        let blockScalars: Int
        private var position: String.Index
        private var block: [Token] = []
        private var cursor = 0

        init(tokenizer: BertTokenizer, text: String, blockScalars: Int) {
            self.tokenizer = tokenizer
            self.text = text
            self.blockScalars = blockScalars
            self.position = text.startIndex
        }

        /// The next token, reading and tokenizing the next block of text when the current one is used up.
        public mutating func next() -> Token? {
            while cursor == block.count {
                guard position < text.unicodeScalars.endIndex else { return nil }
                (block, position) = tokenizer.blockTokens(of: text, from: position, blockScalars: blockScalars)
                cursor = 0
            }
            defer { cursor += 1 }
            return block[cursor]
        }
    }

    /// The tokens of the block that starts at `start`: at least `blockScalars` scalars (unless the
    /// text ends first), up to and including the next block boundary. Returns where the block ends.
    private func blockTokens(of text: String, from start: String.Index, blockScalars: Int) -> (
        tokens: [Token], end: String.Index
    ) {
        var indices = [String.Index]()
        var scalars = [Unicode.Scalar]()
        let view = text.unicodeScalars
        var i = start
        while i < view.endIndex {
            let scalar = view[i]
            indices.append(i)
            scalars.append(scalar)
            i = view.index(after: i)
            if scalars.count >= blockScalars, scalar.value < 128, blockBoundary[Int(scalar.value)] { break }
        }
        indices.append(i)

        return (tokens(of: scalars, at: indices), i)
    }

    /// The reference: the whole text's scalars, normalized and split at once (the implementation
    /// before texts were read in blocks). Tests compare `contentTokens(of:)` to it.
    package func referenceContentTokens(of text: String) -> [Token] {
        var indices = [String.Index]()
        var scalars = [Unicode.Scalar]()
        let view = text.unicodeScalars
        var i = view.startIndex
        while i < view.endIndex {
            indices.append(i)
            scalars.append(view[i])
            i = view.index(after: i)
        }
        indices.append(view.endIndex)
        return tokens(of: scalars, at: indices)
    }

    /// The tokens of a run of scalars (`indices[k]` is where scalar k starts in the caller's
    /// string; one more index marks the end): special tokens matched literally, the stretches
    /// between them normalized, pre-tokenized and word-pieced.
    private func tokens(of scalars: [Unicode.Scalar], at indices: [String.Index]) -> [Token] {
        var tokens = [Token]()
        var segmentStart = 0
        var position = 0
        while position <= scalars.count {
            let special = position < scalars.count ? specialMatch(in: scalars, at: position) : nil
            if position == scalars.count || special != nil {
                tokenizeSegment(segmentStart..<position, scalars: scalars, indices: indices) { tokens.append($0) }
                guard let special else { break }
                let end = position + special.scalars.count
                tokens.append(
                    Token(id: special.id, text: special.text, range: indices[position]..<indices[end], isSpecial: false)
                )
                position = end
                segmentStart = end
            } else {
                position += 1
            }
        }
        return tokens
    }

    private func specialMatch(in scalars: [Unicode.Scalar], at position: Int) -> (
        text: String, scalars: [Unicode.Scalar], id: Int
    )? {
        for special in specialScalars where special.scalars.first == scalars[position] {
            let end = position + special.scalars.count
            if end <= scalars.count, Array(scalars[position..<end]) == special.scalars { return special }
        }
        return nil
    }

    /// Normalizes, pre-tokenizes and word-pieces one stretch of text between special tokens.
    private func tokenizeSegment(
        _ range: Range<Int>, scalars: [Unicode.Scalar], indices: [String.Index], emit: (Token) -> Void
    ) {
        guard !range.isEmpty else { return }
        let aligned = range.map { AlignedScalar(scalar: scalars[$0], origin: $0) }
        let normalized = normalizer.normalize(aligned)
        let letters = normalized.map(\.scalar)
        for word in preTokenizer.split(normalized) {
            for piece in model.pieces(of: letters[word]) {
                let first = normalized[word.lowerBound + piece.range.lowerBound].origin
                let last = normalized[word.lowerBound + piece.range.upperBound - 1].origin
                emit(Token(id: piece.id, text: piece.text, range: indices[first]..<indices[last + 1], isSpecial: false))
            }
        }
    }

}
