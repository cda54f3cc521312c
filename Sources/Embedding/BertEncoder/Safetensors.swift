import Foundation
import LinearAlgebra

/// A safetensors file, memory-mapped: an 8-byte little-endian header length, a JSON header
/// naming each tensor's dtype, shape and byte range, then the raw data.
///
/// Every inconsistency is an `EncoderError.invalidSafetensors` naming the tensor and the problem:
/// a header longer than the file or than 100 MB, a header that is not a JSON object, an unknown
/// dtype, a shape whose element count does not match the byte range, byte ranges out of the
/// data section or overlapping.
package struct SafetensorsFile: Sendable {
    /// The element types this reader understands. Integer tensors are listed but not converted.
    package enum DType: String, Sendable {
        /// Float types, which `floats(_:shape:)` converts to `Float`.
        case f32 = "F32"
        case f16 = "F16"
        case bf16 = "BF16"
        case f64 = "F64"
        /// Integer and boolean types, listed in `tensors` but not converted.
        case i64 = "I64"
        case i32 = "I32"
        case u8 = "U8"
        case i8 = "I8"
        case bool = "BOOL"

        var size: Int {
            switch self {
            case .f32, .i32: return 4
            case .f16, .bf16: return 2
            case .i64, .f64: return 8
            case .u8, .i8, .bool: return 1
            }
        }
    }

    /// One tensor's description.
    package struct TensorInfo: Equatable, Sendable {
        /// The element type.
        package var dtype: DType
        /// The dimensions, outermost first (empty for a scalar).
        package var shape: [Int]
        /// Byte range within the data section.
        package var range: Range<Int>
    }

    /// The largest header accepted, in bytes (100 MB).
    package static let maximumHeaderSize = 100_000_000

    /// The path it was read from.
    package let path: String
    /// Tensors by name.
    package let tensors: [String: TensorInfo]
    /// The `__metadata__` strings, if any.
    package let metadata: [String: String]
    /// The file's bytes, memory-mapped by Foundation.
    private let data: Data
    private let dataOffset: Int

    /// Maps and validates the file at `url`.
    /// - Throws: `io` when it cannot be read, `invalidSafetensors` when it is malformed.
    package init(contentsOf url: URL) throws {
        path = url.path
        do { data = try Data(contentsOf: url, options: .alwaysMapped) } catch {
            throw EncoderError.io(path: url.path, reason: "cannot read: \(error.localizedDescription)")
        }
        let path = self.path
        (tensors, metadata, dataOffset) = try data.withUnsafeBytes { try Self.parse($0, path: path) }
    }

    /// Parses and validates a safetensors byte image (for tests and fuzzing): the tensors, the
    /// metadata and where the data section starts. `bytes` is read only during the call.
    /// - Throws: `invalidSafetensors` naming the tensor and the problem.
    package static func parse(_ bytes: UnsafeRawBufferPointer, path: String) throws -> (
        tensors: [String: TensorInfo], metadata: [String: String], dataOffset: Int
    ) {
        func fail(_ reason: String) -> EncoderError { .invalidSafetensors(path: path, reason: reason) }
        guard bytes.count >= 8 else { throw fail("file has \(bytes.count) bytes, fewer than the 8-byte header length") }
        let declared = UInt64(littleEndian: bytes.loadUnaligned(as: UInt64.self))
        guard declared <= UInt64(maximumHeaderSize) else {
            throw fail("header length \(declared) exceeds the 100 MB limit")
        }
        let headerLength = Int(declared)
        guard headerLength <= bytes.count - 8 else {
            throw fail("header length \(headerLength) exceeds the \(bytes.count - 8) bytes after it")
        }
        let headerData = Data(bytes[8..<(8 + headerLength)])
        let json: Any
        do { json = try JSONSerialization.jsonObject(with: headerData) } catch {
            throw fail("header is not valid JSON")
        }
        guard let object = json as? [String: Any] else { throw fail("header is not a JSON object") }
        let dataOffset = 8 + headerLength
        let dataSize = bytes.count - dataOffset
        var tensors = [String: TensorInfo]()
        var metadata = [String: String]()
        for (name, value) in object {
            if name == "__metadata__" {
                guard let m = value as? [String: Any] else { throw fail("__metadata__ is not an object") }
                for (k, v) in m {
                    guard let s = v as? String else { throw fail("__metadata__ value for '\(k)' is not a string") }
                    metadata[k] = s
                }
                continue
            }
            guard let entry = value as? [String: Any] else { throw fail("tensor '\(name)' is not an object") }
            guard let dtypeName = entry["dtype"] as? String else { throw fail("tensor '\(name)' has no dtype") }
            guard let dtype = DType(rawValue: dtypeName) else {
                throw fail("tensor '\(name)' has unknown dtype '\(dtypeName)'")
            }
            guard let shapeValues = entry["shape"] as? [Any] else { throw fail("tensor '\(name)' has no shape") }
            var shape = [Int]()
            var elements = 1
            for dimension in shapeValues {
                guard let number = dimension as? NSNumber, let n = Int(exactly: number.doubleValue), n >= 0 else {
                    throw fail("tensor '\(name)' has an invalid shape entry")
                }
                let (product, overflow) = elements.multipliedReportingOverflow(by: n)
                guard !overflow, product <= dataSize else {
                    throw fail("tensor '\(name)' shape \(shapeValues) is larger than the file")
                }
                elements = product
                shape.append(n)
            }
            guard let offsets = entry["data_offsets"] as? [Any], offsets.count == 2,
                let start = (offsets[0] as? NSNumber)?.intValue, let end = (offsets[1] as? NSNumber)?.intValue
            else { throw fail("tensor '\(name)' has no valid data_offsets") }
            guard start >= 0, start <= end, end <= dataSize else {
                throw fail(
                    "tensor '\(name)' data_offsets [\(start), \(end)] are outside the \(dataSize)-byte data section")
            }
            guard end - start == elements * dtype.size else {
                throw fail(
                    "tensor '\(name)' holds \(end - start) bytes but shape \(shape) of \(dtypeName) needs \(elements * dtype.size)"
                )
            }
            tensors[name] = TensorInfo(dtype: dtype, shape: shape, range: start..<end)
        }
        let ordered = tensors.sorted {
            ($0.value.range.lowerBound, $0.value.range.upperBound) < (
                $1.value.range.lowerBound, $1.value.range.upperBound
            )
        }
        for (a, b) in zip(ordered, ordered.dropFirst()) where a.value.range.overlaps(b.value.range) {
            throw fail("tensors '\(a.key)' and '\(b.key)' overlap")
        }
        return (tensors, metadata, dataOffset)
    }

    /// The tensor `name` as `Float` values (F32 copied, F16/BF16/F64 converted), checking its shape.
    /// - Throws: `missingTensor`, `shapeMismatch`, or `invalidSafetensors` for integer dtypes.
    package func floats(_ name: String, shape expected: [Int]) throws -> [Float] {
        guard let info = tensors[name] else { throw EncoderError.missingTensor(path: path, name: name) }
        guard info.shape == expected else {
            throw EncoderError.shapeMismatch(path: path, name: name, expected: expected, actual: info.shape)
        }
        let count = info.shape.reduce(1, *)
        return try data.withUnsafeBytes { bytes in
            guard count > 0, let start = bytes.baseAddress else { return [] }
            return try convert(start + dataOffset + info.range.lowerBound, count: count, dtype: info.dtype, name: name)
        }
    }

    private func convert(_ base: UnsafeRawPointer, count: Int, dtype: DType, name: String) throws -> [Float] {
        switch dtype {
        case .f32:
            #if _endian(little)
                // Same layout in the file and in memory: one copy.
                return [Float](unsafeUninitializedCapacity: count) { buffer, initialized in
                    UnsafeMutableRawPointer(buffer.baseAddress!).copyMemory(from: base, byteCount: 4 * count)
                    initialized = count
                }
            #else
                return (0..<count).map {
                    Float(bitPattern: UInt32(littleEndian: base.loadUnaligned(fromByteOffset: 4 * $0, as: UInt32.self)))
                }
            #endif
        case .f16:
            return (0..<count).map {
                HalfFloat.float(
                    fromHalf: UInt16(littleEndian: base.loadUnaligned(fromByteOffset: 2 * $0, as: UInt16.self)))
            }
        case .bf16:
            return (0..<count).map {
                Float(
                    bitPattern: UInt32(
                        UInt16(littleEndian: base.loadUnaligned(fromByteOffset: 2 * $0, as: UInt16.self))) << 16)
            }
        case .f64:
            return (0..<count).map {
                Float(
                    Double(
                        bitPattern: UInt64(littleEndian: base.loadUnaligned(fromByteOffset: 8 * $0, as: UInt64.self))))
            }
        default:
            throw EncoderError.invalidSafetensors(
                path: path, reason: "tensor '\(name)' has dtype \(dtype.rawValue), expected a float type")
        }
    }

}
