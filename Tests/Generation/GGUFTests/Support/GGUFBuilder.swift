import GGUF

/// Appends GGUF fields to a byte image, little-endian, for tests that write whole files
/// (`makeGGUF`) or hand-craft broken ones field by field.
struct GGUFBuilder {
    private(set) var bytes: [UInt8] = []

    /// The number of bytes written so far.
    var count: Int { bytes.count }

    /// Any fixed-width integer, little-endian.
    mutating func append<T: FixedWidthInteger>(_ value: T) {
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    /// Raw bytes.
    mutating func append(bytes raw: [UInt8]) { bytes.append(contentsOf: raw) }

    /// A GGUF string: u64 byte length, then UTF-8.
    mutating func append(string: String) { append(stringBytes: Array(string.utf8)) }

    /// A GGUF string from raw bytes (which need not be UTF-8).
    mutating func append(stringBytes raw: [UInt8]) {
        append(UInt64(raw.count))
        bytes.append(contentsOf: raw)
    }

    /// The header: magic, version, tensor count, metadata entry count.
    mutating func appendHeader(version: UInt32 = 3, tensors: UInt64, entries: UInt64) {
        append(bytes: Array("GGUF".utf8))
        append(version)
        append(tensors)
        append(entries)
    }

    /// One metadata entry: key, value type, value.
    mutating func append(key: String, _ value: GGUFValue) {
        append(string: key)
        append(value.type.rawValue)
        append(payload: value)
    }

    /// A value without its type id.
    mutating func append(payload value: GGUFValue) {
        switch value {
        case .uint8(let v): append(v)
        case .int8(let v): append(v)
        case .uint16(let v): append(v)
        case .int16(let v): append(v)
        case .uint32(let v): append(v)
        case .int32(let v): append(v)
        case .uint64(let v): append(v)
        case .int64(let v): append(v)
        case .float32(let v): append(v.bitPattern)
        case .float64(let v): append(v.bitPattern)
        case .bool(let v): append(UInt8(v ? 1 : 0))
        case .string(let v): append(string: v)
        case .array(let a): append(array: a)
        }
    }

    /// An array: element type, count, elements.
    mutating func append(array: GGUFArray) {
        append(array.elementType.rawValue)
        append(UInt64(array.count))
        for i in 0..<array.count { append(payload: array[i]) }
    }

    /// One tensor info: name, n_dims, dimensions (innermost first), type id, offset.
    mutating func appendTensorInfo(name: String, dimensions: [UInt64], type: UInt32, offset: UInt64) {
        append(string: name)
        append(UInt32(dimensions.count))
        for d in dimensions { append(d) }
        append(type)
        append(offset)
    }

    /// Zero bytes up to the next multiple of `alignment`.
    mutating func pad(to alignment: Int) {
        while bytes.count % alignment != 0 { bytes.append(0) }
    }
}

/// A tensor for `makeGGUF`: its data bytes in the file's layout.
struct TestTensor {
    var name: String
    /// Innermost first, as GGUF stores them.
    var dimensions: [Int]
    var type: GGMLType
    var data: [UInt8]
    /// The offset to write instead of the laid-out one.
    var offset: Int? = nil
}

/// A whole GGUF file: header, metadata, tensor infos, padding to the alignment (the metadata's
/// `general.alignment`, else 32), then each tensor's data at the next aligned offset. Nothing
/// follows the last tensor, so cutting the file anywhere leaves something incomplete.
func makeGGUF(version: UInt32 = 3, metadata: [(String, GGUFValue)] = [], tensors: [TestTensor] = []) -> [UInt8] {
    let alignment = metadata.first { $0.0 == "general.alignment" }?.1.integerValue ?? 32
    var offsets = [Int]()
    var end = 0
    for tensor in tensors {
        let start = (end + alignment - 1) / alignment * alignment
        offsets.append(start)
        end = start + tensor.data.count
    }
    var builder = GGUFBuilder()
    builder.appendHeader(version: version, tensors: UInt64(tensors.count), entries: UInt64(metadata.count))
    for (key, value) in metadata { builder.append(key: key, value) }
    for (tensor, offset) in zip(tensors, offsets) {
        builder.appendTensorInfo(
            name: tensor.name, dimensions: tensor.dimensions.map { UInt64($0) }, type: tensor.type.rawValue,
            offset: UInt64(tensor.offset ?? offset))
    }
    if !tensors.isEmpty { builder.pad(to: alignment) }
    let dataStart = builder.count
    for (tensor, offset) in zip(tensors, offsets) {
        builder.append(bytes: [UInt8](repeating: 0, count: dataStart + offset - builder.count))
        builder.append(bytes: tensor.data)
    }
    return builder.bytes
}

/// `values` as little-endian F32 bytes.
func f32Bytes(_ values: [Float]) -> [UInt8] {
    var builder = GGUFBuilder()
    for v in values { builder.append(v.bitPattern) }
    return builder.bytes
}

/// The half-precision bit pattern of `value`, little-endian, as two bytes.
func halfBytes(_ value: Float) -> [UInt8] {
    let bits = Float16(value).bitPattern
    return [UInt8(bits & 0xFF), UInt8(bits >> 8)]
}
