import Foundation
import Synchronization

/// A real PostgreSQL 16 + pgvector server: `CE_POSTGRES_URL` when set (CI starts one with
/// `scripts/postgres.sh start`), else one this test process starts with the same script and
/// stops at the end. A server that cannot start fails the tests; nothing is skipped.
public enum TestServer {
    private static let started = Mutex<(url: String?, ownServer: Bool)>((nil, false))

    /// The repository's root folder.
    public static var repository: URL { TestFixtures.folder.deletingLastPathComponent() }

    /// The URL of the server the tests use, starting one when needed.
    public static func url() throws -> String {
        try started.withLock { state in
            if let url = state.url { return url }
            if let url = ProcessInfo.processInfo.environment["CE_POSTGRES_URL"], !url.isEmpty {
                state.url = url
                return url
            }
            let r = try script("start")
            guard r.status == 0, let url = r.stdout.split(separator: "\n").last.map(String.init), url.hasPrefix("postgresql://") else {
                throw TestServerError(message: "scripts/postgres.sh start failed (status \(r.status)): \(r.stderr)")
            }
            state = (url, true)
            return url
        }
    }

    /// Stops the server if this process started it.
    public static func stopIfStarted() {
        started.withLock { state in
            if state.ownServer { _ = try? script("stop") }
            state = (nil, false)
        }
    }

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
