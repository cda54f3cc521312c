import Foundation

// libFuzzer target: arbitrary bytes (decoded as UTF-8 with repair) through the BERT tokenizer.
// Checks: no crash, at most `maximumLength` tokens, every range inside the string, [CLS] first,
// and the block-wise token stream (tiny blocks, so every whitespace is a cut) equal to the
// whole-text reference.
let fuzzTokenizer: BertTokenizer = {
    if let path = ProcessInfo.processInfo.environment["FUZZ_VOCAB"],
        let vocabulary = try? Vocabulary(contentsOf: URL(fileURLWithPath: path)),
        let tokenizer = try? BertTokenizer(vocabulary: vocabulary, maximumLength: 64)
    {
        return tokenizer
    }
    let tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "##a", "b", "##b", "é", "σ", "東", ".", "!", "##s"]
    return try! BertTokenizer(vocabulary: Vocabulary(tokens: tokens), maximumLength: 64)
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzTokenizerInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    let tokens = fuzzTokenizer.tokenize(text)
    precondition(tokens.tokens.count >= 2 && tokens.tokens.count <= 64)
    precondition(tokens.tokens.first?.text == "[CLS]" && tokens.tokens.last?.text == "[SEP]")
    for token in tokens.tokens {
        precondition(token.range.lowerBound >= text.startIndex && token.range.upperBound <= text.endIndex)
        precondition(token.range.lowerBound <= token.range.upperBound)
    }
    _ = tokens.scalarOffsets
    let reference = fuzzTokenizer.referenceContentTokens(of: text)
    precondition(Array(fuzzTokenizer.contentTokens(of: text, blockScalars: 1)) == reference)
    precondition(Array(fuzzTokenizer.contentTokens(of: text, blockScalars: 5)) == reference)
    precondition(Array(tokens.tokens.dropFirst().dropLast()) == Array(reference.prefix(62)))
    return 0
}
