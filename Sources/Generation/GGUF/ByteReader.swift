/// A cursor over a file's bytes that checks every read against the end of the file. Reads are
/// little-endian and unaligned.
struct ByteReader {
    /// The whole file.
    let bytes: UnsafeRawBufferPointer
    /// The file's path, for error messages.
    let path: String
    /// The position of the next read.
    private(set) var offset = 0

    init(_ bytes: UnsafeRawBufferPointer, path: String) {
        self.bytes = bytes
        self.path = path
    }

    /// The bytes after the cursor.
    var remaining: Int { bytes.count - offset }

    /// An error at the cursor (or at `offset`) about `subject`.
    func error(_ code: GGUFError.Code, at offset: Int? = nil, _ subject: String?, _ detail: String) -> GGUFError {
        GGUFError(code, path: path, offset: offset ?? self.offset, subject: subject, detail: detail)
    }

    /// Throws `truncated` unless `count` more bytes are there. `what` names the field.
    func require(_ count: Int, _ what: @autoclosure () -> String, subject: String?) throws(GGUFError) {
        guard count <= remaining else {
            throw error(.truncated, subject, "\(what()) needs \(count) bytes, \(remaining) remain")
        }
    }

    /// The next little-endian integer of type `T`.
    mutating func read<T: FixedWidthInteger>(
        _ type: T.Type, _ what: @autoclosure () -> String, subject: String?
    ) throws(GGUFError) -> T {
        let size = MemoryLayout<T>.size
        try require(size, what(), subject: subject)
        // The bounds were checked above; an empty file never gets here, so baseAddress is set.
        let value = bytes.loadUnaligned(fromByteOffset: offset, as: T.self)
        offset += size
        return T(littleEndian: value)
    }

    /// A `UInt64` count or length that must fit in `Int`, and whose `count × minimumSize` bytes
    /// must fit in the rest of the file: checked before anything is allocated for it.
    mutating func readCount(_ what: @autoclosure () -> String, minimumSize: Int, subject: String?) throws(GGUFError)
        -> Int
    {
        let start = offset
        let declared = try read(UInt64.self, what(), subject: subject)
        guard let count = Int(exactly: declared), count <= remaining / max(minimumSize, 1) else {
            let needed = declared.multipliedReportingOverflow(by: UInt64(max(minimumSize, 1)))
            let bytes = needed.overflow ? "more than 2^64" : "\(needed.partialValue)"
            throw error(
                .truncated, at: start, subject,
                "\(what()) \(declared) needs at least \(bytes) bytes, \(remaining) remain")
        }
        return count
    }

    /// A GGUF string: a `UInt64` byte length, then that many bytes of UTF-8.
    mutating func readString(_ what: @autoclosure () -> String, subject: String?) throws(GGUFError) -> String {
        let start = offset
        let length = try readCount("\(what()) length", minimumSize: 1, subject: subject)
        let text = bytes.withMemoryRebound(to: UInt8.self) {
            String(validating: $0[offset..<(offset + length)], as: UTF8.self)
        }
        guard let text else { throw error(.invalidMetadata, at: start, subject, "\(what()) is not valid UTF-8") }
        offset += length
        return text
    }

    /// Moves the cursor forward by `count` bytes, which must be there.
    mutating func skip(_ count: Int, _ what: @autoclosure () -> String, subject: String?) throws(GGUFError) {
        try require(count, what(), subject: subject)
        offset += count
    }
}
