import Foundation
import LinearAlgebra
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A small HTTP server on 127.0.0.1 that answers each request with a script of raw actions, for
/// the hostile cases a client must survive: a head that never comes, a stream that stalls or is
/// cut, a 429 with `Retry-After`, a 5xx, a body that is not JSON. Each connection is served on a
/// thread of its own and closed after its script.
package final class FaultServer: Sendable {
    /// One step of a reply.
    package enum Action: Sendable {
        /// Bytes written as they are.
        case send(String)
        /// A pause (cut short when the server stops).
        case pause(Double)
    }

    /// A request as the server read it.
    package struct Received: Sendable {
        package let method: String
        package let path: String
        /// Headers by lowercased name.
        package let headers: [String: String]
        package let body: Data
    }

    /// The port it listens on.
    package let port: Int
    private let listener: Int32
    private let script: @Sendable (_ index: Int, _ request: Received) -> [Action]
    private let state = Mutex<(received: [Received], stopped: Bool)>(([], false))

    /// Starts listening; request number `index` (from 0) is answered by `script(index, request)`.
    package init(script: @escaping @Sendable (_ index: Int, _ request: Received) -> [Action]) throws {
        self.script = script
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw LoopbackHTTPError(description: "socket: \(String(cString: strerror(errno)))") }
        var yes: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(fd, pointer, length) == 0 && listen(fd, 16) == 0 && getsockname(fd, pointer, &length) == 0
            }
        }
        guard bound else {
            close(fd)
            throw LoopbackHTTPError(description: "bind/listen: \(String(cString: strerror(errno)))")
        }
        listener = fd
        port = Int(UInt16(bigEndian: address.sin_port))
        let thread = Thread { [self] in acceptLoop() }
        thread.start()
    }

    /// A port on 127.0.0.1 where nothing listens (bound for a moment, then closed).
    package static func closedPort() throws -> Int {
        let server = try FaultServer { _, _ in [] }
        server.stop()
        return server.port
    }

    /// The requests read so far, in order.
    package var received: [Received] { state.withOrderedLock { $0.received } }

    /// Stops accepting; connections still pausing end their pause at once.
    package func stop() {
        let first = state.withOrderedLock { state in
            defer { state.stopped = true }
            return !state.stopped
        }
        if first {
            shutdown(listener, Int32(SHUT_RDWR))
            close(listener)
        }
    }

    deinit { stop() }

    private var stopped: Bool { state.withOrderedLock { $0.stopped } }

    private func acceptLoop() {
        while !stopped {
            let connection = accept(listener, nil, nil)
            if connection < 0 {
                if errno == EINTR { continue }
                return
            }
            let thread = Thread { [self] in serve(connection) }
            thread.start()
        }
    }

    private func serve(_ fd: Int32) {
        defer { close(fd) }
        var limit = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        guard let request = Self.read(fd) else { return }
        let index = state.withOrderedLock { state in
            state.received.append(request)
            return state.received.count - 1
        }
        for action in script(index, request) {
            switch action {
            case .send(let text):
                guard LoopbackHTTP.send(fd, Array(text.utf8)) else { return }
            case .pause(let seconds):
                let end = Date().addingTimeInterval(seconds)
                while Date() < end, !stopped { usleep(10_000) }
                if stopped { return }
            }
        }
        shutdown(fd, Int32(SHUT_RDWR))
    }

    /// The request's head and its `Content-Length` body.
    private static func read(_ fd: Int32) -> Received? {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        var headEnd: Int?
        var contentLength = 0
        while true {
            if let end = headEnd, bytes.count >= end + contentLength { break }
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { return nil }
            bytes.append(contentsOf: buffer[0..<n])
            if headEnd == nil,
                let end = (0..<max(0, bytes.count - 3)).first(where: { bytes[$0..<$0 + 4] == [13, 10, 13, 10] })
            {
                headEnd = end + 4
                let head = String(decoding: bytes[..<end], as: UTF8.self)
                for line in head.split(separator: "\r\n").dropFirst() {
                    let parts = line.split(separator: ":", maxSplits: 1)
                    if parts.count == 2, parts[0].lowercased() == "content-length" {
                        contentLength = Int(parts[1].trimmingCharacters(in: .whitespaces)) ?? 0
                    }
                }
            }
        }
        guard let end = headEnd else { return nil }
        let lines = String(decoding: bytes[..<(end - 4)], as: UTF8.self).split(separator: "\r\n")
        let requestLine = lines.first?.split(separator: " ") ?? []
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            let parts = line.split(separator: ":", maxSplits: 1)
            if parts.count == 2 {
                headers[parts[0].lowercased()] = parts[1].trimmingCharacters(in: .whitespaces)
            }
        }
        return Received(
            method: requestLine.first.map(String.init) ?? "",
            path: requestLine.dropFirst().first.map(String.init) ?? "",
            headers: headers, body: Data(bytes[end..<(end + contentLength)]))
    }

    /// A whole response: status line, `Content-Length`, `Connection: close`, `headers`, `body`.
    package static func reply(_ status: Int, _ body: String, headers: [String: String] = [:]) -> Action {
        var text = "HTTP/1.1 \(status) X\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n"
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) { text += "\(name): \(value)\r\n" }
        return .send(text + "\r\n" + body)
    }

    /// The head of an event stream (its end is the connection's close).
    package static let streamHead = Action.send(
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nConnection: close\r\n\r\n")

    /// One event: `data: <data>` and a blank line.
    package static func event(_ data: String) -> Action { .send("data: \(data)\n\n") }
}
