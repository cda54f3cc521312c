import Foundation

/// Errors thrown while loading a tokenizer.
public enum WordPieceError: Error, Equatable, CustomStringConvertible {
    /// The vocabulary file could not be read.
    case unreadableVocabulary(path: String, reason: String)
    /// The vocabulary is empty, has a duplicate entry, or lacks a required token.
    case invalidVocabulary(path: String, reason: String)

    public var description: String {
        switch self {
        case .unreadableVocabulary(let path, let reason): return "\(path): cannot read vocabulary: \(reason)"
        case .invalidVocabulary(let path, let reason): return "\(path): invalid vocabulary: \(reason)"
        }
    }
}

extension WordPieceError: LocalizedError {
    public var errorDescription: String? { description }
}
