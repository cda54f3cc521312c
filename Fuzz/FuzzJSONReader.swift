// libFuzzer target: arbitrary bytes (UTF-8, repaired) through JSONReader, strictly and cut short.
// Checks: no crash; what the strict reader reads, the cut-short reader reads the same (completeness
// aside: a number at the very end may go on); every prefix of a strictly valid text is accepted by
// the cut-short reader unless it is only blanks; both repeated-key policies agree when no key repeats.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJSONReaderInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    let strict = try? JSONReader.read(text, acceptsTruncation: false, repeatedKeys: .keepLast)
    let lenient = try? JSONReader.read(text, acceptsTruncation: true, repeatedKeys: .keepLast)
    _ = try? JSONReader.read(text, acceptsTruncation: true, repeatedKeys: .refuse)
    guard let strict else { return 0 }
    guard let lenient else { preconditionFailure("strictly valid, refused cut short: \(text)") }
    precondition(sameValue(strict, lenient), "strict and cut-short readings differ: \(text)")
    precondition(strict.isComplete)
    if let refusing = try? JSONReader.read(text, acceptsTruncation: false, repeatedKeys: .refuse) {
        precondition(refusing == strict)
    }
    // Prefixes, cut between Unicode scalars (a few of them for a long text).
    let scalars = Array(text.unicodeScalars)
    let step = max(1, scalars.count / 16)
    for cut in stride(from: 0, to: scalars.count, by: step) {
        var prefix = String.UnicodeScalarView()
        prefix.append(contentsOf: scalars[..<cut])
        let head = String(prefix)
        if head.allSatisfy({ $0 == " " || $0 == "\n" || $0 == "\t" || $0 == "\r" }) { continue }
        do {
            _ = try JSONReader.read(head, acceptsTruncation: true, repeatedKeys: .keepLast)
        } catch {
            preconditionFailure(
                "a prefix of valid JSON refused cut short (\(error.message) at \(error.offset)): \(head)")
        }
    }
    return 0
}

/// The same value, whether or not each node is complete.
func sameValue(_ a: JSONNode, _ b: JSONNode) -> Bool {
    switch (a.kind, b.kind) {
    case (.array(let x), .array(let y)): return x.count == y.count && zip(x, y).allSatisfy { sameValue($0, $1) }
    case (.object(let x), .object(let y)):
        return x.count == y.count && zip(x, y).allSatisfy { $0.key == $1.key && sameValue($0.value, $1.value) }
    default: return a.kind == b.kind
    }
}
