import Foundation

/// The real PostgreSQL 16 + pgvector server of the store tests, started by `scripts/postgres.sh`
/// (from `make test` or CI) and passed as `CE_POSTGRES_URL`. Without it the tests fail.
public enum TestServer {
    /// The repository's root folder.
    public static var repository: URL { TestFixtures.folder.deletingLastPathComponent() }

    /// The URL of the server the tests use: `CE_POSTGRES_URL`, which `make test` and CI set after
    /// `scripts/postgres.sh start`. Without it the tests fail (they are never skipped).
    public static func url() throws -> String {
        guard let url = ProcessInfo.processInfo.environment["CE_POSTGRES_URL"], !url.isEmpty else {
            throw TestServerError(message: "CE_POSTGRES_URL is not set: run the tests with `make test` (it starts a server with scripts/postgres.sh), or export CE_POSTGRES_URL=$(scripts/postgres.sh start)")
        }
        return url
    }

    /// Nothing to stop: the server belongs to whoever started it (`make test`, CI).
    public static func stopIfStarted() {}

    /// Runs `scripts/postgres.sh` with `arguments`.
    public static func script(_ arguments: String...) throws -> (status: Int32, stdout: String, stderr: String) {
        try run(repository.appendingPathComponent("scripts/postgres.sh"), arguments)
    }

    /// Runs a program to completion.
    public static func run(_ executable: URL, _ arguments: [String], environment: [String: String]? = nil) throws -> (status: Int32, stdout: String, stderr: String) {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        if let environment { process.environment = environment }
        let stdout = Pipe(), stderr = Pipe()
        process.standardOutput = stdout
        process.standardError = stderr
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let out = stdout.fileHandleForReading.readDataToEndOfFile()
        let err = stderr.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: out, as: UTF8.self), String(decoding: err, as: UTF8.self))
    }
}

/// The test server could not be started.
public struct TestServerError: Error, CustomStringConvertible {
    public let message: String
    public var description: String { message }
}
