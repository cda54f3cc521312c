import Foundation

/// Errors from reading a Markdown corpus.
public enum RetrievalError: Error, Equatable, CustomStringConvertible {
    /// A file is not valid UTF-8.
    case invalidUTF8(path: String)
    /// A file holds no text.
    case emptyFile(path: String)
    /// A folder or file could not be read.
    case unreadable(path: String, reason: String)
    /// A stored index's retrieval data is missing or malformed.
    case corruptStore(path: String, reason: String)
    /// Vectors are required but the store has none, or a dimension disagrees.
    case invalidArgument(String)

    public var description: String {
        switch self {
        case let .invalidUTF8(path): return "\(path): not valid UTF-8"
        case let .emptyFile(path): return "\(path): empty file"
        case let .unreadable(path, reason): return "\(path): \(reason)"
        case let .corruptStore(path, reason): return "\(path): \(reason)"
        case let .invalidArgument(message): return message
        }
    }
}

extension RetrievalError: LocalizedError {
    public var errorDescription: String? { description }
}
