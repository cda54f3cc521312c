/// Reads and validates the parts of a GGUF file before the tensor data:
///
///     header        magic "GGUF", version u32, tensor count u64, metadata entry count u64
///     metadata      per entry: key (string), value type u32, value
///     tensor infos  per tensor: name (string), n_dims u32, ne[n_dims] u64, type u32, offset u64
///     padding       to `general.alignment` (default 32)
///     data          each tensor at data start + its offset
///
/// A string is a u64 byte length then UTF-8; an array is an element type u32, a u64 count, then
/// the elements. Everything is little-endian. Every field is checked before it is used.
enum GGUFParser {
    /// What a successful parse found.
    struct Parsed {
        var version: UInt32
        var metadata: GGUFMetadata
        var tensors: [GGUFTensorInfo]
        var alignment: Int
        var dataOffset: Int
    }

    /// The smallest tensor info: an empty name (8), n_dims (4), type (4) and offset (8).
    static let minimumTensorInfoSize = 24
    /// The smallest metadata entry: an empty key (8), the value type (4) and a one-byte value.
    static let minimumEntrySize = 13
    /// The key that sets the data alignment.
    static let alignmentKey = "general.alignment"

    /// Parses the file image `bytes`.
    /// - Throws: `GGUFError` naming the offset, the key or tensor, and the problem.
    static func parse(_ bytes: UnsafeRawBufferPointer, path: String) throws(GGUFError) -> Parsed {
        var reader = ByteReader(bytes, path: path)
        let version = try readHeader(&reader)
        let tensorCount = try reader.readCount("tensor count", minimumSize: minimumTensorInfoSize, subject: nil)
        let entryCount = try reader.readCount("metadata entry count", minimumSize: minimumEntrySize, subject: nil)
        let metadata = try readMetadata(&reader, count: entryCount)
        let alignment = try readAlignment(metadata, reader: reader)
        var infos = [(tensor: GGUFTensorInfo, at: Int)]()
        var names = [String: Int]()
        for i in 0..<tensorCount {
            let start = reader.offset
            let info = try readTensorInfo(&reader, number: i)
            if let first = names[info.name] {
                throw reader.error(
                    .invalidTensorInfo, at: start, GGUFError.tensor(info.name),
                    "duplicate tensor name (first described at byte \(first))")
            }
            names[info.name] = start
            infos.append((info, start))
        }
        let dataOffset = try alignedUp(reader.offset, to: alignment, reader: reader)
        try checkLayout(infos, dataOffset: dataOffset, alignment: alignment, reader: reader)
        return Parsed(
            version: version, metadata: metadata, tensors: infos.map(\.tensor), alignment: alignment,
            dataOffset: dataOffset)
    }

    // MARK: - Header

    private static func readHeader(_ reader: inout ByteReader) throws(GGUFError) -> UInt32 {
        let magic: [UInt8] = Array("GGUF".utf8)
        let present = min(reader.remaining, magic.count)
        let found = (0..<present).map { reader.bytes[$0] }
        guard found == Array(magic.prefix(present)) else {
            let shown = found.map { $0 >= 0x20 && $0 < 0x7F ? String(UnicodeScalar($0)) : "\\x" + hex($0) }.joined()
            throw reader.error(.notGGUF, at: 0, nil, "expected the magic \"GGUF\", found \"\(shown)\"")
        }
        try reader.skip(magic.count, "the magic \"GGUF\"", subject: nil)
        let version = try reader.read(UInt32.self, "version", subject: nil)
        if GGUFFile.supportedVersions.contains(version) { return version }
        if (1...3).contains(version.byteSwapped) {
            throw reader.error(
                .bigEndian, at: 4, nil,
                "the version reads \(version), which is \(version.byteSwapped) byte-swapped: the file is big-endian; "
                    + "only little-endian files are supported")
        }
        throw reader.error(.unsupportedVersion, at: 4, nil, "version \(version) is not supported; supported: 2, 3")
    }

    private static func hex(_ byte: UInt8) -> String {
        let digits = Array("0123456789abcdef")
        return String([digits[Int(byte >> 4)], digits[Int(byte & 15)]])
    }

    // MARK: - Metadata

    private static func readMetadata(_ reader: inout ByteReader, count: Int) throws(GGUFError) -> GGUFMetadata {
        var entries = [GGUFMetadata.Entry]()
        var seen = [String: Int]()
        for i in 0..<count {
            let start = reader.offset
            let key = try reader.readString("key of metadata entry \(i)", subject: nil)
            let subject = GGUFError.key(key)
            if let first = seen[key] {
                throw reader.error(.invalidMetadata, at: start, subject, "duplicate key (first at byte \(first))")
            }
            seen[key] = start
            let type = try readValueType(&reader, "value type", subject: subject)
            let value = try readValue(&reader, type: type, depth: 0, subject: subject)
            entries.append(GGUFMetadata.Entry(key: key, value: value, offset: start))
        }
        return GGUFMetadata(entries: entries, path: reader.path)
    }

    private static func readValueType(_ reader: inout ByteReader, _ what: String, subject: String) throws(GGUFError)
        -> GGUFValueType
    {
        let start = reader.offset
        let raw = try reader.read(UInt32.self, what, subject: subject)
        guard let type = GGUFValueType(rawValue: raw) else {
            throw reader.error(.invalidMetadata, at: start, subject, "unknown \(what) \(raw); known: 0…12")
        }
        return type
    }

    private static func readValue(
        _ reader: inout ByteReader, type: GGUFValueType, depth: Int, subject: String
    ) throws(GGUFError) -> GGUFValue {
        switch type {
        case .uint8: return .uint8(try reader.read(UInt8.self, "uint8 value", subject: subject))
        case .int8: return .int8(try reader.read(Int8.self, "int8 value", subject: subject))
        case .uint16: return .uint16(try reader.read(UInt16.self, "uint16 value", subject: subject))
        case .int16: return .int16(try reader.read(Int16.self, "int16 value", subject: subject))
        case .uint32: return .uint32(try reader.read(UInt32.self, "uint32 value", subject: subject))
        case .int32: return .int32(try reader.read(Int32.self, "int32 value", subject: subject))
        case .uint64: return .uint64(try reader.read(UInt64.self, "uint64 value", subject: subject))
        case .int64: return .int64(try reader.read(Int64.self, "int64 value", subject: subject))
        case .float32:
            return .float32(Float(bitPattern: try reader.read(UInt32.self, "float32 value", subject: subject)))
        case .float64:
            return .float64(Double(bitPattern: try reader.read(UInt64.self, "float64 value", subject: subject)))
        case .bool: return .bool(try readBool(&reader, "bool value", subject: subject))
        case .string: return .string(try reader.readString("string value", subject: subject))
        case .array: return .array(try readArray(&reader, depth: depth + 1, subject: subject))
        }
    }

    private static func readBool(_ reader: inout ByteReader, _ what: String, subject: String) throws(GGUFError) -> Bool
    {
        let start = reader.offset
        let byte = try reader.read(UInt8.self, what, subject: subject)
        guard byte <= 1 else {
            throw reader.error(.invalidMetadata, at: start, subject, "\(what) is \(byte), expected 0 or 1")
        }
        return byte == 1
    }

    private static func readArray(_ reader: inout ByteReader, depth: Int, subject: String) throws(GGUFError)
        -> GGUFArray
    {
        guard depth <= GGUFFile.maximumArrayDepth else {
            throw reader.error(
                .invalidMetadata, subject,
                "arrays nested \(depth) deep, more than the \(GGUFFile.maximumArrayDepth) allowed")
        }
        let type = try readValueType(&reader, "array element type", subject: subject)
        let count = try reader.readCount("array length", minimumSize: type.minimumByteCount, subject: subject)
        switch type {
        case .uint8: return .uint8(try readScalars(&reader, count, subject: subject))
        case .int8: return .int8(try readScalars(&reader, count, subject: subject))
        case .uint16: return .uint16(try readScalars(&reader, count, subject: subject))
        case .int16: return .int16(try readScalars(&reader, count, subject: subject))
        case .uint32: return .uint32(try readScalars(&reader, count, subject: subject))
        case .int32: return .int32(try readScalars(&reader, count, subject: subject))
        case .uint64: return .uint64(try readScalars(&reader, count, subject: subject))
        case .int64: return .int64(try readScalars(&reader, count, subject: subject))
        case .float32:
            let bits: [UInt32] = try readScalars(&reader, count, subject: subject)
            return .float32(bits.map(Float.init(bitPattern:)))
        case .float64:
            let bits: [UInt64] = try readScalars(&reader, count, subject: subject)
            return .float64(bits.map(Double.init(bitPattern:)))
        case .bool:
            var flags = [Bool]()
            flags.reserveCapacity(count)
            for i in 0..<count { flags.append(try readBool(&reader, "array element \(i)", subject: subject)) }
            return .bool(flags)
        case .string:
            var strings = [String]()
            strings.reserveCapacity(count)
            for i in 0..<count { strings.append(try reader.readString("array element \(i)", subject: subject)) }
            return .string(strings)
        case .array:
            var arrays = [GGUFArray]()
            for _ in 0..<count { arrays.append(try readArray(&reader, depth: depth + 1, subject: subject)) }
            return .array(arrays)
        }
    }

    /// `count` little-endian integers; `readCount` has already checked that they are there.
    private static func readScalars<T: FixedWidthInteger>(_ reader: inout ByteReader, _ count: Int, subject: String)
        throws(GGUFError) -> [T]
    {
        let size = MemoryLayout<T>.size
        try reader.require(count * size, "\(count) array elements", subject: subject)
        let start = reader.offset
        let bytes = reader.bytes
        let values = [T](unsafeUninitializedCapacity: count) { buffer, initialized in
            for i in 0..<count {
                buffer[i] = T(littleEndian: bytes.loadUnaligned(fromByteOffset: start + i * size, as: T.self))
            }
            initialized = count
        }
        try reader.skip(count * size, "\(count) array elements", subject: subject)
        return values
    }

    private static func readAlignment(_ metadata: GGUFMetadata, reader: ByteReader) throws(GGUFError) -> Int {
        guard let index = metadata.entries.firstIndex(where: { $0.key == alignmentKey }) else {
            return GGUFFile.defaultAlignment
        }
        let entry = metadata.entries[index]
        guard let alignment = entry.value.integerValue, alignment > 0, alignment & (alignment - 1) == 0 else {
            throw reader.error(
                .invalidMetadata, at: entry.offset, GGUFError.key(alignmentKey),
                "expected a power of two above zero, found \(entry.value.summary)")
        }
        return alignment
    }

    // MARK: - Tensor infos

    private static func readTensorInfo(_ reader: inout ByteReader, number: Int) throws(GGUFError) -> GGUFTensorInfo {
        let start = reader.offset
        let name = try reader.readString("name of tensor \(number)", subject: nil)
        let subject = GGUFError.tensor(name)
        let rankOffset = reader.offset
        let rank = try reader.read(UInt32.self, "dimension count", subject: subject)
        guard rank <= GGUFFile.maximumDimensions else {
            throw reader.error(
                .invalidTensorInfo, at: rankOffset, subject,
                "\(rank) dimensions, at most \(GGUFFile.maximumDimensions) allowed")
        }
        var dimensions = [Int]()
        for d in 0..<Int(rank) {
            let at = reader.offset
            let raw = try reader.read(UInt64.self, "dimension \(d)", subject: subject)
            guard let value = Int(exactly: raw) else {
                throw reader.error(.invalidTensorInfo, at: at, subject, "dimension \(d) is \(raw), more than 2^63 - 1")
            }
            dimensions.append(value)
        }
        let typeOffset = reader.offset
        let rawType = try reader.read(UInt32.self, "type", subject: subject)
        guard let type = GGMLType(rawValue: rawType) else {
            throw reader.error(.unknownTensorType, at: typeOffset, subject, "type id \(rawType) is not a ggml type")
        }
        let dataOffsetAt = reader.offset
        let rawOffset = try reader.read(UInt64.self, "data offset", subject: subject)
        guard let offset = Int(exactly: rawOffset) else {
            throw reader.error(
                .invalidTensorLayout, at: dataOffsetAt, subject, "data offset \(rawOffset) is more than 2^63 - 1")
        }
        let (elements, bytes) = try sizes(dimensions, type: type, reader: reader, at: start, subject: subject)
        return GGUFTensorInfo(
            name: name, dimensions: dimensions, type: type, offset: offset, elementCount: elements, byteCount: bytes)
    }

    /// The element and byte counts of a tensor, every product checked for overflow.
    private static func sizes(
        _ dimensions: [Int], type: GGMLType, reader: ByteReader, at start: Int, subject: String
    ) throws(GGUFError) -> (elements: Int, bytes: Int) {
        let rowLength = dimensions.first ?? 1
        guard rowLength % type.blockSize == 0 else {
            throw reader.error(
                .invalidTensorInfo, at: start, subject,
                "row length \(rowLength) is not a multiple of \(type.name)'s block size \(type.blockSize)")
        }
        var rows = 1
        for dimension in dimensions.dropFirst() {
            let (product, overflow) = rows.multipliedReportingOverflow(by: dimension)
            guard !overflow else {
                throw reader.error(
                    .invalidTensorInfo, at: start, subject, "dimensions \(dimensions) overflow: more than 2^63 rows")
            }
            rows = product
        }
        let elements = rowLength.multipliedReportingOverflow(by: rows)
        let rowBytes = (rowLength / type.blockSize).multipliedReportingOverflow(by: type.blockByteCount)
        let bytes = rowBytes.partialValue.multipliedReportingOverflow(by: rows)
        guard !elements.overflow, !rowBytes.overflow, !bytes.overflow else {
            throw reader.error(
                .invalidTensorInfo, at: start, subject,
                "dimensions \(dimensions) of \(type.name) overflow: more than 2^63 elements or bytes")
        }
        return (elements.partialValue, bytes.partialValue)
    }

    private static func alignedUp(_ offset: Int, to alignment: Int, reader: ByteReader) throws(GGUFError) -> Int {
        let (sum, overflow) = offset.addingReportingOverflow(alignment - 1)
        guard !overflow else {
            throw reader.error(
                .invalidMetadata, at: offset, GGUFError.key(alignmentKey),
                "alignment \(alignment) overflows the data offset")
        }
        return sum & ~(alignment - 1)
    }

    /// Every tensor aligned, inside the file, and apart from the others.
    private static func checkLayout(
        _ infos: [(tensor: GGUFTensorInfo, at: Int)], dataOffset: Int, alignment: Int, reader: ByteReader
    ) throws(GGUFError) {
        let fileSize = reader.bytes.count
        var ranges = [(start: Int, end: Int, index: Int)]()
        ranges.reserveCapacity(infos.count)
        for (i, (tensor, at)) in infos.enumerated() {
            let subject = GGUFError.tensor(tensor.name)
            guard tensor.offset % alignment == 0 else {
                throw reader.error(
                    .invalidTensorLayout, at: at, subject,
                    "data offset \(tensor.offset) is not a multiple of the alignment \(alignment)")
            }
            let start = dataOffset.addingReportingOverflow(tensor.offset)
            let end = start.partialValue.addingReportingOverflow(tensor.byteCount)
            guard !start.overflow, !end.overflow, end.partialValue <= fileSize else {
                let endText = start.overflow || end.overflow ? "beyond 2^63" : "\(end.partialValue)"
                throw reader.error(
                    .invalidTensorLayout, at: at, subject,
                    "\(tensor.byteCount) bytes of \(tensor.type.name) data at file offset "
                        + "\(dataOffset) + \(tensor.offset) end at \(endText), past the end of the file at \(fileSize)"
                )
            }
            if tensor.byteCount > 0 { ranges.append((start.partialValue, end.partialValue, i)) }
        }
        ranges.sort { ($0.start, $0.end) < ($1.start, $1.end) }
        for (a, b) in zip(ranges, ranges.dropFirst()) where a.end > b.start {
            let first = infos[a.index]
            let second = infos[b.index]
            throw reader.error(
                .invalidTensorLayout, at: second.at, GGUFError.tensor(second.tensor.name),
                "data at file bytes \(b.start)..<\(b.end) overlaps tensor '\(first.tensor.name)' "
                    + "at \(a.start)..<\(a.end)")
        }
    }
}
