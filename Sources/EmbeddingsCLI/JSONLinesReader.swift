import Foundation

/// Reads `{"id": "...", "text": "..."}` objects, one per line, from a file handle, streaming.
/// Blank lines are skipped. A line that is not such an object is a `CLIError.data` naming the line.
struct JSONLinesReader {
    struct Record {
        var id: String
        var text: String
    }

    private let handle: FileHandle
    private var buffer = Data()
    private var finished = false
    private(set) var lineNumber = 0

    init(handle: FileHandle) { self.handle = handle }

    /// The next raw line (without its newline), or `nil` at the end of input.
    mutating func nextLine() -> Data? {
        while true {
            if let newline = buffer.firstIndex(of: 0x0A) {
                let line = buffer[buffer.startIndex..<newline]
                buffer.removeSubrange(buffer.startIndex...newline)
                lineNumber += 1
                return Data(line)
            }
            if finished {
                guard !buffer.isEmpty else { return nil }
                let line = buffer
                buffer = Data()
                lineNumber += 1
                return line
            }
            let chunk = handle.readData(ofLength: 1 << 16)
            if chunk.isEmpty { finished = true } else { buffer.append(chunk) }
        }
    }

    /// The next record, or `nil` at the end of input.
    mutating func next() throws -> Record? {
        while let line = nextLine() {
            var bytes = line
            if bytes.last == 0x0D { bytes.removeLast() }
            if bytes.allSatisfy({ $0 == 0x20 || $0 == 0x09 }) { continue }
            return try Self.parse(bytes, line: lineNumber)
        }
        return nil
    }

    static func parse(_ raw: Data, line: Int) throws -> Record {
        // Invalid UTF-8 is repaired (each bad sequence becomes U+FFFD), as Swift strings do, with
        // a warning; the record is kept.
        var bytes = raw
        if String(data: raw, encoding: .utf8) == nil {
            bytes = Data(String(decoding: raw, as: UTF8.self).utf8)
            Console.warning("line \(line): invalid UTF-8 repaired (each bad byte sequence became U+FFFD)")
        }
        let object: Any
        do { object = try JSONSerialization.jsonObject(with: bytes, options: [.fragmentsAllowed]) } catch {
            throw CLIError.data("line \(line): not valid JSON")
        }
        guard let dictionary = object as? [String: Any] else { throw CLIError.data("line \(line): expected a JSON object") }
        guard let text = dictionary["text"] as? String else { throw CLIError.data("line \(line): missing string field \"text\"") }
        guard let id = dictionary["id"] as? String else { throw CLIError.data("line \(line): missing string field \"id\"") }
        return Record(id: id, text: text)
    }
}
