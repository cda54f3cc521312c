import Foundation

/// What a child process did: its exit status and everything it printed.
package struct ProcessResult: Sendable {
    /// The exit status (or the signal's number, for a process a signal ended).
    package var status: Int32
    /// Standard output, decoded as UTF-8 (invalid bytes replaced).
    package var stdout: String
    /// Standard error, decoded as UTF-8 (invalid bytes replaced).
    package var stderr: String

    /// A result from its parts.
    package init(status: Int32, stdout: String, stderr: String) {
        self.status = status
        self.stdout = stdout
        self.stderr = stderr
    }
}

/// The one way tests run other programs (the `embeddings` executable, shells, `psql`, `dpkg-query`).
///
/// ```swift
/// let r = try ChildProcess.run(URL(fileURLWithPath: "/bin/sh"), ["-c", "echo hi"])
/// XCTAssertEqual(r.stdout, "hi\n")
/// ```
package enum ChildProcess {
    /// Runs `executable` with `arguments` to completion: its status and everything it printed.
    /// `environment` nil keeps this process's; `input`, when given, is written to its standard
    /// input, which is then closed (nil: standard input is the null device). Both output pipes
    /// are drained at once, so a child that fills one while the other is read never blocks.
    package static func run(
        _ executable: URL, _ arguments: [String], environment: [String: String]? = nil,
        input: Data? = nil
    ) throws -> ProcessResult {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        if let environment { process.environment = environment }
        let stdin = Pipe()
        let stdout = Pipe()
        let stderr = Pipe()
        process.standardInput = input == nil ? FileHandle.nullDevice : stdin
        process.standardOutput = stdout
        process.standardError = stderr
        try process.run()
        if let input {
            stdin.fileHandleForWriting.write(input)
            try stdin.fileHandleForWriting.close()
        }
        let (out, err) = readBoth(stdout.fileHandleForReading, stderr.fileHandleForReading)
        process.waitUntilExit()
        return ProcessResult(
            status: process.terminationStatus, stdout: String(decoding: out, as: UTF8.self),
            stderr: String(decoding: err, as: UTF8.self))
    }

    /// Starts `executable` for a test that watches it while it runs: standard input is the null
    /// device, standard output is discarded, standard error is returned to be read as it comes
    /// (`firstLine(startingWith:from:)` waits for a progress or ready line). The caller waits
    /// for the process or signals it.
    package static func start(
        _ executable: URL, _ arguments: [String],
        environment: [String: String]? = nil
    ) throws -> (process: Process, stderr: FileHandle) {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        if let environment { process.environment = environment }
        let stderr = Pipe()
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = stderr
        try process.run()
        return (process, stderr.fileHandleForReading)
    }
}
