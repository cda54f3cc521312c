import Foundation

/// Errors thrown by the VectorIndex module.
public enum VectorIndexError: Error, Equatable, CustomStringConvertible {
    /// A vector's length differs from the index's dimension.
    case dimensionMismatch(expected: Int, actual: Int)
    /// A vector holds NaN or an infinity at `component`.
    case nonFiniteValue(id: String, component: Int)
    /// `add` was given an id the index already holds (or twice in one batch).
    case duplicateID(String)
    /// `update` was given an id the index does not hold.
    case unknownID(String)
    /// The dimension is not positive.
    case invalidDimension(Int)
    /// The index file is shorter than its header says it should be.
    case truncatedFile(path: String, expectedBytes: Int, actualBytes: Int)
    /// The file does not start with the index magic bytes: it is not an index file.
    case notAnIndexFile(path: String)
    /// The index file's format version is not one this library reads.
    case unsupportedVersion(path: String, version: UInt32)
    /// The stored checksum does not match the contents.
    case checksumMismatch(path: String)
    /// The file's structure is inconsistent (a length or field that cannot be right).
    case corruptFile(path: String, reason: String)
    /// The file was built for another model, dimension, pooling or tokenizer.
    case fingerprintMismatch(expected: IndexFingerprint, actual: IndexFingerprint)
    /// Reading or writing the file failed at the system level.
    case io(path: String, operation: String, message: String)
    /// A search asked for codes this index does not keep (see `FlatIndex.buildCodes`).
    case codesMissing(SearchPrecision)
    /// Quantizer parameters or a rescore factor that cannot be right.
    case invalidCodes(String)

    public var description: String {
        switch self {
        case let .dimensionMismatch(expected, actual):
            return "vector has \(actual) components, the index holds \(expected)-dimensional vectors"
        case let .nonFiniteValue(id, component):
            return "vector for id '\(id)' has a non-finite value at component \(component)"
        case let .duplicateID(id): return "id '\(id)' is already in the index"
        case let .unknownID(id): return "id '\(id)' is not in the index"
        case let .invalidDimension(d): return "dimension must be positive, got \(d)"
        case let .truncatedFile(path, expected, actual):
            return "\(path): truncated index file (\(actual) bytes, expected \(expected))"
        case let .notAnIndexFile(path): return "\(path): not an index file (bad magic bytes)"
        case let .unsupportedVersion(path, version): return "\(path): unsupported index format version \(version)"
        case let .checksumMismatch(path): return "\(path): checksum mismatch (the file is corrupt)"
        case let .corruptFile(path, reason): return "\(path): corrupt index file: \(reason)"
        case let .fingerprintMismatch(expected, actual):
            return "index was built with \(actual), expected \(expected)"
        case let .io(path, operation, message): return "\(path): \(operation) failed: \(message)"
        case let .codesMissing(precision):
            return "the index keeps no \(precision.rawValue) codes (build them with buildCodes, or search with exact precision)"
        case let .invalidCodes(reason): return "invalid codes: \(reason)"
        }
    }
}

extension VectorIndexError: LocalizedError {
    public var errorDescription: String? { description }
}
