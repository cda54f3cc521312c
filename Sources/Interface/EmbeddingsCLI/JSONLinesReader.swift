import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Reads `{"id": "...", "text": "..."}` objects, one per line, from a file handle, streaming.
/// Blank lines are skipped. A line that is not such an object is a `CLIError.data` naming the line.
///
/// Linear in the input whatever its line lengths: the newline search resumes where the last one
/// stopped, and the lines already returned are dropped from the buffer only once they make up
/// half of it, so each byte is searched once and moved at most once on average.
struct JSONLinesReader {
    struct Record {
        var id: String
        var text: String
    }

    /// The most bytes one read asks for.
    static let readSize = 1 << 16

    private let read: (Int) -> Data
    private var buffer = [UInt8]()
    /// Where the next line begins; the bytes before it are lines already returned.
    private var start = 0
    /// `buffer[start..<searched]` holds no newline.
    private var searched = 0
    private var finished = false
    private(set) var lineNumber = 0
    /// The bytes examined for a newline so far (tests check that it stays within the input).
    private(set) var bytesSearched = 0
    /// The bytes moved to the front of the buffer so far (likewise).
    private(set) var bytesMoved = 0

    init(handle: FileHandle) { self.init { handle.readData(ofLength: $0) } }

    /// A reader of the bytes `read(n)` returns, at most `n` at a time; empty at the end.
    init(read: @escaping (Int) -> Data) { self.read = read }

    /// The next raw line (without its newline), or `nil` at the end of input.
    mutating func nextLine() -> Data? {
        while true {
            if let newline = nextNewline() {
                let line = Data(buffer[start..<newline])
                start = newline + 1
                searched = start
                lineNumber += 1
                return line
            }
            if finished {
                guard start < buffer.count else { return nil }
                let line = Data(buffer[start...])
                start = buffer.count
                searched = start
                lineNumber += 1
                return line
            }
            let chunk = read(Self.readSize)
            if chunk.isEmpty { finished = true } else { append(chunk) }
        }
    }

    /// The index of the next newline at or after `start`, searching only bytes not searched before.
    private mutating func nextNewline() -> Int? {
        let from = searched
        let count = buffer.count - from
        guard count > 0 else { return nil }
        let found = buffer.withUnsafeBytes { bytes in
            memchr(bytes.baseAddress! + from, 0x0A, count).map {
                $0 - UnsafeMutableRawPointer(mutating: bytes.baseAddress!)
            }
        }
        searched = found.map { $0 + 1 } ?? buffer.count
        bytesSearched += searched - from
        return found
    }

    /// Appends a read, first dropping the returned lines when they are at least half the buffer
    /// (what is moved is then at most what was consumed since the last move).
    private mutating func append(_ chunk: Data) {
        if start > 0, start >= buffer.count - start {
            bytesMoved += buffer.count - start
            buffer.removeSubrange(0..<start)
            searched -= start
            start = 0
        }
        buffer.append(contentsOf: chunk)
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
        guard let dictionary = object as? [String: Any] else {
            throw CLIError.data("line \(line): expected a JSON object")
        }
        guard let text = dictionary["text"] as? String else {
            throw CLIError.data("line \(line): missing string field \"text\"")
        }
        guard let id = dictionary["id"] as? String else {
            throw CLIError.data("line \(line): missing string field \"id\"")
        }
        return Record(id: id, text: text)
    }
}
