import Embeddings
import PostgresStorage
import Retrieval
import VectorIndex

extension APIError {
    /// A store's error as `/search` answers it. Every case of every error a store throws has a
    /// status (the switches are exhaustive, so a new case cannot go unmapped): what the client can
    /// change (a mode that needs vectors the store lacks or was made by another model) is 400 on
    /// `mode`, a database that cannot be reached 503, anything else about the store or the
    /// encoder 500 with a code naming it. Errors of no store type stay 500 `internal_error`.
    static func store(_ error: any Error) -> APIError {
        switch error {
        case let error as RetrievalError: return store(error)
        case let error as VectorIndexError: return store(error)
        case let error as PostgresStoreError: return store(error)
        case let error as EmbeddingsError:
            return APIError(status: 500, message: error.description, code: "encoder_error")
        default: return APIError(status: 500, message: "\(error)", code: "internal_error")
        }
    }

    private static func store(_ error: RetrievalError) -> APIError {
        switch error {
        case .noVectors: return .badRequest(error.description, param: "mode", code: "invalid_value")
        case .corruptStore, .unreadable, .invalidUTF8, .emptyFile, .unsupportedSearch, .invalidArgument:
            return APIError(status: 500, message: error.description, code: "store_error")
        }
    }

    private static func store(_ error: VectorIndexError) -> APIError {
        switch error {
        case .fingerprintMismatch: return .badRequest(error.description, param: "mode", code: "invalid_value")
        case .dimensionMismatch, .nonFiniteValue, .duplicateID, .unknownID, .truncatedFile, .notAnIndexFile,
            .unsupportedVersion, .checksumMismatch, .corruptFile, .io, .codesMissing, .invalidCodes:
            return APIError(status: 500, message: error.description, code: "store_error")
        }
    }

    private static func store(_ error: PostgresStoreError) -> APIError {
        switch error {
        case .cannotConnect, .vectorExtensionMissing:
            return APIError(status: 503, message: error.description, code: "store_unavailable")
        case .permissionDenied, .invalidTablePrefix, .corruptStore, .queryFailed:
            return APIError(status: 500, message: error.description, code: "store_error")
        }
    }
}
