import Foundation

// libFuzzer target: arbitrary bytes (UTF-8, repaired) through the byte-level BPE tokenizer with a
// real vocabulary: SmolLM2-135M's from the GGUF file at FUZZ_GGUF (scripts/fuzz.sh passes the
// installed default model), else the tiny Qwen2 fixture's. Checks: no crash; every token's range
// inside the text and in order; decoding the ids gives the text back but for the bytes the
// vocabulary has no token for (SmolLM2 lacks 21, which are dropped as `tokenizers` drops them;
// text is text: control tokens are not parsed); streaming the ids through IncrementalDecoder gives
// the same text; parsing control tokens never crashes either.
let fuzzBytePairTokenizer: BytePairTokenizer = {
    let path =
        ProcessInfo.processInfo.environment["FUZZ_GGUF"].flatMap { $0.isEmpty ? nil : $0 }
        ?? "Fixtures/generation/tiny-qwen2.gguf"
    let file = try! GGUFFile(contentsOf: URL(fileURLWithPath: path))
    let metadata = file.metadata
    let tokens = try! metadata.strings("tokenizer.ggml.tokens")!
    let merges = try! metadata.strings("tokenizer.ggml.merges") ?? []
    let types = try! metadata.integers("tokenizer.ggml.token_type")?.map { Int32($0) }
    let name = try! metadata.string("tokenizer.ggml.pre") ?? "gpt2"
    let pre = BytePairPreTokenizer(rawValue: name == "default" ? "gpt2" : name)!
    return try! BytePairTokenizer(tokens: tokens, merges: merges, tokenTypes: types, preTokenizer: pre)
}()

/// The bytes with no token of their own in the vocabulary.
let fuzzBytePairMissing: Set<UInt8> = Set(
    (0...255).map(UInt8.init).filter { fuzzBytePairTokenizer.id(for: ByteLevel.string(of: [$0])) == nil })

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzBytePairInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    let tokenizer = fuzzBytePairTokenizer
    let tokens = tokenizer.encode(text, parsingControlTokens: false)
    var previous = text.startIndex
    for token in tokens {
        precondition(token.range.lowerBound >= previous && token.range.upperBound <= text.endIndex)
        precondition(token.range.lowerBound <= token.range.upperBound)
        previous = token.range.lowerBound
    }
    let ids = tokens.map(\.id)
    let kept = String(decoding: text.utf8.filter { !fuzzBytePairMissing.contains($0) }, as: UTF8.self)
    let decoded = tokenizer.decode(ids)
    // A character with a missing byte drops that byte (whatever remains of it is repaired).
    if text.utf8.allSatisfy({ $0 < 0x80 || !fuzzBytePairMissing.contains($0) }) {
        precondition(decoded == kept, "decode(encode(text)) differs: \(text.debugDescription)")
    }
    var streaming = IncrementalDecoder(tokenizer: tokenizer)
    var streamed = ""
    for id in ids { streamed += streaming.append(id) }
    streamed += streaming.finish()
    precondition(streamed == decoded, "the streamed text differs: \(text.debugDescription)")
    _ = tokenizer.encode(text, parsingControlTokens: true)
    return 0
}
