import Dispatch
import Foundation
import LinearAlgebra
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
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("serve-bench-\(UUID().uuidString).jsonl")
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
        guard process.terminationStatus == 0 else { throw BenchFailure(message: "embeddings embed failed (\(process.terminationStatus))") }
        return now() - start
    }

    /// Starts the server, runs each client count, ends the server with SIGTERM; the rows and the
    /// server's peak RSS in bytes.
    func run(clients: [Int]) throws -> (rows: [Row], peakResident: Int, exitStatus: Int32) {
        let process = Process()
        process.executableURL = embeddings
        process.arguments = ["serve", "--port", "0", "--quiet"]
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
        guard let port = readyPort(errors.fileHandleForReading) else { throw BenchFailure(message: "embeddings serve did not start") }
        DispatchQueue.global().async { _ = errors.fileHandleForReading.readDataToEndOfFile() }
        let bodies = (0..<max(1, texts.count / inputsPerRequest)).map { r -> [UInt8] in
            let chunk = (0..<inputsPerRequest).map { texts[(r * inputsPerRequest + $0) % texts.count] }
            return Array((try? JSONSerialization.data(withJSONObject: ["input": chunk, "model": "all-MiniLM-L6-v2"])) ?? Data())
        }
        _ = try BenchHTTP.post(port: port, path: "/v1/embeddings", body: bodies[0])
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
                    let reply = try? BenchHTTP.post(port: port, path: "/v1/embeddings", body: bodies[r % bodies.count])
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
            rows.append(Row(clients: count, requests: requests, seconds: seconds, latencies: outcome.latencies, errors: outcome.errors, refused: outcome.refused))
        }
        let peak = Self.peakResident(of: process.processIdentifier)
        process.terminate()
        process.waitUntilExit()
        return (rows, peak, process.terminationStatus)
    }

    private func readyPort(_ handle: FileHandle) -> Int? {
        var pending = Data()
        while true {
            let chunk = handle.availableData
            if chunk.isEmpty { return nil }
            pending.append(chunk)
            while let newline = pending.firstIndex(of: 0x0A) {
                let line = String(decoding: pending[pending.startIndex..<newline], as: UTF8.self)
                pending.removeSubrange(pending.startIndex...newline)
                if line.hasPrefix("listening on http://") {
                    return line.dropFirst("listening on http://".count).prefix { $0 != " " }.split(separator: ":").last.flatMap { Int($0) }
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

    static func peakResident(of pid: Int32) -> Int {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return 0 }
        for line in status.split(separator: "\n") where line.hasPrefix("VmHWM:") {
            return (line.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0) * 1024
        }
        return 0
    }
}

/// The few lines of HTTP/1.1 the bench's clients speak: one `Connection: close` POST per
/// connection, the response read to the end.
enum BenchHTTP {
    struct Reply {
        let status: Int
        /// How many `"object":"embedding"` items the body holds.
        let embeddings: Int
    }

    static func post(port: Int, path: String, body: [UInt8]) throws -> Reply {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw BenchFailure(message: "socket: \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { throw BenchFailure(message: "connect: \(String(cString: strerror(errno)))") }
        let request = Array("POST \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: \(body.count)\r\n\r\n".utf8) + body
        var sent = 0
        while sent < request.count {
            let n = request[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { throw BenchFailure(message: "send: \(String(cString: strerror(errno)))") }
            sent += n
        }
        var response = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { break }
            response.append(contentsOf: buffer[0..<n])
        }
        let text = String(decoding: response, as: UTF8.self)
        let status = text.split(separator: " ", maxSplits: 2).dropFirst().first.flatMap { Int($0) } ?? 0
        return Reply(status: status, embeddings: text.components(separatedBy: "\"object\":\"embedding\"").count - 1)
    }
}
