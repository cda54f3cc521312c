import Foundation

/// Errors of the Retrieval module: a corpus folder, Markdown file or evaluation set that cannot be
/// read, a store whose retrieval data is malformed, and a search that needs vectors a store does
/// not have (both stores throw `noVectors`). The layers below report through their own errors,
/// which pass through unchanged: `VectorIndexError` for index files and for vectors made by
/// another model (`fingerprintMismatch`, from every store), `EmbeddingsError` from the encoder.
public enum RetrievalError: Error, Equatable, CustomStringConvertible {
    /// A file is not valid UTF-8.
    case invalidUTF8(path: String)
    /// A file holds no text.
    case emptyFile(path: String)
    /// A folder or file could not be read.
    case unreadable(path: String, reason: String)
    /// A stored index's retrieval data is missing or malformed.
    case corruptStore(path: String, reason: String)
    /// Semantic or hybrid search on a store without vectors (indexed lexical-only, empty, or
    /// opened without the model that made them). The message says which.
    case noVectors(String)
    /// A vector search this kind of store does not have (`ChunkStore.vectorSearchNames`): HNSW on
    /// an index file, quantized codes in PostgreSQL. The message says which.
    case unsupportedSearch(String)
    /// A caller's values disagree (`TranslationSet.accuracy` given another count of vectors).
    case invalidArgument(String)

    public var description: String {
        switch self {
        case .invalidUTF8(let path): return "\(path): not valid UTF-8"
        case .emptyFile(let path): return "\(path): empty file"
        case .unreadable(let path, let reason): return "\(path): \(reason)"
        case .corruptStore(let path, let reason): return "\(path): \(reason)"
        case .noVectors(let message): return message
        case .unsupportedSearch(let message): return message
        case .invalidArgument(let message): return message
        }
    }
}

extension RetrievalError: LocalizedError {
    public var errorDescription: String? { description }
}
