import Foundation

// libFuzzer target: arbitrary bytes (decoded as UTF-8 with repair) through the XLM-RoBERTa
// tokenizer, over a small vocabulary and normalization table written here. Checks: no crash, at
// most `maximumLength` tokens, <s> first and </s> last, every content range inside the string,
// on Unicode scalar boundaries, starting in order; the same tokens with a prefix, ranges moved
// into the text; blocks of one byte give the whole text's tokens.
let fuzzSentencePiece: XLMRobertaTokenizer = {
    var pieces: [(String, Float)] = [("<s>", 0), ("<pad>", 0), ("</s>", 0), ("<unk>", 0), ("▁", -2)]
    for c in "abcdefghijklmnopqrstuvwxyz.,:!?éßσ東京😀ש" {
        pieces.append((String(c), -5))
        pieces.append(("▁" + String(c), -4))
    }
    pieces += [("▁the", -3), ("ing", -3.5), ("▁query", -3), ("ry", -4), ("東京", -4), ("<mask>", 0)]
    var bytes = [UInt8]()
    var offsets: [Int32] = [0]
    for (piece, _) in pieces {
        bytes += Array(piece.utf8)
        offsets.append(Int32(bytes.count))
    }
    let model = try! UnigramModel(bytes: bytes, offsets: offsets, scores: pieces.map(\.1), unknownID: 3)
    let normalizer = try! XLMRobertaNormalizer(table: [
        0x09: [0x20], 0x0A: [0x20], 0x01: [], 0x200D: [0x20], 0xFB01: [0x66, 0x69], 0xA0: [0x20], 0xFF21: [0x41],
    ])
    let specials = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"].map { (text: $0, id: model.id(of: $0)!) }
    return try! XLMRobertaTokenizer(
        model: model, normalizer: normalizer, maximumLength: 64, beginTokenID: 0, endTokenID: 2, specialTokens: specials
    )
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSentencePieceInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    for prefix in ["", "query: "] {
        let tokens = fuzzSentencePiece.tokenize(text, prefix: prefix)
        precondition(tokens.tokens.count >= 2 && tokens.tokens.count <= 64)
        precondition(tokens.tokens.first?.id == 0 && tokens.tokens.last?.id == 2)
        var previous = text.startIndex
        for token in tokens.tokens {
            precondition(token.range.lowerBound >= text.startIndex && token.range.upperBound <= text.endIndex)
            precondition(token.range.lowerBound <= token.range.upperBound)
            precondition(token.range.lowerBound.samePosition(in: text.unicodeScalars) != nil)
            precondition(token.range.upperBound.samePosition(in: text.unicodeScalars) != nil)
            if !token.isSpecial {
                precondition(token.range.lowerBound >= previous)
                previous = token.range.lowerBound
            }
        }
        _ = tokens.scalarOffsets
    }
    precondition(fuzzSentencePiece.tokenize(text).ids == fuzzSentencePiece.tokenize(text, prefix: "").ids)
    // Reading in blocks (here: a cut at every eligible space) gives the whole text's tokens.
    let whole = fuzzSentencePiece.contentTokens(of: text, prefix: "", limit: nil, blockBytes: Int.max / 2)
    precondition(fuzzSentencePiece.contentTokens(of: text, prefix: "", limit: nil, blockBytes: 1) == whole)
    return 0
}
