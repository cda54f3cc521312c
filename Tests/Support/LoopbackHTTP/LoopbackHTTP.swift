import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// An HTTP response as `LoopbackHTTP` read it.
package struct HTTPReply: Sendable {
    /// The status code (200, 413, …).
    package let status: Int
    /// The headers, by lowercased name.
    package let headers: [String: String]
    package let body: Data

    /// The body as text.
    package var text: String { String(decoding: body, as: UTF8.self) }

    /// The body parsed as JSON.
    package func json() throws -> Any { try JSONSerialization.jsonObject(with: body, options: [.fragmentsAllowed]) }
}

/// The error of a `LoopbackHTTP` call.
package struct LoopbackHTTPError: Error, CustomStringConvertible {
    package let description: String

    package init(description: String) { self.description = description }
}

/// A deliberately plain HTTP/1.1 client over a TCP socket to 127.0.0.1, for tests that need
/// control a library client does not give: headers sent one byte at a time, a body that stops
/// halfway, a connection dropped mid-request. Every request asks for `Connection: close`, so a
/// response is everything read until the server closes.
package enum LoopbackHTTP {
    /// A connected socket to 127.0.0.1:`port`; reads and writes fail after `timeout` seconds
    /// without progress (a hung server becomes a failure, not a hung test).
    package static func connect(port: Int, timeout: Int = 120) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw LoopbackHTTPError(description: "socket: \(String(cString: strerror(errno)))") }
        var limit = timeval(tv_sec: timeout, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            close(fd)
            throw LoopbackHTTPError(description: "connect to port \(port): \(String(cString: strerror(errno)))")
        }
        return fd
    }

    /// Writes all of `bytes` (without SIGPIPE); false when the server has closed the connection.
    @discardableResult
    package static func send(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { return false }
            sent += n
        }
        return true
    }

    /// Everything the server sends until it closes (or resets) the connection.
    package static func readAll(_ fd: Int32) -> Data {
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { return data }
            data.append(contentsOf: buffer[0..<n])
        }
    }

    /// The request's head: request line, `Host`, `Connection: close`, `Content-Length` when there
    /// is a body, then `headers`.
    package static func head(
        _ method: String, _ path: String, port: Int, contentLength: Int?, headers: [String: String] = [:]
    ) -> [UInt8] {
        var text = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n"
        if let contentLength { text += "Content-Length: \(contentLength)\r\n" }
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) { text += "\(name): \(value)\r\n" }
        return Array((text + "\r\n").utf8)
    }

    /// One request, its response read to the end.
    package static func request(
        port: Int, _ method: String, _ path: String, body: [UInt8]? = nil, headers: [String: String] = [:]
    ) throws -> HTTPReply {
        let fd = try connect(port: port)
        defer { close(fd) }
        send(fd, head(method, path, port: port, contentLength: body?.count, headers: headers) + (body ?? []))
        return try parse(readAll(fd))
    }

    /// `count` connections at once: each opened and sent the same request before any response
    /// is read, so the server has them all in hand together; then every response, in order.
    package static func concurrently(
        port: Int, _ count: Int, _ method: String, _ path: String, body: Data,
        headers: [String: String] = [:]
    ) throws -> [HTTPReply] {
        var sockets = [Int32]()
        defer {
            for socket in sockets { close(socket) }
        }
        for _ in 0..<count {
            let fd = try connect(port: port)
            sockets.append(fd)
            send(fd, head(method, path, port: port, contentLength: body.count, headers: headers) + [UInt8](body))
        }
        return try sockets.map { try parse(readAll($0)) }
    }

    /// A JSON POST.
    package static func post(port: Int, _ path: String, json: Any, headers: [String: String] = [:]) throws -> HTTPReply
    {
        let body = try JSONSerialization.data(withJSONObject: json)
        return try request(
            port: port, "POST", path, body: Array(body),
            headers: ["Content-Type": "application/json"].merging(headers) { $1 })
    }

    /// A response from its bytes: status line, headers, and the body (cut at `Content-Length`).
    package static func parse(_ data: Data) throws -> HTTPReply {
        let bytes = [UInt8](data)
        guard
            let end = (0..<max(0, bytes.count - 3)).first(where: {
                bytes[$0] == 13 && bytes[$0 + 1] == 10 && bytes[$0 + 2] == 13 && bytes[$0 + 3] == 10
            })
        else {
            throw LoopbackHTTPError(
                description:
                    "no complete response head in \(bytes.count) bytes: \(String(decoding: bytes.prefix(200), as: UTF8.self))"
            )
        }
        let lines = String(decoding: bytes[0..<end], as: UTF8.self).components(separatedBy: "\r\n")
        let statusWords = lines[0].split(separator: " ")
        guard statusWords.count >= 2, let status = Int(statusWords[1]) else {
            throw LoopbackHTTPError(description: "bad status line '\(lines[0])'")
        }
        var headers = [String: String]()
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(
                in: .whitespaces)
        }
        var body = Data(bytes[(end + 4)...])
        if let length = headers["content-length"].flatMap(Int.init), length <= body.count { body = body.prefix(length) }
        return HTTPReply(status: status, headers: headers, body: body)
    }
}
