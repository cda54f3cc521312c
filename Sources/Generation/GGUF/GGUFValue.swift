/// The type id of a GGUF metadata value, as stored in the file (a little-endian `UInt32`).
package enum GGUFValueType: UInt32, Sendable, CaseIterable, CustomStringConvertible {
    /// An unsigned 8-bit integer.
    case uint8 = 0
    /// A signed 8-bit integer.
    case int8 = 1
    /// An unsigned 16-bit integer, little-endian.
    case uint16 = 2
    /// A signed 16-bit integer, little-endian.
    case int16 = 3
    /// An unsigned 32-bit integer, little-endian.
    case uint32 = 4
    /// A signed 32-bit integer, little-endian.
    case int32 = 5
    /// An IEEE single, little-endian.
    case float32 = 6
    /// One byte, 0 or 1.
    case bool = 7
    /// A `UInt64` byte length, then that many bytes of UTF-8 (no terminator).
    case string = 8
    /// A `UInt32` element type, a `UInt64` count, then the elements (arrays may hold arrays).
    case array = 9
    /// An unsigned 64-bit integer, little-endian.
    case uint64 = 10
    /// A signed 64-bit integer, little-endian.
    case int64 = 11
    /// An IEEE double, little-endian.
    case float64 = 12

    /// The type's name as the GGUF specification spells it, as in `uint32`.
    package var description: String {
        switch self {
        case .uint8: return "uint8"
        case .int8: return "int8"
        case .uint16: return "uint16"
        case .int16: return "int16"
        case .uint32: return "uint32"
        case .int32: return "int32"
        case .float32: return "float32"
        case .bool: return "bool"
        case .string: return "string"
        case .array: return "array"
        case .uint64: return "uint64"
        case .int64: return "int64"
        case .float64: return "float64"
        }
    }

    /// The fewest bytes one value of this type takes in a file: its size for a scalar, the length
    /// field for a string, the type and count fields for an array. Bounds declared counts before
    /// anything is allocated for them.
    var minimumByteCount: Int {
        switch self {
        case .uint8, .int8, .bool: return 1
        case .uint16, .int16: return 2
        case .uint32, .int32, .float32: return 4
        case .uint64, .int64, .float64, .string: return 8
        case .array: return 12
        }
    }
}

/// One metadata value of a GGUF file.
///
/// `Equatable` compares values as Swift does: a `float32(.nan)` is not equal to itself.
///
/// ```swift
/// if case .string(let architecture)? = file.metadata["general.architecture"] { … }
/// let layers = try file.metadata.integer("llama.block_count")  // Int?, from any integer type
/// ```
package enum GGUFValue: Sendable, Equatable {
    /// An unsigned 8-bit integer.
    case uint8(UInt8)
    /// A signed 8-bit integer.
    case int8(Int8)
    /// An unsigned 16-bit integer.
    case uint16(UInt16)
    /// A signed 16-bit integer.
    case int16(Int16)
    /// An unsigned 32-bit integer.
    case uint32(UInt32)
    /// A signed 32-bit integer.
    case int32(Int32)
    /// A single-precision float.
    case float32(Float)
    /// A boolean.
    case bool(Bool)
    /// UTF-8 text.
    case string(String)
    /// An array of values of one type.
    case array(GGUFArray)
    /// An unsigned 64-bit integer.
    case uint64(UInt64)
    /// A signed 64-bit integer.
    case int64(Int64)
    /// A double-precision float.
    case float64(Double)

    /// The value's type id.
    package var type: GGUFValueType {
        switch self {
        case .uint8: return .uint8
        case .int8: return .int8
        case .uint16: return .uint16
        case .int16: return .int16
        case .uint32: return .uint32
        case .int32: return .int32
        case .float32: return .float32
        case .bool: return .bool
        case .string: return .string
        case .array: return .array
        case .uint64: return .uint64
        case .int64: return .int64
        case .float64: return .float64
        }
    }

    /// The text of a `string` value; nil for any other type.
    package var stringValue: String? {
        if case .string(let text) = self { return text }
        return nil
    }

    /// An integer value of any width or signedness as `Int`; nil for other types and for a
    /// `uint64` above `Int.max`.
    package var integerValue: Int? {
        switch self {
        case .uint8(let v): return Int(v)
        case .int8(let v): return Int(v)
        case .uint16(let v): return Int(v)
        case .int16(let v): return Int(v)
        case .uint32(let v): return Int(v)
        case .int32(let v): return Int(v)
        case .uint64(let v): return Int(exactly: v)
        case .int64(let v): return Int(v)
        default: return nil
        }
    }

    /// A `float32` or `float64` value as `Double` (exact for both); nil for other types.
    package var floatValue: Double? {
        switch self {
        case .float32(let v): return Double(v)
        case .float64(let v): return v
        default: return nil
        }
    }

    /// The value of a `bool`; nil for any other type.
    package var boolValue: Bool? {
        if case .bool(let flag) = self { return flag }
        return nil
    }

    /// The array of an `array` value; nil for any other type.
    package var arrayValue: GGUFArray? {
        if case .array(let array) = self { return array }
        return nil
    }

    /// How the value reads in an error message: its type, and the value itself when short.
    var summary: String {
        switch self {
        case .string(let text):
            return text.utf8.count <= 40 ? "string \"\(text)\"" : "string of \(text.utf8.count) bytes"
        case .array(let array): return "array of \(array.count) \(array.elementType)"
        case .bool(let flag): return "bool \(flag)"
        case .float32(let v): return "float32 \(v)"
        case .float64(let v): return "float64 \(v)"
        case .uint64(let v): return "uint64 \(v)"
        default: return "\(type) \(integerValue.map(String.init) ?? "")"
        }
    }
}

/// A GGUF array: one element type, any number of elements. An array of arrays holds arrays whose
/// element types may differ from one another.
///
/// An empty array keeps its element type: `.uint32([])` and `.string([])` differ.
package enum GGUFArray: Sendable, Equatable {
    /// `uint8` elements.
    case uint8([UInt8])
    /// `int8` elements.
    case int8([Int8])
    /// `uint16` elements.
    case uint16([UInt16])
    /// `int16` elements.
    case int16([Int16])
    /// `uint32` elements.
    case uint32([UInt32])
    /// `int32` elements.
    case int32([Int32])
    /// `float32` elements.
    case float32([Float])
    /// `bool` elements.
    case bool([Bool])
    /// `string` elements.
    case string([String])
    /// Nested arrays.
    case array([GGUFArray])
    /// `uint64` elements.
    case uint64([UInt64])
    /// `int64` elements.
    case int64([Int64])
    /// `float64` elements.
    case float64([Double])

    /// The type of every element.
    package var elementType: GGUFValueType {
        switch self {
        case .uint8: return .uint8
        case .int8: return .int8
        case .uint16: return .uint16
        case .int16: return .int16
        case .uint32: return .uint32
        case .int32: return .int32
        case .float32: return .float32
        case .bool: return .bool
        case .string: return .string
        case .array: return .array
        case .uint64: return .uint64
        case .int64: return .int64
        case .float64: return .float64
        }
    }

    /// The number of elements.
    package var count: Int {
        switch self {
        case .uint8(let a): return a.count
        case .int8(let a): return a.count
        case .uint16(let a): return a.count
        case .int16(let a): return a.count
        case .uint32(let a): return a.count
        case .int32(let a): return a.count
        case .float32(let a): return a.count
        case .bool(let a): return a.count
        case .string(let a): return a.count
        case .array(let a): return a.count
        case .uint64(let a): return a.count
        case .int64(let a): return a.count
        case .float64(let a): return a.count
        }
    }

    /// The element at `index` as a value.
    /// - Precondition: `index` is in `0..<count`.
    package subscript(index: Int) -> GGUFValue {
        precondition(index >= 0 && index < count, "index \(index) is outside the array of \(count)")
        switch self {
        case .uint8(let a): return .uint8(a[index])
        case .int8(let a): return .int8(a[index])
        case .uint16(let a): return .uint16(a[index])
        case .int16(let a): return .int16(a[index])
        case .uint32(let a): return .uint32(a[index])
        case .int32(let a): return .int32(a[index])
        case .float32(let a): return .float32(a[index])
        case .bool(let a): return .bool(a[index])
        case .string(let a): return .string(a[index])
        case .array(let a): return .array(a[index])
        case .uint64(let a): return .uint64(a[index])
        case .int64(let a): return .int64(a[index])
        case .float64(let a): return .float64(a[index])
        }
    }

    /// The elements of a string array; nil for other element types.
    package var strings: [String]? {
        if case .string(let a) = self { return a }
        return nil
    }

    /// The elements of an integer array of any width as `Int`; nil for other element types and
    /// when a `uint64` element is above `Int.max`.
    /// - Complexity: O(n).
    package var integers: [Int]? {
        switch self {
        case .uint8(let a): return a.map(Int.init)
        case .int8(let a): return a.map(Int.init)
        case .uint16(let a): return a.map(Int.init)
        case .int16(let a): return a.map(Int.init)
        case .uint32(let a): return a.map(Int.init)
        case .int32(let a): return a.map(Int.init)
        case .int64(let a): return a.map(Int.init)
        case .uint64(let a):
            var result = [Int]()
            result.reserveCapacity(a.count)
            for v in a {
                guard let i = Int(exactly: v) else { return nil }
                result.append(i)
            }
            return result
        default: return nil
        }
    }

    /// The elements of a `float32` or `float64` array as `Double`; nil for other element types.
    /// - Complexity: O(n).
    package var floats: [Double]? {
        switch self {
        case .float32(let a): return a.map(Double.init)
        case .float64(let a): return a
        default: return nil
        }
    }
}
