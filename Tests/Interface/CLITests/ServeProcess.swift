import Foundation
import LinearAlgebra
import Synchronization
import TestSupport

/// A real `embeddings serve --port 0` child process: started, its ready line awaited (no sleep,
/// no polling: the read blocks until the line is there), its standard error kept for the test,
/// and ended by the test with SIGTERM.
// @unchecked: Process is not Sendable; it is only waited on by the test that ends the server.
final class ServeProcess: @unchecked Sendable {
    let process: Process
    /// The port the server chose.
    let port: Int
    /// The ready line.
    let readyLine: String
    private let log = Mutex(Data())
    private let logDone = DispatchGroup()

    /// Starts `embeddings serve --port 0 arguments…` and waits for its ready line.
    /// The server a suite shares (`--quiet`, default limits), started in `slot` on first use;
    /// the suite terminates it in its class `tearDown`.
    static func shared(in slot: borrowing Mutex<ServeProcess?>) throws -> ServeProcess {
        try slot.withOrderedLock { server in
            if let server { return server }
            let started = try ServeProcess(["--quiet"])
            server = started
            return started
        }
    }

    init(_ arguments: [String] = []) throws {
        let reader: FileHandle
        (process, reader) = try ChildProcess.start(CLITests.executable, ["serve", "--port", "0"] + arguments)
        guard let line = firstLine(startingWith: "listening on http://", from: reader) else {
            process.waitUntilExit()
            throw LoopbackHTTPError(
                description: "serve ended (status \(process.terminationStatus)) before its ready line")
        }
        readyLine = line
        let address = line.dropFirst("listening on http://".count).prefix { $0 != " " }
        guard let port = address.split(separator: ":").last.flatMap({ Int($0) }) else {
            throw LoopbackHTTPError(description: "no port in '\(line)'")
        }
        self.port = port
        // The rest of standard error is read as it comes, so log lines never fill the pipe.
        DispatchQueue.global().async(group: logDone) { [self] in
            let rest = reader.readDataToEndOfFile()
            log.withOrderedLock { $0 = rest }
        }
    }

    var pid: Int32 { process.processIdentifier }

    /// SIGTERM, then the exit: status, whether it exited (rather than died of a signal), and
    /// what it wrote to standard error after the ready line.
    func terminate() -> (status: Int32, exited: Bool, stderr: String) {
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
        logDone.wait()
        return (
            process.terminationStatus, process.terminationReason == .exit,
            String(decoding: log.withOrderedLock { $0 }, as: UTF8.self)
        )
    }

    /// The server's peak resident memory so far (VmHWM), in bytes.
    func peakResidentBytes() throws -> Int {
        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
            let kilobytes = line.split(separator: " ").compactMap({ Int($0) }).first
        else {
            throw LoopbackHTTPError(description: "no VmHWM for \(pid)")
        }
        return kilobytes * 1024
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }
}
