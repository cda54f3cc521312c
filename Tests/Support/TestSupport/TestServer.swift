import Foundation

/// The real PostgreSQL 16 + pgvector server of the store tests, started by `scripts/postgres.sh`
/// (from `make test` or CI) and passed as `CE_POSTGRES_URL`.
///
/// The rule for every test that needs PostgreSQL (PostgresStorageTests, the CLI's `--store` and
/// pgvector-export tests): it takes the server from `url()` and is never skipped. Without
/// `CE_POSTGRES_URL` it fails, naming the variable, because a skipped database test would pass a
/// run that never exercised the store. `make test` and CI always start a server; to run one such
/// test by hand, `export CE_POSTGRES_URL=$(scripts/postgres.sh start)` first.
package enum TestServer {
    /// The URL of the server the tests use: `CE_POSTGRES_URL`, which `make test` and CI set after
    /// `scripts/postgres.sh start`.
    /// - Throws: `TestServerError` when the variable is not set (the test fails; it is never skipped).
    package static func url() throws -> String {
        guard let url = ProcessInfo.processInfo.environment["CE_POSTGRES_URL"], !url.isEmpty else {
            throw TestServerError(
                message:
                    "CE_POSTGRES_URL is not set: run the tests with `make test` (it starts a server with scripts/postgres.sh), or export CE_POSTGRES_URL=$(scripts/postgres.sh start)"
            )
        }
        return url
    }
}

/// The test server could not be started.
package struct TestServerError: Error, CustomStringConvertible {
    package let message: String
    package var description: String { message }
}
