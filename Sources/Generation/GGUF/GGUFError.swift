import Foundation

/// Why a GGUF file could not be read, or a value or tensor in it could not be used.
///
/// Switch over ``code`` (a struct of static members, so codes can be added without breaking
/// callers); the ``description`` names the file, the byte offset, the key or tensor, and what was
/// expected against what was found:
///
/// ```swift
/// do { _ = try GGUFFile(contentsOf: url) } catch where error.code == .truncated {
///     print(error)  // model.gguf: byte 4096: key 'tokenizer.ggml.tokens': string length 12 …
/// }
/// ```
package struct GGUFError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kind of failure. Compare with `==` against the static members.
    package struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Kind: String, Sendable {
            case io, notGGUF, unsupportedVersion, bigEndian, truncated, invalidMetadata, invalidTensorInfo,
                unknownTensorType, invalidTensorLayout, typeMismatch, unsupportedType, nonFiniteScale, rowsOutOfRange
        }

        private let kind: Kind

        private init(_ kind: Kind) { self.kind = kind }

        /// The file could not be opened, inspected or mapped, or is not a regular file.
        package static let io = Code(.io)
        /// The file does not start with the magic `GGUF`.
        package static let notGGUF = Code(.notGGUF)
        /// The format version is not 2 or 3.
        package static let unsupportedVersion = Code(.unsupportedVersion)
        /// The file is big-endian; only little-endian files are read.
        package static let bigEndian = Code(.bigEndian)
        /// A field, or a count or length the file declares, runs past the end of the file.
        package static let truncated = Code(.truncated)
        /// A metadata entry is malformed: an unknown value type, a bool other than 0 or 1, text that
        /// is not UTF-8, arrays nested too deep, a duplicate key, or a bad `general.alignment`.
        package static let invalidMetadata = Code(.invalidMetadata)
        /// A tensor description is malformed: too many dimensions, a dimension out of range, an
        /// element count that overflows, a row length that is not a whole number of blocks, or a
        /// duplicate name.
        package static let invalidTensorInfo = Code(.invalidTensorInfo)
        /// A tensor's type id is not a ggml type.
        package static let unknownTensorType = Code(.unknownTensorType)
        /// A tensor's data is misaligned, runs past the end of the file, or overlaps another's.
        package static let invalidTensorLayout = Code(.invalidTensorLayout)
        /// A metadata value has another type than the accessor asked for, or does not fit in it.
        package static let typeMismatch = Code(.typeMismatch)
        /// The tensor's type is a ggml type this reader does not dequantize.
        package static let unsupportedType = Code(.unsupportedType)
        /// A quantized block's scale or minimum is infinite or NaN.
        package static let nonFiniteScale = Code(.nonFiniteScale)
        /// The rows asked for are not all rows of the tensor.
        package static let rowsOutOfRange = Code(.rowsOutOfRange)

        /// The code's name, as in `truncated`.
        package var description: String { kind.rawValue }
    }

    /// The kind of failure.
    package let code: Code
    /// The file's path, or `<memory>` for a file read from bytes.
    package let path: String
    /// The byte offset in the file where the problem is, when there is one.
    package let offset: Int?
    /// What the problem is in, as `key 'general.alignment'` or `tensor 'output_norm.weight'`.
    package let subject: String?
    /// What is wrong, with the expected and the actual value.
    package let detail: String

    /// Creates an error; the module's own throw sites use the static helpers below.
    package init(_ code: Code, path: String, offset: Int? = nil, subject: String? = nil, detail: String) {
        self.code = code
        self.path = path
        self.offset = offset
        self.subject = subject
        self.detail = detail
    }

    /// `path: byte N: subject: detail (code)`, leaving out the parts that are absent: every field,
    /// so that an error that wraps this one and prints it loses nothing.
    package var description: String {
        var parts = [path]
        if let offset { parts.append("byte \(offset)") }
        if let subject { parts.append(subject) }
        parts.append(detail)
        return parts.joined(separator: ": ") + " (\(code))"
    }
}

extension GGUFError: LocalizedError {
    /// The same text as ``description``.
    package var errorDescription: String? { description }
}

extension GGUFError {
    /// `key 'name'`, the subject of a metadata error.
    static func key(_ key: String) -> String { "key '\(key)'" }

    /// `tensor 'name'`, the subject of a tensor error.
    static func tensor(_ name: String) -> String { "tensor '\(name)'" }
}
