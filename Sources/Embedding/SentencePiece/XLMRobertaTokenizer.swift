import Foundation
import Hashing
import Tokenization

/// Hugging Face's fast XLM-RoBERTa tokenizer (`XLMRobertaTokenizerFast`): the special tokens
/// matched literally, `XLMRobertaNormalizer`, the metaspace split, `UnigramModel`, and the
/// `<s> … </s>` template, producing the same ids and offsets, with every token's range in the
/// caller's original string.
///
/// ```swift
/// let tokens = tokenizer.tokenize("Le chien dort.")
/// tokens.tokens.map(\.text)                 // ["<s>", "▁Le", "▁chien", "▁dort", ".", "</s>"]
/// tokens.string[tokens.tokens[2].range]     // " chien"
/// ```
///
/// A token's range covers the original text its normalized characters came from, so the
/// metaspace of a word includes the space before it, as in `tokenizers`.
public struct XLMRobertaTokenizer: TextTokenizer {
    /// The unigram model and its pieces.
    public let model: UnigramModel
    /// The normalizer.
    public let normalizer: XLMRobertaNormalizer
    /// The most tokens one text may have, `<s>` and `</s>` included; longer texts are truncated.
    public let maximumLength: Int
    /// The id of `<s>`.
    public let beginTokenID: Int
    /// The id of `</s>`.
    public let endTokenID: Int
    /// A short hex fingerprint of the pieces, scores, normalization and settings.
    public let fingerprint: String
    /// Special tokens matched literally in the raw text, with their ids.
    public let specialTokens: [(text: String, id: Int)]

    /// The special token `<mask>` also takes the white space before it (`lstrip`).
    private let leftStripping: Set<String> = ["<mask>"]

    /// A tokenizer from its parts.
    /// - Parameters:
    ///   - model: the unigram model: the pieces, their scores and the unknown piece.
    ///   - normalizer: the model's normalization, applied to the text between special tokens.
    ///   - maximumLength: the most tokens one text may have, `<s>` and `</s>` included (at least 2).
    ///   - beginTokenID: the id of the token put first (`<s>`).
    ///   - endTokenID: the id of the token put last (`</s>`).
    ///   - specialTokens: the literal tokens (`<s>`, `<pad>`, `</s>`, `<unk>`, `<mask>`), each
    ///     with its id; they are matched in the raw text before normalization.
    /// - Throws: `SentencePieceError.invalidVocabulary` when an id is out of range or `maximumLength` is below 2.
    public init(
        model: UnigramModel, normalizer: XLMRobertaNormalizer, maximumLength: Int = 512,
        beginTokenID: Int, endTokenID: Int, specialTokens: [(text: String, id: Int)]
    ) throws {
        guard maximumLength >= 2 else {
            throw SentencePieceError.invalidVocabulary(
                reason: "maximum length \(maximumLength) leaves no room for <s> and </s>")
        }
        for id in [beginTokenID, endTokenID] + specialTokens.map(\.id) where !(0..<model.count).contains(id) {
            throw SentencePieceError.invalidVocabulary(reason: "special token id \(id) out of range")
        }
        self.model = model
        self.normalizer = normalizer
        self.maximumLength = maximumLength
        self.beginTokenID = beginTokenID
        self.endTokenID = endTokenID
        self.specialTokens = specialTokens.sorted { $0.text.utf8.count > $1.text.utf8.count }
        var bytes = [UInt8]()
        bytes.reserveCapacity(model.count * 16)
        for id in 0..<model.count {
            bytes += Array(model.piece(id).utf8)
            withUnsafeBytes(of: model.score(of: id).bitPattern.littleEndian) { bytes += $0 }
            bytes.append(10)
        }
        for (key, value) in normalizer.entries { bytes += Array("\(key)>\(value.map(\.value))".utf8) + [10] }
        bytes += Array(
            "xlmr normalization=\(normalizer.count) max=\(maximumLength) bos=\(beginTokenID) eos=\(endTokenID) specials=\(specialTokens.map { "\($0.text):\($0.id)" })"
                .utf8)
        self.fingerprint = String(SHA256.hex(of: bytes).prefix(16))
    }

    /// `<s>`, the content tokens (at most `maximumLength − 2`), `</s>`.
    /// Reading stops once the limit is passed, so a huge text costs no more than its first blocks.
    public func tokenize(_ text: String) -> TokenizedText {
        tokenize(text, prefix: "")
    }

    /// Tokenizes `prefix + text` as the model sees it (e5's `"query: "`, say), with every range
    /// relative to `text`: tokens made only of the prefix are marked special and get an empty
    /// range at the start of `text`; a token that spans the join starts at `text`'s start.
    public func tokenize(_ text: String, prefix: String) -> TokenizedText {
        let limit = maximumLength - 2
        var content = contentTokens(of: text, prefix: prefix, limit: limit + 1)
        let truncated = content.count > limit
        if truncated { content.removeSubrange(limit...) }
        let start = text.startIndex..<text.startIndex
        let end = content.last(where: { !$0.isSpecial })?.range.upperBound ?? text.startIndex
        var tokens = [Token(id: beginTokenID, text: model.piece(beginTokenID), range: start, isSpecial: true)]
        tokens.reserveCapacity(content.count + 2)
        tokens.append(contentsOf: content)
        tokens.append(Token(id: endTokenID, text: model.piece(endTokenID), range: end..<end, isSpecial: true))
        return TokenizedText(string: text, tokens: tokens, isTruncated: truncated)
    }

    /// The content tokens of `text`, without `<s>`/`</s>` and without truncation.
    public func tokenizeWithoutSpecialTokens(_ text: String) -> [Token] {
        contentTokens(of: text, prefix: "")
    }

    /// The content tokens of `text` without `<s>`/`</s>` and without truncation, produced a
    /// block at a time (see `ContentTokens`), so memory follows the block, not the text.
    public func lazyContentTokens(of text: String) -> AnyIterator<Token> {
        AnyIterator(ContentTokens(tokenizer: self, text: text))
    }

    /// The content tokens of `prefix + text`, with ranges relative to `text` (see
    /// `tokenize(_:prefix:)`); with a `limit`, reading stops once that many tokens are found.
    public func contentTokens(of text: String, prefix: String, limit: Int? = nil) -> [Token] {
        contentTokens(of: text, prefix: prefix, limit: limit, blockBytes: Self.blockBytes)
    }

    /// `contentTokens(of:prefix:limit:)` with blocks of at least `blockBytes` (tests use tiny ones).
    package func contentTokens(of text: String, prefix: String, limit: Int?, blockBytes: Int) -> [Token] {
        let whole = prefix.isEmpty ? text : prefix + text
        let shift = prefix.utf8.count
        var tokens = [ByteToken]()
        var start = whole.startIndex
        while start < whole.endIndex, limit.map({ tokens.count < $0 }) ?? true {
            let end = blockEnd(in: whole, from: start, blockBytes: blockBytes)
            byteTokens(of: whole, in: start..<end, into: &tokens)
            start = end
        }
        if let limit, tokens.count > limit { tokens.removeSubrange(limit...) }
        return tokens.map { token(from: $0, in: text, shift: shift) }
    }

    /// A byte token of `prefix + text` as a token of `text` (`shift`: the prefix's UTF-8 length).
    private func token(from token: ByteToken, in text: String, shift: Int) -> Token {
        let utf8 = text.utf8
        func index(_ byte: Int) -> String.Index {
            utf8.index(utf8.startIndex, offsetBy: min(max(0, byte - shift), utf8.count))
        }
        if token.bytes.upperBound <= shift, shift > 0 {
            return Token(id: token.id, text: token.text, range: text.startIndex..<text.startIndex, isSpecial: true)
        }
        let lower = index(token.bytes.lowerBound)
        let upper = index(token.bytes.upperBound)
        return Token(id: token.id, text: token.text, range: lower..<max(lower, upper), isSpecial: false)
    }

    /// The lazily produced content tokens of one text, a block at a time.
    ///
    /// A block ends just before a space (U+0020) that follows a printable ASCII character, once
    /// it holds about 64 KiB. Nothing straddles such a cut: normalization leaves both characters
    /// alone and starts no grapheme cluster across them, the run of spaces that follows (and a
    /// `<mask>` that takes it) lies wholly in the next block, whose leading space becomes the
    /// metaspace that `tokenizers` would have put there, and no special token contains a space.
    /// So the tokens are exactly those of the whole text. A text with no such cut (CJK prose,
    /// base64) is read as one block.
    public struct ContentTokens: Sequence, IteratorProtocol, Sendable {
        let tokenizer: XLMRobertaTokenizer
        let text: String
        private var position: String.Index
        private var block: [Token] = []
        private var cursor = 0

        init(tokenizer: XLMRobertaTokenizer, text: String) {
            self.tokenizer = tokenizer
            self.text = text
            self.position = text.startIndex
        }

        /// The next token, reading the next block when the current one is used up.
        public mutating func next() -> Token? {
            while cursor == block.count {
                guard position < text.endIndex else { return nil }
                let end = tokenizer.blockEnd(in: text, from: position, blockBytes: XLMRobertaTokenizer.blockBytes)
                var tokens = [ByteToken]()
                tokenizer.byteTokens(of: text, in: position..<end, into: &tokens)
                block = tokens.map { tokenizer.token(from: $0, in: text, shift: 0) }
                cursor = 0
                position = end
            }
            defer { cursor += 1 }
            return block[cursor]
        }
    }

    /// The bytes a block holds before it looks for a cut.
    static let blockBytes = 1 << 16

    /// Where the block that starts at `start` ends (see `ContentTokens`).
    ///
    /// One more condition keeps the tokens those of the whole text: no cut inside a stretch
    /// between special tokens whose first character normalization removes. `tokenizers` loses
    /// that removal and shifts the alignment of the whole stretch by one character; a cut would
    /// end the shift early.
    func blockEnd(in text: String, from start: String.Index, blockBytes: Int) -> String.Index {
        let utf8 = text.utf8
        guard let minimum = utf8.index(start, offsetBy: max(1, blockBytes), limitedBy: utf8.endIndex) else {
            return text.endIndex
        }
        func startsWithRemoval(_ at: String.Index) -> Bool {
            guard at < text.endIndex, let scalar = text.unicodeScalars[at...].first else { return false }
            return normalizer.replacement(of: scalar)?.isEmpty ?? false
        }
        var shifted = startsWithRemoval(start)
        var i = start
        while i < utf8.endIndex {
            let byte = utf8[i]
            if let special = specialToken(at: i, in: utf8[..<utf8.endIndex]) {
                i = utf8.index(i, offsetBy: special.text.utf8.count)
                shifted = startsWithRemoval(i)
                continue
            }
            if byte == 0x20, i >= minimum, !shifted, (0x21...0x7E).contains(utf8[utf8.index(before: i)]) { return i }
            i = utf8.index(after: i)
        }
        return text.endIndex
    }

    /// The special token whose text starts at `i` (longest first: `specialTokens` is sorted so), or nil.
    private func specialToken(at i: String.Index, in utf8: Substring.UTF8View) -> (text: String, id: Int)? {
        guard utf8[i] == UInt8(ascii: "<") else { return nil }
        return specialTokens.first { utf8[i...].starts(with: $0.text.utf8) }
    }

    /// A token with its UTF-8 byte range in the tokenized string.
    struct ByteToken {
        var id: Int
        var text: String
        var bytes: Range<Int>
    }

    /// The tokens of `text[block]` (no `<s>`/`</s>`), appended to `tokens` with ranges as UTF-8
    /// byte offsets into `text`. `block` must start at the text's start or at a block cut.
    func byteTokens(of text: String, in block: Range<String.Index>, into tokens: inout [ByteToken]) {
        var segmentStart = block.lowerBound
        var i = block.lowerBound
        let utf8 = text.utf8
        let scalars = text.unicodeScalars
        func byteOffset(_ index: String.Index) -> Int { utf8.distance(from: utf8.startIndex, to: index) }
        // Special tokens are matched in the raw text, leftmost first, longest first at a position.
        while i < block.upperBound {
            if let special = specialToken(at: i, in: utf8[..<block.upperBound]) {
                var matchStart = i
                if leftStripping.contains(special.text) {
                    // White space scalars before it (a scalar at a time: a cluster may join the `<`).
                    while matchStart > segmentStart {
                        let before = scalars.index(before: matchStart)
                        guard scalars[before].properties.isWhitespace else { break }
                        matchStart = before
                    }
                }
                let matchEnd = utf8.index(i, offsetBy: special.text.utf8.count)
                appendContent(of: text[segmentStart..<matchStart], byteOffset: byteOffset(segmentStart), to: &tokens)
                // The token's text is what it matched, stripped white space included (as tokenizers reports it).
                tokens.append(
                    ByteToken(
                        id: special.id, text: String(text[matchStart..<matchEnd]),
                        bytes: byteOffset(matchStart)..<byteOffset(matchEnd)))
                segmentStart = matchEnd
                i = matchEnd
            } else {
                i = utf8.index(after: i)
                // Stay on scalar boundaries: skip continuation bytes.
                while i < block.upperBound, (utf8[i] & 0xC0) == 0x80 { i = utf8.index(after: i) }
            }
        }
        appendContent(of: text[segmentStart..<block.upperBound], byteOffset: byteOffset(segmentStart), to: &tokens)
    }

    /// The index of `value` in the ascending `boundaries` (binary search).
    private func position(of value: Int, in boundaries: [Int]) -> Int {
        var low = 0
        var high = boundaries.count - 1
        while low < high {
            let mid = (low + high) / 2
            if boundaries[mid] < value { low = mid + 1 } else { high = mid }
        }
        return low
    }

    /// Normalizes one stretch of text between special tokens, splits it into words at each
    /// metaspace (the marker starts a word), and segments each word.
    private func appendContent(of text: Substring, byteOffset: Int, to tokens: inout [ByteToken]) {
        guard !text.isEmpty else { return }
        let normalized = normalizer.normalize(text, byteOffset: byteOffset)
        let scalars = normalized.scalars
        guard !scalars.isEmpty else { return }
        var wordStart = 0
        var bytes = [UInt8]()
        var boundaries = [Int]()
        var encoded = [UInt8](repeating: 0, count: 4)
        func flush(_ word: Range<Int>) {
            guard !word.isEmpty else { return }
            bytes.removeAll(keepingCapacity: true)
            boundaries.removeAll(keepingCapacity: true)
            boundaries.append(0)
            for k in word {
                var n = 0
                UTF8.encode(scalars[k]) {
                    encoded[n] = $0
                    n += 1
                }
                bytes.append(contentsOf: encoded[0..<n])
                boundaries.append(bytes.count)
            }
            let segments = bytes.withUnsafeBufferPointer { model.segment($0, boundaries: boundaries) }
            for segment in segments {
                // Byte range in the word → scalar range in the word.
                let first = position(of: segment.bytes.lowerBound, in: boundaries)
                let last = position(of: segment.bytes.upperBound, in: boundaries) - 1
                let lower = normalized.alignments[word.lowerBound + first].lowerBound
                let upper = normalized.alignments[word.lowerBound + last].upperBound
                let text =
                    segment.id == model.unknownID
                    ? String(decoding: bytes[segment.bytes], as: UTF8.self)
                    : model.piece(segment.id)
                tokens.append(ByteToken(id: segment.id, text: text, bytes: lower..<max(lower, upper)))
            }
        }
        for k in 1..<scalars.count where scalars[k] == XLMRobertaNormalizer.metaspace {
            flush(wordStart..<k)
            wordStart = k
        }
        flush(wordStart..<scalars.count)
    }
}
