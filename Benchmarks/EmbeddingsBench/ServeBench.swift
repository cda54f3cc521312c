import Dispatch
import Foundation
import LinearAlgebra
import LoopbackHTTP
import Synchronization

/// `embeddings-bench serve`: `embeddings serve` (beside this executable) under N concurrent
/// loopback clients, each sending `POST /v1/embeddings` requests of a few corpus chunks until a
/// fixed number of requests has been answered: requests/s, inputs/s, latency p50/p99, errors,
/// 503s and the server's peak RSS, next to `embeddings embed`'s own throughput on the same texts
/// (launch to exit, less the same run on one text: the model load). Setup (the server start, a
/// warm-up request) is outside the timed region; every response is checked for its vectors.
struct ServeBench {
    struct Row {
        let clients: Int
        let requests: Int
        let seconds: Double
        let latencies: [Double]
        let errors: Int
        let refused: Int
    }

    let embeddings: URL
    let texts: [String]
    let inputsPerRequest: Int
    let requests: Int

    /// `embed`'s texts per second on `texts`, without the model load.
    func embedThroughput() throws -> Double {
        let whole = try timeEmbed(texts)
        let one = try timeEmbed(Array(texts.prefix(1)))
        return Double(texts.count - 1) / max(1e-9, whole - one)
    }

    private func timeEmbed(_ texts: [String]) throws -> Double {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent(
            "serve-bench-\(UUID().uuidString).jsonl")
        defer { try? FileManager.default.removeItem(at: file) }
        let lines = try texts.enumerated().map { i, text in
            String(decoding: try JSONSerialization.data(withJSONObject: ["id": "\(i)", "text": text]), as: UTF8.self)
        }
        try Data((lines.joined(separator: "\n") + "\n").utf8).write(to: file)
        let process = Process()
        process.executableURL = embeddings
        process.arguments = ["embed", "--quiet"]
        process.standardInput = try FileHandle(forReadingFrom: file)
        process.standardOutput = FileHandle.nullDevice
        let start = now()
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw BenchFailure(message: "embeddings embed failed (\(process.terminationStatus))")
        }
        return now() - start
    }

    /// Starts the server, runs each client count, ends the server with SIGTERM; the rows and the
    /// server's peak RSS in bytes.
    func run(clients: [Int]) throws -> (rows: [Row], peakResident: Int, exitStatus: Int32) {
        let (process, port) = try Self.startServer(embeddings, [])
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
        let bodies = (0..<max(1, texts.count / inputsPerRequest)).map { r -> [UInt8] in
            let chunk = (0..<inputsPerRequest).map { texts[(r * inputsPerRequest + $0) % texts.count] }
            return Array(
                (try? JSONSerialization.data(withJSONObject: ["input": chunk, "model": "all-MiniLM-L6-v2"])) ?? Data())
        }
        _ = try Self.post(port: port, body: bodies[0])
        var rows = [Row]()
        for count in clients {
            let tally = Tally()
            let start = now()
            // One thread per client (concurrentPerform would run only one per core at a time).
            Self.onThreads(count) {
                while true {
                    let r = tally.next.wrappingAdd(1, ordering: .relaxed).oldValue
                    guard r < requests else { return }
                    let sent = now()
                    let reply = try? Self.post(port: port, body: bodies[r % bodies.count])
                    let latency = now() - sent
                    tally.results.withOrderedLock { results in
                        switch reply?.status {
                        case 200 where reply?.embeddings == inputsPerRequest: results.latencies.append(latency)
                        case 503: results.refused += 1
                        default: results.errors += 1
                        }
                    }
                }
            }
            let seconds = now() - start
            let outcome = tally.results.withOrderedLock { $0 }
            rows.append(
                Row(
                    clients: count, requests: requests, seconds: seconds, latencies: outcome.latencies,
                    errors: outcome.errors, refused: outcome.refused))
        }
        let peak = Self.peakResident(of: process.processIdentifier)
        process.terminate()
        process.waitUntilExit()
        return (rows, peak, process.terminationStatus)
    }

    /// `embeddings serve --port 0 --quiet` with `arguments`, and the port it listens on once it
    /// is ready; its standard error is drained from then on.
    static func startServer(_ executable: URL, _ arguments: [String]) throws -> (process: Process, port: Int) {
        let process = Process()
        process.executableURL = executable
        process.arguments = ["serve", "--port", "0", "--quiet"] + arguments
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        guard let port = readyPort(errors.fileHandleForReading) else {
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            throw BenchFailure(message: "embeddings serve did not start")
        }
        DispatchQueue.global().async { _ = errors.fileHandleForReading.readDataToEndOfFile() }
        return (process, port)
    }

    private static func readyPort(_ handle: FileHandle) -> Int? {
        var pending = Data()
        while true {
            let chunk = handle.availableData
            if chunk.isEmpty { return nil }
            pending.append(chunk)
            while let newline = pending.firstIndex(of: 0x0A) {
                let line = String(decoding: pending[pending.startIndex..<newline], as: UTF8.self)
                pending.removeSubrange(pending.startIndex...newline)
                if line.hasPrefix("listening on http://") {
                    return line.dropFirst("listening on http://".count).prefix { $0 != " " }.split(separator: ":").last
                        .flatMap { Int($0) }
                }
            }
        }
    }

    /// What one run's clients share: the next request's number and the outcomes.
    final class Tally: Sendable {
        let next = Atomic<Int>(0)
        let results = Mutex((latencies: [Double](), errors: 0, refused: 0))
    }

    /// Runs `body` on `count` threads of their own at once and returns when all have finished.
    static func onThreads(_ count: Int, _ body: @escaping @Sendable () -> Void) {
        let group = DispatchGroup()
        for _ in 0..<count {
            group.enter()
            let thread = Thread {
                body()
                group.leave()
            }
            thread.start()
        }
        group.wait()
    }

    /// One `POST /v1/embeddings` through TestSupport's loopback client (`Connection: close`, the
    /// response read to the end): its status and how many `"object":"embedding"` items it holds.
    static func post(port: Int, body: [UInt8]) throws -> (status: Int, embeddings: Int) {
        let reply = try LoopbackHTTP.request(
            port: port, "POST", "/v1/embeddings", body: body, headers: ["Content-Type": "application/json"])
        return (reply.status, reply.text.components(separatedBy: "\"object\":\"embedding\"").count - 1)
    }

    static func peakResident(of pid: Int32) -> Int {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return 0 }
        for line in status.split(separator: "\n") where line.hasPrefix("VmHWM:") {
            return (line.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0) * 1024
        }
        return 0
    }
}
