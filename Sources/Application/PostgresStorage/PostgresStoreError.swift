import Foundation

/// What went wrong between the PostgreSQL store and its server: connecting, the pgvector
/// extension, permissions, the table prefix, the tables' contents and any other server error.
/// Each case says what to do about it. Failures every store shares are not here: vectors of
/// another model are `VectorIndexError.fingerprintMismatch`, a search that needs vectors the
/// store lacks is `RetrievalError.noVectors`, a query vector of the wrong length or with
/// non-finite values is `VectorIndexError.dimensionMismatch` or `.nonFiniteValue`.
public enum PostgresStoreError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The server cannot be reached or refused the login (libpq's message).
    case cannotConnect(String)
    /// The database has no pgvector (`CREATE EXTENSION vector` failed or is not allowed).
    case vectorExtensionMissing(String)
    /// The user may not create, read or write the store's tables.
    case permissionDenied(String)
    /// A table prefix that is not a plain SQL identifier.
    case invalidTablePrefix(String)
    /// The store's tables exist but do not hold what this version writes.
    case corruptStore(String)
    /// Any other server error, with its SQLSTATE code.
    case queryFailed(state: String, message: String)

    public var description: String {
        switch self {
        case .cannotConnect(let message): return "cannot connect to PostgreSQL: \(message)"
        case .vectorExtensionMissing(let message):
            return
                "the database has no pgvector extension (CREATE EXTENSION vector needs it installed on the server): \(message)"
        case .permissionDenied(let message): return "permission denied: \(message)"
        case .invalidTablePrefix(let prefix):
            return "table prefix '\(prefix)' must be a plain SQL identifier ([a-z_][a-z0-9_]*, at most 40 characters)"
        case .corruptStore(let message): return "the store's tables are not usable: \(message)"
        case .queryFailed(let state, let message): return "PostgreSQL error \(state): \(message)"
        }
    }
}

extension PostgresStoreError: LocalizedError {
    public var errorDescription: String? { description }
}
