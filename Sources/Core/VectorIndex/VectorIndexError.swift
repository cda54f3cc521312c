import Foundation

/// Errors thrown by the VectorIndex module: vectors an index refuses (dimension, values, ids),
/// index files that cannot be read or written, codes a search needs, and vectors made by another
/// model than the one asking (`fingerprintMismatch`), which every store throws, the file store
/// and the PostgreSQL store alike.
public enum VectorIndexError: Error, Equatable, CustomStringConvertible {
    /// A vector's length differs from the index's dimension.
    case dimensionMismatch(expected: Int, actual: Int)
    /// A vector holds NaN or an infinity at `component`.
    case nonFiniteValue(id: String, component: Int)
    /// `add` was given an id the index already holds (or twice in one batch).
    case duplicateID(String)
    /// `update` was given an id the index does not hold.
    case unknownID(String)
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
    /// Stored vectors were made with another model, dimension, pooling, tokenizer or
    /// quantization than the one asking (`expected`): an index file opened for another model, or
    /// a store (file or PostgreSQL) searched or re-indexed with another model. Vectors of two
    /// models are never compared or mixed.
    case fingerprintMismatch(expected: IndexFingerprint, actual: IndexFingerprint)
    /// Reading or writing the file failed at the system level.
    case io(path: String, operation: String, message: String)
    /// A search asked for codes this index does not keep (see `FlatIndex.buildCodes`).
    case codesMissing(SearchPrecision)
    /// Quantizer parameters or a rescore factor that cannot be right.
    case invalidCodes(String)

    public var description: String {
        switch self {
        case .dimensionMismatch(let expected, let actual):
            return "vector has \(actual) components, the index holds \(expected)-dimensional vectors"
        case .nonFiniteValue(let id, let component):
            return "vector for id '\(id)' has a non-finite value at component \(component)"
        case .duplicateID(let id): return "id '\(id)' is already in the index"
        case .unknownID(let id): return "id '\(id)' is not in the index"
        case .truncatedFile(let path, let expected, let actual):
            return "\(path): truncated index file (\(actual) bytes, expected \(expected))"
        case .notAnIndexFile(let path): return "\(path): not an index file (bad magic bytes)"
        case .unsupportedVersion(let path, let version): return "\(path): unsupported index format version \(version)"
        case .checksumMismatch(let path): return "\(path): checksum mismatch (the file is corrupt)"
        case .corruptFile(let path, let reason): return "\(path): corrupt index file: \(reason)"
        case .fingerprintMismatch(let expected, let actual):
            return
                "the vectors were made by \(actual), not by \(expected): use the model that made them, or index again"
        case .io(let path, let operation, let message): return "\(path): \(operation) failed: \(message)"
        case .codesMissing(let precision):
            return
                "the index keeps no \(precision.rawValue) codes (build them with buildCodes, or search with exact precision)"
        case .invalidCodes(let reason): return "invalid codes: \(reason)"
        }
    }
}

extension VectorIndexError: LocalizedError {
    public var errorDescription: String? { description }
}
