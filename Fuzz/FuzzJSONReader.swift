// libFuzzer target: arbitrary bytes (UTF-8, repaired) through JSONReader, strictly and cut short.
// Checks: no crash; what the strict reader reads, the cut-short reader reads the same (completeness
// aside: a number at the very end may go on); every prefix of a strictly valid text is accepted by
// the cut-short reader unless it is only blanks; both repeated-key policies agree when no key repeats.
// A strict reading is also decoded by JSONNodeDecoder into a request-shaped type (as the server
// decodes its bodies): it succeeds or throws a DecodingError, and a kept node is the member as read.
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
    decodeAsRequest(strict)
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

/// The shapes a request body has: optional scalars of each kind, nested arrays and objects, a
/// value that is one type or another, and a node kept as read.
private struct FuzzRequest: Decodable {
    struct Message: Decodable {
        let role: String
        let content: Content?
        let calls: [[String: String]]?
    }
    enum Content: Decodable {
        case text(String)
        case parts([[String: String?]])
        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let text = try? container.decode(String.self) {
                self = .text(text)
            } else {
                self = .parts(try container.decode([[String: String?]].self))
            }
        }
    }
    let model: String?
    let messages: [Message]?
    let n: Int?
    let seed: Int64?
    let small: UInt8?
    let temperature: Double?
    let ratio: Float?
    let stream: Bool?
    let schema: JSONNode?
}

private func decodeAsRequest(_ node: JSONNode) {
    do {
        let request = try JSONNodeDecoder().decode(FuzzRequest.self, from: node)
        if let schema = request.schema, case .object(let members) = node.kind {
            precondition(members.last(where: { $0.key == "schema" })?.value == schema, "the kept node differs")
        }
    } catch is DecodingError {
    } catch {
        preconditionFailure("JSONNodeDecoder threw something other than a DecodingError: \(error)")
    }
}
