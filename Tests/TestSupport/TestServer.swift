import Foundation

/// The real PostgreSQL 16 + pgvector server of the store tests, started by `scripts/postgres.sh`
/// (from `make test` or CI) and passed as `CE_POSTGRES_URL`. Without it the tests fail.
public enum TestServer {
    /// The URL of the server the tests use: `CE_POSTGRES_URL`, which `make test` and CI set after
    /// `scripts/postgres.sh start`. Without it the tests fail (they are never skipped).
    public static func url() throws -> String {
        guard let url = ProcessInfo.processInfo.environment["CE_POSTGRES_URL"], !url.isEmpty else {
            throw TestServerError(message: "CE_POSTGRES_URL is not set: run the tests with `make test` (it starts a server with scripts/postgres.sh), or export CE_POSTGRES_URL=$(scripts/postgres.sh start)")
        }
        return url
    }
}

/// The test server could not be started.
public struct TestServerError: Error, CustomStringConvertible {
    public let message: String
    public var description: String { message }
}
