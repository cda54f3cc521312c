import Hashing
import Tokenization

/// Byte-level BPE as GPT-2, SmolLM, Llama 3 and Qwen2 use it (`tokenizer.ggml.model = gpt2` in a
/// GGUF file): the text is split by the model's pre-tokenizer, each piece's UTF-8 bytes are
/// written in GPT-2's byte alphabet and merged by rank. Every token keeps its range in the
/// caller's string.
///
/// The same type also holds SentencePiece's BPE (`tokenizer.ggml.model = llama`: Llama 2, Mistral,
/// Phi-3, Gemma), made with `init(sentencePieceTokens:…)`: spaces become `▁`, a `▁` goes in front
/// of the text when the vocabulary says so, and characters merge by score (`SentencePieceModel`),
/// as llama.cpp tokenizes; user-defined tokens in the text are read as themselves, as llama.cpp
/// reads them.
///
/// ```swift
/// let tokenizer = try BytePairTokenizer(tokens: tokens, merges: merges, preTokenizer: .smollm)
/// let text = "Héllo 2024"
/// let tokens = tokenizer.tokenizeWithoutSpecialTokens(text)
/// tokens.map(\.text)                   // ["H", "Ã©", "llo", "Ġ", "2", "0", "2", "4"]
/// tokens.map { String(text[$0.range]) } // ["H", "é", "llo", " ", "2", "0", "2", "4"]
/// ```
///
/// **Ranges.** A token's range covers the Unicode scalars its bytes belong to. Byte-level tokens
/// can end inside a multi-byte scalar (`é` is two bytes, and a token may hold only one of them):
/// such a token is given the whole scalar's range, so two neighbouring tokens can share a scalar.
///
/// **Control tokens.** Text is always tokenized as text: a `<|im_end|>` typed or pasted by a user is
/// the ordinary tokens `<|`, `im`, `_`, `end`, `|>`, never the control token, so a message cannot
/// end its own turn or open another role's. Control tokens come only from a chat template
/// (`encode(_:parsingControlTokens:)` with `true`, which `ChatPrompt` uses on the template's own text).
package struct BytePairTokenizer: TextTokenizer {
    /// How the vocabulary file classifies a token (the GGUF key `tokenizer.ggml.token_type`).
    package enum TokenType: Int32, Sendable {
        case normal = 1
        case unknown = 2
        case control = 3
        case userDefined = 4
        case unused = 5
        case byte = 6
    }

    /// The vocabulary: `tokens[id]` is the token's text in GPT-2's byte alphabet (control tokens as written).
    package let tokens: [String]
    /// Each token's type.
    package let tokenTypes: [TokenType]
    /// The pre-tokenizer (nil for a SentencePiece vocabulary, which has none).
    package let preTokenizer: BytePairPreTokenizer?
    /// Whether a SentencePiece vocabulary puts `▁` in front of the text (`tokenizer.ggml.add_space_prefix`).
    package let addsSpacePrefix: Bool
    /// The most tokens one text may have (the model's context).
    package let maximumLength: Int
    /// The id of the model's begin-of-sequence token, if it has one.
    package let beginOfSequenceID: Int?
    /// The id of the model's end-of-sequence token, if it has one.
    package let endOfSequenceID: Int?
    /// Whether `tokenize(_:)` puts the begin-of-sequence token first (`tokenizer.ggml.add_bos_token`).
    package let addsBeginOfSequence: Bool
    /// Whether `tokenize(_:)` puts the end-of-sequence token last (`tokenizer.ggml.add_eos_token`).
    package let addsEndOfSequence: Bool
    /// A short hex fingerprint of the vocabulary, merges and settings.
    package let fingerprint: String

    private let ids: [String: Int32]
    private let model: BytePairModel
    /// The merge step of a SentencePiece vocabulary, nil for byte-level BPE.
    private let sentencePiece: SentencePieceModel?
    /// A SentencePiece vocabulary's ids by the exact bytes of their text (a `String` key would
    /// equate canonically equivalent texts: `e` + U+0301 with `é`, U+212A with `K`).
    private let idsByBytes: [[UInt8]: Int32]
    /// Whether a piece that is itself a token skips the merges (Llama 3's `ignore_merges`).
    private let ignoresMergesForWholeTokens: Bool
    /// Control and user-defined tokens by first scalar, longest first: what `parsingControlTokens` matches.
    private let controlTokens: [Unicode.Scalar: [(scalars: [Unicode.Scalar], id: Int32)]]
    /// Every token's bytes, flattened: token `i` is `tokenBytes[tokenByteStarts[i]..<tokenByteStarts[i + 1]]`.
    private let tokenBytes: [UInt8]
    private let tokenByteStarts: [Int]

    /// The id `tokenize(_:)` puts first: the begin-of-sequence token when the model adds one, else −1.
    package var beginTokenID: Int { addsBeginOfSequence ? beginOfSequenceID ?? -1 : -1 }
    /// The id `tokenize(_:)` puts last: the end-of-sequence token when the model adds one, else −1.
    package var endTokenID: Int { addsEndOfSequence ? endOfSequenceID ?? -1 : -1 }

    /// A tokenizer from a model file's vocabulary.
    ///
    /// - Parameters:
    ///   - tokens: the vocabulary, in id order.
    ///   - merges: `"left right"` pairs, best first.
    ///   - tokenTypes: each token's type code (`TokenType` raw values), or nil (all normal).
    ///   - preTokenizer: the split `tokenizer.ggml.pre` names.
    ///   - beginOfSequenceID, endOfSequenceID: the model's special ids, when it has them.
    ///   - addsBeginOfSequence, addsEndOfSequence: whether `tokenize(_:)` adds them.
    ///   - maximumLength: the most tokens one text may have.
    /// - Throws: `BytePairEncodingError` for a duplicate token, a merge of tokens not in the
    ///   vocabulary or whose result is not, an unknown type code, a special id out of range, or a
    ///   vocabulary with no byte-level tokens at all. (A byte without a token is dropped when
    ///   met, as Hugging Face's BPE drops it without an unknown token.)
    /// - Complexity: O(vocabulary + merges).
    package init(
        tokens: [String], merges: [String], tokenTypes: [Int32]? = nil, preTokenizer: BytePairPreTokenizer,
        beginOfSequenceID: Int? = nil, endOfSequenceID: Int? = nil,
        addsBeginOfSequence: Bool = false, addsEndOfSequence: Bool = false,
        maximumLength: Int = .max
    ) throws(BytePairEncodingError) {
        try self.init(
            tokens: tokens, merges: merges, tokenTypes: tokenTypes, preTokenizer: preTokenizer, scores: nil,
            addsSpacePrefix: false, unknownID: nil, beginOfSequenceID: beginOfSequenceID,
            endOfSequenceID: endOfSequenceID, addsBeginOfSequence: addsBeginOfSequence,
            addsEndOfSequence: addsEndOfSequence, maximumLength: maximumLength)
    }

    /// A SentencePiece BPE tokenizer from a model file's vocabulary (`tokenizer.ggml.model = llama`).
    ///
    /// - Parameters:
    ///   - tokens: the vocabulary, in id order, spaces written `▁`, bytes as `<0xAB>` tokens.
    ///   - scores: each token's score (`tokenizer.ggml.scores`): merges prefer the higher.
    ///   - tokenTypes: each token's type code, or nil (all normal).
    ///   - addsSpacePrefix: whether `▁` goes in front of the text (`tokenizer.ggml.add_space_prefix`).
    ///   - unknownID: the unknown token, for a character with neither a token nor byte tokens.
    ///   - the rest: as for byte-level BPE.
    /// - Throws: `BytePairEncodingError` for a duplicate token, a count of scores or types that
    ///   differs from the vocabulary's, a non-finite score, or a special id out of range.
    /// - Complexity: O(vocabulary · log vocabulary).
    package init(
        sentencePieceTokens tokens: [String], scores: [Float], tokenTypes: [Int32]? = nil, addsSpacePrefix: Bool,
        unknownID: Int? = nil, beginOfSequenceID: Int? = nil, endOfSequenceID: Int? = nil,
        addsBeginOfSequence: Bool = false, addsEndOfSequence: Bool = false, maximumLength: Int = .max
    ) throws(BytePairEncodingError) {
        guard scores.count == tokens.count else {
            throw BytePairEncodingError("\(scores.count) scores for \(tokens.count) tokens")
        }
        if let bad = scores.firstIndex(where: { !$0.isFinite }) {
            throw BytePairEncodingError("token \(bad) has the score \(scores[bad])")
        }
        if let unknownID, !tokens.indices.contains(unknownID) {
            throw BytePairEncodingError("the unknown id \(unknownID) is outside the vocabulary of \(tokens.count)")
        }
        try self.init(
            tokens: tokens, merges: [], tokenTypes: tokenTypes, preTokenizer: nil, scores: scores,
            addsSpacePrefix: addsSpacePrefix, unknownID: unknownID, beginOfSequenceID: beginOfSequenceID,
            endOfSequenceID: endOfSequenceID, addsBeginOfSequence: addsBeginOfSequence,
            addsEndOfSequence: addsEndOfSequence, maximumLength: maximumLength)
    }

    private init(
        tokens: [String], merges: [String], tokenTypes: [Int32]?, preTokenizer: BytePairPreTokenizer?,
        scores: [Float]?, addsSpacePrefix: Bool, unknownID: Int?, beginOfSequenceID: Int?, endOfSequenceID: Int?,
        addsBeginOfSequence: Bool, addsEndOfSequence: Bool, maximumLength: Int
    ) throws(BytePairEncodingError) {
        guard !tokens.isEmpty, tokens.count < Int(Int32.max) else {
            throw BytePairEncodingError("the vocabulary has \(tokens.count) tokens")
        }
        guard maximumLength >= 1 else { throw BytePairEncodingError("maximum length \(maximumLength) is below 1") }
        var types: [TokenType] = []
        if let tokenTypes {
            guard tokenTypes.count == tokens.count else {
                throw BytePairEncodingError("\(tokenTypes.count) token types for \(tokens.count) tokens")
            }
            types.reserveCapacity(tokens.count)
            for (id, code) in tokenTypes.enumerated() {
                guard let type = TokenType(rawValue: code) else {
                    throw BytePairEncodingError("token \(id) has type \(code), expected 1…6")
                }
                types.append(type)
            }
        } else {
            types = Array(repeating: .normal, count: tokens.count)
        }
        for (name, id) in [("begin-of-sequence", beginOfSequenceID), ("end-of-sequence", endOfSequenceID)] {
            if let id, !tokens.indices.contains(id) {
                throw BytePairEncodingError("the \(name) id \(id) is outside the vocabulary of \(tokens.count)")
            }
        }
        var ids: [String: Int32] = [:]
        ids.reserveCapacity(tokens.count)
        for (id, token) in tokens.enumerated() {
            // A duplicate normal token would make ids ambiguous; duplicate unused or control entries
            // (padding slots) are kept at their first id.
            if let first = ids[token] {
                // (SentencePiece texts are told apart by their bytes, in `idsByBytes`: only canonically
                // equivalent texts, which a `String` key merges, can meet here.)
                if scores == nil && types[id] == .normal && types[Int(first)] == .normal {
                    throw BytePairEncodingError("token \(id) '\(token)' repeats token \(first)")
                }
                continue
            }
            ids[token] = Int32(id)
        }
        let byteTokens = (0..<256).map { ids[String(Character(ByteLevel.scalars[$0]))] ?? -1 }
        guard scores != nil || byteTokens.contains(where: { $0 >= 0 }) else {
            throw BytePairEncodingError("the vocabulary has no byte-level tokens (is it byte-level BPE?)")
        }
        var table: [UInt64: (rank: Int32, id: Int32)] = [:]
        table.reserveCapacity(merges.count)
        for (rank, merge) in merges.enumerated() {
            let parts = merge.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty else {
                throw BytePairEncodingError("merge \(rank) '\(merge)' is not two tokens separated by a space")
            }
            guard let left = ids[String(parts[0])], let right = ids[String(parts[1])] else {
                throw BytePairEncodingError("merge \(rank) '\(merge)' names a token that is not in the vocabulary")
            }
            guard let merged = ids[String(parts[0]) + String(parts[1])] else {
                throw BytePairEncodingError(
                    "merge \(rank) '\(merge)' makes '\(parts[0])\(parts[1])', which is not in the vocabulary")
            }
            let key = BytePairModel.pairKey(left, right)
            if table[key] == nil { table[key] = (Int32(rank), merged) }
        }
        var control: [Unicode.Scalar: [(scalars: [Unicode.Scalar], id: Int32)]] = [:]
        var bytes: [UInt8] = []
        var starts: [Int] = [0]
        bytes.reserveCapacity(tokens.count * 6)
        for (id, token) in tokens.enumerated() {
            switch types[id] {
            case .control, .userDefined, .unknown:
                let scalars = Array(token.unicodeScalars)
                if let first = scalars.first, ids[token] == Int32(id) {
                    control[first, default: []].append((scalars, Int32(id)))
                }
                // Control tokens print nothing; user-defined ones print as written.
                if types[id] == .userDefined || (scores != nil && types[id] == .unknown) {
                    bytes.append(contentsOf: token.utf8)
                }
            case .byte:
                // `<0x0A>`-style byte tokens (SentencePiece vocabularies) stand for that byte.
                if let value = Self.byteTokenValue(token) {
                    bytes.append(value)
                } else {
                    bytes.append(contentsOf: token.utf8)
                }
            default:
                if scores != nil {
                    // SentencePiece: `▁` stands for a space.
                    bytes.append(
                        contentsOf: token.split(separator: "\u{2581}", omittingEmptySubsequences: false).joined(
                            separator: " "
                        ).utf8)
                } else {
                    // A token outside the byte alphabet is printed as written (it cannot come out of the merges).
                    bytes.append(contentsOf: ByteLevel.bytes(of: token) ?? Array(token.utf8))
                }
            }
            starts.append(bytes.count)
        }
        for key in control.keys { control[key]?.sort { $0.scalars.count > $1.scalars.count } }

        self.tokens = tokens
        self.tokenTypes = types
        self.preTokenizer = preTokenizer
        self.addsSpacePrefix = scores != nil && addsSpacePrefix
        self.maximumLength = maximumLength
        self.beginOfSequenceID = beginOfSequenceID
        self.endOfSequenceID = endOfSequenceID
        self.addsBeginOfSequence = addsBeginOfSequence && beginOfSequenceID != nil
        self.addsEndOfSequence = addsEndOfSequence && endOfSequenceID != nil
        self.ids = ids
        self.model = BytePairModel(merges: table, byteTokens: byteTokens)
        var byBytes: [[UInt8]: Int32] = [:]
        if scores != nil {
            byBytes.reserveCapacity(tokens.count)
            for (id, token) in tokens.enumerated() where byBytes[Array(token.utf8)] == nil {
                byBytes[Array(token.utf8)] = Int32(id)
            }
        }
        self.idsByBytes = byBytes
        self.sentencePiece = scores.map { scores in
            SentencePieceModel(
                scores: scores,
                byteTokens: (0..<256).map { byBytes[Array(Self.byteTokenName(UInt8($0)).utf8)] ?? -1 },
                unknownID: unknownID.map(Int32.init))
        }
        self.ignoresMergesForWholeTokens = preTokenizer == .llamaBPE
        self.controlTokens = control
        self.tokenBytes = bytes
        self.tokenByteStarts = starts

        var hasher = SHA256()
        hasher.update(
            Array(
                "bpe \(preTokenizer?.rawValue ?? "sentencepiece \(self.addsSpacePrefix)") \(tokens.count) \(merges.count) \(maximumLength) \(self.addsBeginOfSequence) \(self.addsEndOfSequence)\n"
                    .utf8))
        for token in tokens {
            hasher.update(Array(token.utf8))
            hasher.update([0])
        }
        for merge in merges {
            hasher.update(Array(merge.utf8))
            hasher.update([0])
        }
        for type in types { hasher.update([UInt8(truncatingIfNeeded: type.rawValue)]) }
        for score in scores ?? [] { withUnsafeBytes(of: score.bitPattern.littleEndian) { hasher.update(Array($0)) } }
        self.fingerprint = String(hasher.finalizeHex().prefix(16))
    }

    /// The number of tokens in the vocabulary.
    package var vocabularySize: Int { tokens.count }

    /// The id of a token's text, if the vocabulary has it.
    package func id(for token: String) -> Int? { ids[token].map(Int.init) }

    /// The bytes a token stands for: its UTF-8 text for ordinary and user-defined tokens, nothing
    /// for control tokens. Concatenating them gives back the text.
    package func bytes(for id: Int) -> ArraySlice<UInt8> {
        guard tokens.indices.contains(id) else { return [] }
        return tokenBytes[tokenByteStarts[id]..<tokenByteStarts[id + 1]]
    }

    /// Whether `id` is a control token (`<|im_start|>`, `<|endoftext|>`, …).
    package func isControl(_ id: Int) -> Bool {
        tokenTypes.indices.contains(id) && tokenTypes[id] == .control
    }

    /// The text of a sequence of ids (control tokens print nothing; a byte sequence that is not
    /// UTF-8 becomes U+FFFD, as `String(decoding:as:)` repairs it).
    /// A SentencePiece vocabulary that adds `▁` in front of text drops one leading space from the
    /// first token that prints, as llama.cpp's detokenizer does.
    package func decode(_ ids: some Sequence<Int>) -> String {
        var bytes: [UInt8] = []
        for id in ids {
            let piece = self.bytes(for: id)
            if addsSpacePrefix, bytes.isEmpty, piece.first == 0x20, tokenTypes[id] == .normal {
                bytes.append(contentsOf: piece.dropFirst())
            } else {
                bytes.append(contentsOf: piece)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    // MARK: - TextTokenizer

    /// The begin-of-sequence token when the model adds one, the content tokens (truncated to fit
    /// `maximumLength`), the end-of-sequence token when the model adds one. Text is text: control
    /// tokens are not parsed (see the type's documentation).
    package func tokenize(_ text: String) -> TokenizedText {
        var content = encode(text, parsingControlTokens: false)
        let room = maximumLength - (addsBeginOfSequence ? 1 : 0) - (addsEndOfSequence ? 1 : 0)
        let truncated = content.count > max(0, room)
        if truncated { content.removeSubrange(max(0, room)...) }
        var all: [Token] = []
        all.reserveCapacity(content.count + 2)
        let start = text.startIndex..<text.startIndex
        let end = text.endIndex..<text.endIndex
        if addsBeginOfSequence, let id = beginOfSequenceID {
            all.append(Token(id: id, text: tokens[id], range: start, isSpecial: true))
        }
        all += content
        if addsEndOfSequence, let id = endOfSequenceID {
            all.append(Token(id: id, text: tokens[id], range: end, isSpecial: true))
        }
        return TokenizedText(string: text, tokens: all, isTruncated: truncated)
    }

    /// Every content token of `text` (no begin or end token, no truncation; control tokens not parsed).
    package func tokenizeWithoutSpecialTokens(_ text: String) -> [Token] {
        encode(text, parsingControlTokens: false)
    }

    /// The tokens of `text`, each with its range in `text`.
    ///
    /// With `parsingControlTokens`, the exact text of a control or user-defined token becomes that
    /// token (longest first), marked special, with its range; only a chat template's own text
    /// should be read this way.
    /// - Complexity: O(n log n) in the text's UTF-8 length.
    package func encode(_ text: String, parsingControlTokens: Bool) -> [Token] {
        guard parsingControlTokens else {
            // A SentencePiece vocabulary's user-defined tokens are read in any text, as llama.cpp reads them.
            guard sentencePiece != nil else { return encode(text, controlTokens: []) }
            return encode(
                text, controlTokens: controlTokenMatches(in: text).filter { tokenTypes[$0.id] == .userDefined })
        }
        return encode(text, controlTokens: controlTokenMatches(in: text))
    }

    /// Where control and user-defined tokens' texts occur in `text`, longest first at each
    /// position, as (first scalar's offset, scalar count, id), in order and not overlapping.
    package func controlTokenMatches(in text: String) -> [(offset: Int, length: Int, id: Int)] {
        guard !controlTokens.isEmpty else { return [] }
        let scalars = Array(text.unicodeScalars)
        var found: [(offset: Int, length: Int, id: Int)] = []
        var k = 0
        while k < scalars.count {
            if let candidates = controlTokens[scalars[k]],
                let match = candidates.first(where: { Self.matches($0.scalars, scalars, at: k) })
            {
                found.append((k, match.scalars.count, Int(match.id)))
                k += match.scalars.count
            } else {
                k += 1
            }
        }
        return found
    }

    /// The tokens of `text` with the given control tokens (scalar offset, scalar count, id; in
    /// order, not overlapping, inside the text) taken as they are and everything else as plain text.
    /// A chat prompt uses it to read control tokens only where its template, not a message, put them.
    package func encode(_ text: String, controlTokens matches: [(offset: Int, length: Int, id: Int)]) -> [Token] {
        let scalars = Array(text.unicodeScalars)
        guard !scalars.isEmpty else { return [] }
        var indices = Array(text.unicodeScalars.indices)
        indices.append(text.endIndex)
        var byteOffsets = [Int](repeating: 0, count: scalars.count + 1)
        for (k, scalar) in scalars.enumerated() { byteOffsets[k + 1] = byteOffsets[k] + UTF8.width(scalar) }
        let utf8 = Array(text.utf8)

        var output: [Token] = []
        var plainStart = 0
        for match in matches {
            precondition(
                match.offset >= plainStart && match.length > 0 && match.offset + match.length <= scalars.count
                    && tokens.indices.contains(match.id), "encode(_:controlTokens:): matches out of order or range")
            encodePlain(scalars, plainStart..<match.offset, indices, byteOffsets, utf8, into: &output)
            output.append(
                Token(
                    id: match.id, text: tokens[match.id],
                    range: indices[match.offset]..<indices[match.offset + match.length],
                    isSpecial: true))
            plainStart = match.offset + match.length
        }
        encodePlain(scalars, plainStart..<scalars.count, indices, byteOffsets, utf8, into: &output)
        return output
    }

    private static func matches(_ pattern: [Unicode.Scalar], _ scalars: [Unicode.Scalar], at k: Int) -> Bool {
        guard k + pattern.count <= scalars.count else { return false }
        for (offset, scalar) in pattern.enumerated() where scalars[k + offset] != scalar { return false }
        return true
    }

    /// Pre-tokenizes and merges `range` of the scalars (text without control tokens).
    private func encodePlain(
        _ scalars: [Unicode.Scalar], _ range: Range<Int>, _ indices: [String.Index],
        _ byteOffsets: [Int], _ utf8: [UInt8], into output: inout [Token]
    ) {
        guard !range.isEmpty else { return }
        guard let preTokenizer else {
            encodeSentencePiece(scalars, range, indices, into: &output)
            return
        }
        let pieces = preTokenizer.pieces(of: Array(scalars[range]))
        var merged: [(id: Int32, start: Int)] = []
        for local in pieces {
            let piece = (local.lowerBound + range.lowerBound)..<(local.upperBound + range.lowerBound)
            let firstByte = byteOffsets[piece.lowerBound]
            let endByte = byteOffsets[piece.upperBound]
            merged.removeAll(keepingCapacity: true)
            if ignoresMergesForWholeTokens, let whole = ids[ByteLevel.string(of: utf8[firstByte..<endByte])] {
                merged.append((whole, 0))
            } else {
                utf8.withUnsafeBufferPointer { all in
                    model.encode(UnsafeBufferPointer(rebasing: all[firstByte..<endByte]), into: &merged)
                }
            }
            // Map each token's bytes to the scalars holding them (walking forward: offsets only grow).
            var scalar = piece.lowerBound
            for (n, token) in merged.enumerated() {
                let startByte = firstByte + token.start
                let stopByte = n + 1 < merged.count ? firstByte + merged[n + 1].start : endByte
                while byteOffsets[scalar + 1] <= startByte { scalar += 1 }
                var last = scalar
                while byteOffsets[last + 1] < stopByte { last += 1 }
                let id = Int(token.id)
                output.append(
                    Token(id: id, text: tokens[id], range: indices[scalar]..<indices[last + 1], isSpecial: false))
            }
        }
    }

    /// SentencePiece: `range` of the scalars with `▁` in front (when the vocabulary adds it; every
    /// plain run starts the text or follows a special token, where llama.cpp adds it) and every
    /// space written `▁`, merged by score. A token's range covers the scalars its bytes came from;
    /// the `▁` put in front comes from none, so a token of it alone has an empty range.
    private func encodeSentencePiece(
        _ scalars: [Unicode.Scalar], _ range: Range<Int>, _ indices: [String.Index], into output: inout [Token]
    ) {
        guard let sentencePiece else { return }
        var escaped: [UInt8] = []
        var origin: [Int] = []  // the scalar each escaped byte came from; -1 for the added `▁`
        let space: [UInt8] = [0xE2, 0x96, 0x81]
        if addsSpacePrefix {
            escaped += space
            origin += [-1, -1, -1]
        }
        for k in range {
            let bytes = scalars[k] == " " ? space : Array(String(scalars[k]).utf8)
            escaped += bytes
            origin += Array(repeating: k, count: bytes.count)
        }
        var merged: [(id: Int32, start: Int, count: Int)] = []
        escaped.withUnsafeBufferPointer { all in
            sentencePiece.encode(all, lookup: { idsByBytes[Array($0)] }, into: &merged)
        }
        for token in merged {
            let from = origin[token.start..<(token.start + token.count)].filter { $0 >= 0 }
            let id = Int(token.id)
            let tokenRange: Range<String.Index>
            if let first = from.first, let last = from.last {
                tokenRange = indices[first]..<indices[last + 1]
            } else {
                tokenRange = indices[range.lowerBound]..<indices[range.lowerBound]
            }
            output.append(Token(id: id, text: tokens[id], range: tokenRange, isSpecial: false))
        }
    }

    /// The text of byte `value`'s token: `<0xAB>`.
    private static func byteTokenName(_ value: UInt8) -> String {
        let digits = Array("0123456789ABCDEF")
        return "<0x\(digits[Int(value >> 4)])\(digits[Int(value & 0x0F)])>"
    }

    /// The byte of a `<0xAB>` token.
    private static func byteTokenValue(_ token: String) -> UInt8? {
        guard token.hasPrefix("<0x"), token.hasSuffix(">"), token.utf8.count == 6 else { return nil }
        return UInt8(token.dropFirst(3).dropLast(), radix: 16)
    }

    /// The plain-loop merge for one piece's bytes, for tests of the heap-based merge.
    package func referenceMerge(_ bytes: [UInt8]) -> [Int] { model.referenceEncode(bytes).map { Int($0.id) } }

    /// The heap-based merge for one piece's bytes.
    package func merge(_ bytes: [UInt8]) -> [Int] {
        var out: [(id: Int32, start: Int)] = []
        bytes.withUnsafeBufferPointer { model.encode($0, into: &out) }
        return out.map { Int($0.id) }
    }
}
