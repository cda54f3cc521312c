// libFuzzer target: arbitrary bytes (UTF-8 with repair) as a Markdown page.
// Checks: no crash, unique ids, every chunk starts with its title header.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzChunkerInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    let chunks = MarkdownChunker(targetLength: 120).chunks(of: text, source: "dir/page.md")
    precondition(Set(chunks.map(\.id)).count == chunks.count)
    for chunk in chunks { precondition(chunk.text.hasPrefix(chunk.title)) }
    return 0
}
