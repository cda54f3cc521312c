import CMicroHTTPD
import Dispatch
import Foundation
import LinearAlgebra
import Synchronization

/// The routes behind an `HTTPDaemon`. Its methods are called on libmicrohttpd's one polling
/// thread and must return at once: real work goes to threads of the handler's own.
protocol HTTPHandler: Sendable {
    /// A response to send as soon as the headers are in (unknown route, wrong method, missing
    /// key, a `Content-Length` over the limit), without reading the body; nil to read it.
    func screen(_ head: HTTPRequestHead) -> HTTPResponse?
    /// The whole request; `reply` must be called exactly once, from any thread.
    func handle(_ request: HTTPRequest, reply: @escaping @Sendable (HTTPResponse) -> Void)
    /// A response was queued for sending, `seconds` after the headers came in.
    func responded(_ head: HTTPRequestHead, _ response: HTTPResponse, seconds: Double)
    /// The request ended without a response (the client went away, timed out, or sent a body
    /// without `Content-Length` that grew over the limit).
    func abandoned(_ head: HTTPRequestHead, reason: String, seconds: Double)
    /// The daemon stops and the grace period is over: work still running should end now (a
    /// streamed response still going a moment later is cut; a reply still owed must be made).
    func stopping()
}

extension HTTPHandler {
    /// Nothing runs long enough to need stopping.
    func stopping() {}
}

/// An HTTP/1.1 server on GNU libmicrohttpd: one internal epoll thread reads requests and writes
/// responses; each complete request's connection is suspended while the handler works on its
/// own threads, and resumed when it replies. A streamed response (`HTTPResponse.stream`) is sent
/// chunked as its producer writes; while it has nothing to send its connection is suspended, and
/// each write resumes it (`HTTPBodyStream`).
///
/// The library's limits are the defences against hostile clients: a connection limit, an idle
/// timeout (a client that stalls mid-request is closed), and a per-connection memory limit that
/// bounds the headers. Bodies are bounded here: a `Content-Length` over `maximumBody` is refused
/// before any of it is read; a chunked body is counted as it arrives and the connection closed
/// when it passes the limit. A body left unread by an early answer is drained within bounds
/// before its socket closes (`LingeringClose`), so the client gets to read the answer.
final class HTTPDaemon: Sendable {
    struct Limits: Sendable {
        var maximumBody: Int
        var connections: Int
        var timeoutSeconds: Int
        /// libmicrohttpd's per-connection memory pool (headers and read buffer).
        var connectionMemory = 64 << 10
        /// After an answer sent before the body was read: at most this many bytes of the body
        /// are read and discarded before the socket closes (Docs/Server.md states it)…
        var lingeringBytes = 16 << 20
        /// … for at most this many seconds.
        var lingeringSeconds = 10.0
    }

    /// The headers `HTTPRequestHead` carries.
    static let capturedHeaders = ["Content-Length", "Content-Type", "Authorization", "Transfer-Encoding"]

    /// libmicrohttpd's daemon and connection handles.
    // @unchecked: an opaque C pointer; libmicrohttpd allows the calls made on them from any thread
    // (MHD_resume_connection, MHD_quiesce_daemon, MHD_stop_daemon).
    struct Handle: @unchecked Sendable {
        let pointer: OpaquePointer
    }

    private let handler: any HTTPHandler
    private let limits: Limits
    private let daemon = Mutex<Handle?>(nil)
    /// Requests that reached the handler and have not completed.
    private let inFlight = DispatchGroup()
    /// Connections suspended while the handler works; libmicrohttpd must not stop with any.
    private let suspended = DispatchGroup()
    /// Once true (a stop past its grace period), no connection is suspended any more.
    private let closing = Mutex(false)
    private let draining = Atomic<Bool>(false)
    /// Connections whose first request's headers are not all in, by connection: the socket and
    /// the time (uptime nanoseconds) by which they must be. libmicrohttpd's timeout counts only
    /// silence, so a client sending a byte now and then would hold its connection for ever.
    private let pendingHeaders = Mutex<[UInt: (socket: Int32, deadline: UInt64)]>([:])
    private let headerWatchdog = Mutex<(any DispatchSourceTimer)?>(nil)
    /// Streamed responses being sent, cut when a stop's grace period is over.
    private let streams = Mutex<[ObjectIdentifier: HTTPBodyStream]>([:])
    /// Connections answered before their request's body was read: drained when they close.
    private let answeredEarly = Mutex(Set<UInt>())
    private let lingering: LingeringClose

    init(handler: any HTTPHandler, limits: Limits) {
        self.handler = handler
        self.limits = limits
        lingering = LingeringClose(
            bounds: .init(bytes: limits.lingeringBytes, seconds: limits.lingeringSeconds, sockets: limits.connections))
    }

    /// Why the daemon did not start.
    enum StartError: Error, CustomStringConvertible {
        case badHost(String)
        case cannotListen(String)

        var description: String {
            switch self {
            case .badHost(let host): return "'\(host)' is not a numeric IPv4 or IPv6 address"
            case .cannotListen(let reason): return reason
            }
        }
    }

    /// Starts listening on `host` (numeric) and `port` (0: a free one) and returns the port.
    /// The daemon must be stopped with `stop(grace:)` before it is released.
    func start(host: String, port: Int) throws -> Int {
        let context = Unmanaged.passUnretained(self).toOpaque()
        var badHost: Int32 = 0
        let started = ce_mhd_start(
            host, UInt16(port),
            { context, connection, url, method, _, data, size, slot in
                Unmanaged<HTTPDaemon>.fromOpaque(context!).takeUnretainedValue().access(
                    connection, url, method, data, size, slot)
            }, context,
            { context, _, slot, reason in
                Unmanaged<HTTPDaemon>.fromOpaque(context!).takeUnretainedValue().completed(slot, reason)
            }, context,
            { context, connection, _, code in
                Unmanaged<HTTPDaemon>.fromOpaque(context!).takeUnretainedValue().connection(
                    connection, started: ce_mhd_connection_started(code) != 0)
            }, context, UInt32(limits.connections), UInt32(limits.timeoutSeconds), limits.connectionMemory, &badHost)
        guard let started else {
            if badHost != 0 { throw StartError.badHost(host) }
            throw StartError.cannotListen("cannot listen on \(host):\(port): \(String(cString: strerror(errno)))")
        }
        daemon.withOrderedLock { $0 = Handle(pointer: started) }
        headerWatchdog.withOrderedLock { slot in
            let watchdog = DispatchSource.makeTimerSource(
                queue: DispatchQueue(label: "embeddings.serve.header-deadline"))
            watchdog.schedule(deadline: .now() + 0.25, repeating: 0.25)
            watchdog.setEventHandler { [weak self] in self?.cutSlowHeaders() }
            watchdog.resume()
            slot = watchdog
        }
        return Int(ce_mhd_bound_port(started))
    }

    /// Stops accepting connections, lets the requests in progress finish (those still being
    /// received and streamed responses get `grace` seconds; then the handler is told to stop
    /// (`stopping()`), streams get `streamEndSeconds` more to end and the rest are cut; replies
    /// the handler owes are always sent), then closes every connection and the listening socket.
    func stop(grace: Double) {
        guard
            let handle = daemon.withOrderedLock({ daemon -> Handle? in
                defer { daemon = nil }
                return daemon
            })
        else { return }
        draining.store(true, ordering: .relaxed)
        headerWatchdog.withOrderedLock { watchdog in
            watchdog?.cancel()
            watchdog = nil
        }
        let listener = MHD_quiesce_daemon(handle.pointer)
        _ = inFlight.wait(timeout: .now() + grace)
        handler.stopping()
        // Work told to stop ends its streams itself within a moment (a generation within a token):
        // they end whole, and only what is still going after that is cut.
        if !streams.withOrderedLock({ $0.isEmpty }) { _ = inFlight.wait(timeout: .now() + Self.streamEndSeconds) }
        closing.withOrderedLock { $0 = true }
        // No stream parks its connection any more; those parked are resumed and end.
        for stream in streams.withOrderedLock({ Array($0.values) }) { stream.cancel() }
        suspended.wait()
        MHD_stop_daemon(handle.pointer)
        if listener >= 0 { close(listener) }
    }

    // MARK: libmicrohttpd's callbacks (on its polling thread)

    /// libmicrohttpd's access handler: called once the headers are in (`slot` empty), once per
    /// piece of body, once at the end of the body, and again after a resume.
    private func access(
        _ connection: OpaquePointer?, _ url: UnsafePointer<CChar>?, _ method: UnsafePointer<CChar>?,
        _ data: UnsafePointer<CChar>?, _ size: UnsafeMutablePointer<Int>?,
        _ slot: UnsafeMutablePointer<UnsafeMutableRawPointer?>?
    ) -> MHD_Result {
        guard let connection, let size, let slot else { return ce_mhd_no() }
        guard let stored = slot.pointee else {
            let head = HTTPRequestHead(
                method: method.map { String(cString: $0) } ?? "", path: url.map { String(cString: $0) } ?? "/",
                headers: Self.headers(of: connection))
            pendingHeaders.withOrderedLock { $0[Self.key(connection)] = nil }
            let exchange = Exchange(head: head, expectedBody: min(head.contentLength ?? 0, limits.maximumBody))
            slot.pointee = Unmanaged.passRetained(exchange).toOpaque()
            inFlight.enter()
            if let refusal = handler.screen(head) {
                // libmicrohttpd discards the body it will not read by closing the connection
                // after the answer; the close drains it first.
                if head.hasBody { answeredEarly.withOrderedLock { _ = $0.insert(Self.key(connection)) } }
                return queue(refusal, for: exchange, on: connection)
            }
            return ce_mhd_yes()
        }
        let exchange = Unmanaged<Exchange>.fromOpaque(stored).takeUnretainedValue()
        if size.pointee > 0 {
            let count = size.pointee
            size.pointee = 0
            guard let data else { return ce_mhd_yes() }
            // A body without Content-Length is counted as it arrives; past the limit the
            // connection is closed (a response cannot be queued while a body is arriving).
            return exchange.append(UnsafeRawBufferPointer(start: data, count: count), limit: limits.maximumBody)
                ? ce_mhd_yes() : ce_mhd_no()
        }
        switch exchange.advance() {
        case .dispatch(var request):
            let admitted = closing.withOrderedLock { closing -> Bool in
                guard !closing else { return false }
                suspended.enter()
                return true
            }
            guard admitted else {
                return queue(
                    APIError(status: 503, message: "the server is shutting down", code: "shutting_down").response,
                    for: exchange, on: connection)
            }
            exchange.markSuspended()
            MHD_suspend_connection(connection)
            // A suspended connection is out of libmicrohttpd's polling, so its socket stays open
            // and unread until the reply resumes it: peeking at it tells whether the client left.
            // The handler asks only before it replies, on the thread that replies, so the socket
            // is never peeked once the connection may be closed and its number reused.
            let socket = ce_mhd_socket(connection)
            request.clientLeft = { [exchange] in !exchange.hasResponse && ce_socket_peer_closed(socket) != 0 }
            let handle = Handle(pointer: connection)
            handler.handle(request) { response in
                exchange.finish(with: response)
                MHD_resume_connection(handle.pointer)
            }
            return ce_mhd_yes()
        case .respond(let response):
            // Queued before the stop may proceed: a stopping daemon drops what is not yet queued.
            defer { if exchange.endSuspension() { suspended.leave() } }
            return queue(response, for: exchange, on: connection)
        case .waiting:
            return ce_mhd_yes()
        }
    }

    private func queue(_ response: HTTPResponse, for exchange: Exchange, on connection: OpaquePointer) -> MHD_Result {
        if let stream = response.stream { return queue(response, streaming: stream, for: exchange, on: connection) }
        var headers = response.headers
        if draining.load(ordering: .relaxed) { headers.append((name: "Connection", value: "close")) }
        let contentType = response.contentType
        let result: MHD_Result = response.body.withUnsafeBytes { bytes in
            // MUST_COPY: libmicrohttpd keeps its own copy, so the array may go.
            guard let message = ce_mhd_response(bytes.baseAddress, bytes.count) else {
                return ce_mhd_no()
            }
            defer { MHD_destroy_response(message) }
            _ = MHD_add_response_header(message, "Content-Type", contentType)
            for header in headers { _ = MHD_add_response_header(message, header.name, header.value) }
            return MHD_queue_response(connection, UInt32(response.status), message)
        }
        exchange.markAnswered()
        handler.responded(exchange.head, response, seconds: exchange.elapsed)
        return result
    }

    /// Queues a response whose body `stream` produces, sent chunked. Its log line and metrics
    /// come when the request completes (`completed`), with how the stream ended.
    private func queue(
        _ response: HTTPResponse, streaming stream: HTTPBodyStream, for exchange: Exchange,
        on connection: OpaquePointer
    ) -> MHD_Result {
        let sending = StreamSending(stream: stream, connection: Handle(pointer: connection), daemon: self)
        let context = Unmanaged.passRetained(sending).toOpaque()
        guard
            let message = ce_mhd_stream_response(
                { context, _, buffer, maximum in
                    Unmanaged<StreamSending>.fromOpaque(context!).takeUnretainedValue().read(buffer, maximum)
                }, context, { context in Unmanaged<StreamSending>.fromOpaque(context!).release() },
                Self.streamBlock)
        else {
            Unmanaged<StreamSending>.fromOpaque(context).release()
            stream.cancel()
            return ce_mhd_no()
        }
        defer { MHD_destroy_response(message) }
        streams.withOrderedLock { $0[ObjectIdentifier(stream)] = stream }
        exchange.markStreamed(response)
        _ = MHD_add_response_header(message, "Content-Type", response.contentType)
        for header in response.headers { _ = MHD_add_response_header(message, header.name, header.value) }
        if draining.load(ordering: .relaxed) { _ = MHD_add_response_header(message, "Connection", "close") }
        exchange.markAnswered()
        return MHD_queue_response(connection, UInt32(response.status), message)
    }

    /// After a stop's grace period and `stopping()`, how long streams get to end by themselves.
    static let streamEndSeconds = 1.0

    /// The most bytes one call of a stream's content reader copies.
    static let streamBlock = 16 << 10

    /// Suspends `connection` for a stream with nothing to send; returns what resumes it, or nil
    /// when the daemon is stopping (a connection must not stay suspended then).
    fileprivate func park(_ connection: Handle) -> (@Sendable () -> Void)? {
        let admitted = closing.withOrderedLock { closing -> Bool in
            guard !closing else { return false }
            suspended.enter()
            return true
        }
        guard admitted else { return nil }
        MHD_suspend_connection(connection.pointer)
        return { [self] in
            MHD_resume_connection(connection.pointer)
            suspended.leave()
        }
    }

    /// libmicrohttpd's connection notifications: a new connection gets its header deadline
    /// (`timeoutSeconds` from now); a closed one is forgotten, before libmicrohttpd closes its
    /// socket, so the watchdog never shuts down a socket number that another connection reuses.
    /// A closed one that was answered before its body was read is drained through a duplicate
    /// of its socket (libmicrohttpd has already shut down the writing side, after the answer).
    private func connection(_ connection: OpaquePointer?, started: Bool) {
        guard let connection else { return }
        let key = Self.key(connection)
        let socket = ce_mhd_socket(connection)
        let deadline = DispatchTime.now().uptimeNanoseconds + UInt64(limits.timeoutSeconds) * 1_000_000_000
        pendingHeaders.withOrderedLock { pending in
            if started, socket >= 0 { pending[key] = (socket, deadline) } else { pending[key] = nil }
        }
        guard !started, answeredEarly.withOrderedLock({ $0.remove(key) != nil }), socket >= 0 else { return }
        let duplicate = fcntl(socket, F_DUPFD_CLOEXEC, 0)
        if duplicate >= 0 { lingering.drain(duplicate) }
    }

    /// A connection's key in the daemon's tables (its address, unique while it is open).
    private static func key(_ connection: OpaquePointer) -> UInt {
        UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(connection)))
    }

    /// Shuts down the sockets of connections whose first request's headers are late; libmicrohttpd
    /// then sees the connection end and closes it.
    private func cutSlowHeaders() {
        let now = DispatchTime.now().uptimeNanoseconds
        pendingHeaders.withOrderedLock { pending in
            for (key, entry) in pending where entry.deadline <= now {
                shutdown(entry.socket, Int32(SHUT_RDWR))
                pending[key] = nil
            }
        }
    }

    /// libmicrohttpd's completion callback: the request is over, answered or not.
    private func completed(
        _ slot: UnsafeMutablePointer<UnsafeMutableRawPointer?>?, _ reason: MHD_RequestTerminationCode
    ) {
        guard let slot, let stored = slot.pointee else { return }
        slot.pointee = nil
        let exchange = Unmanaged<Exchange>.fromOpaque(stored).takeRetainedValue()
        // A resumed connection whose client had gone can end without another call to `access`.
        if exchange.endSuspension() { suspended.leave() }
        if var response = exchange.streamedResponse, let stream = response.stream {
            streams.withOrderedLock { _ = $0.removeValue(forKey: ObjectIdentifier(stream)) }
            if !stream.isComplete {
                switch ce_mhd_reason(reason) {
                case 2: response.note = "stream cut: timed out"
                case 3: response.note = "stream cut: server stopped"
                // A write that fails (1) is a client gone mid-stream too.
                case 1, 4, 5: response.note = "stream cut: client went away"
                default: response.note = stream.isCancelled ? "stream cut: server stopping" : "stream cut"
                }
                // The producer hears of it and stops.
                stream.cancel()
            }
            handler.responded(exchange.head, response, seconds: exchange.elapsed)
        } else if !exchange.isAnswered {
            let why: String
            switch ce_mhd_reason(reason) {
            case 2: why = "timed out"
            case 3: why = "server stopped"
            case 4, 5: why = "client went away"
            default: why = exchange.isOverLimit ? "body over the limit without Content-Length" : "connection error"
            }
            // A stream whose client left before it was sent: its producer stops at its next write.
            exchange.unsentStream?.cancel()
            handler.abandoned(exchange.head, reason: why, seconds: exchange.elapsed)
        }
        inFlight.leave()
    }

    private static func headers(of connection: OpaquePointer) -> [String: String] {
        var headers = [String: String]()
        for name in capturedHeaders {
            if let value = ce_mhd_header(connection, name) {
                headers[name.lowercased()] = String(cString: value)
            }
        }
        return headers
    }
}

/// One request's state between libmicrohttpd's calls: its body as it arrives, then the
/// handler's response. Written on the polling thread and (the response) on the handler's.
private final class Exchange: Sendable {
    let head: HTTPRequestHead
    private let started = DispatchTime.now()
    private let state: Mutex<State>

    private struct State {
        var body: [UInt8] = []
        var overLimit = false
        var dispatched = false
        var response: HTTPResponse?
        var answered = false
        /// A streamed response queued: logged when the request completes.
        var streamed: HTTPResponse?
        /// Counted in the daemon's `suspended` group.
        var suspended = false
    }

    enum Step {
        /// The body is complete: hand the request over.
        case dispatch(HTTPRequest)
        /// The handler replied: send it.
        case respond(HTTPResponse)
        /// Nothing to do yet.
        case waiting
    }

    init(head: HTTPRequestHead, expectedBody: Int) {
        self.head = head
        var state = State()
        state.body.reserveCapacity(expectedBody)
        self.state = Mutex(state)
    }

    var elapsed: Double { Double(DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds) / 1e9 }
    var isAnswered: Bool { state.withOrderedLock { $0.answered } }
    var isOverLimit: Bool { state.withOrderedLock { $0.overLimit } }

    /// Appends a piece of body; false (and nothing kept) once the body passes `limit`.
    func append(_ bytes: UnsafeRawBufferPointer, limit: Int) -> Bool {
        state.withOrderedLock { state in
            guard !state.overLimit, state.body.count + bytes.count <= limit else {
                state.overLimit = true
                state.body = []
                return false
            }
            state.body.append(contentsOf: bytes)
            return true
        }
    }

    func advance() -> Step {
        let head = head
        return state.withOrderedLock { state -> Step in
            if !state.dispatched {
                state.dispatched = true
                let body = state.body
                state.body = []
                return .dispatch(HTTPRequest(head: head, body: body))
            }
            if let response = state.response, !state.answered { return .respond(response) }
            return .waiting
        }
    }

    func markSuspended() {
        state.withOrderedLock { $0.suspended = true }
    }

    /// Whether the request was counted as suspended; it is not any more.
    func endSuspension() -> Bool {
        state.withOrderedLock { state in
            defer { state.suspended = false }
            return state.suspended
        }
    }

    func finish(with response: HTTPResponse) {
        state.withOrderedLock { $0.response = response }
    }

    /// Whether the handler has replied.
    var hasResponse: Bool { state.withOrderedLock { $0.response != nil } }

    func markStreamed(_ response: HTTPResponse) {
        state.withOrderedLock { $0.streamed = response }
    }

    var streamedResponse: HTTPResponse? { state.withOrderedLock { $0.streamed } }

    /// The stream of a response the handler gave that was never queued (the client left while
    /// its connection was suspended), if any.
    var unsentStream: HTTPBodyStream? { state.withOrderedLock { $0.answered ? nil : $0.response?.stream } }

    func markAnswered() {
        state.withOrderedLock { $0.answered = true }
    }
}

/// A streamed response on its connection: what libmicrohttpd's content reader calls, retained
/// by the response until libmicrohttpd releases it.
private final class StreamSending: Sendable {
    let stream: HTTPBodyStream
    let connection: HTTPDaemon.Handle
    let daemon: HTTPDaemon

    init(stream: HTTPBodyStream, connection: HTTPDaemon.Handle, daemon: HTTPDaemon) {
        self.stream = stream
        self.connection = connection
        self.daemon = daemon
    }

    /// The content reader: bytes copied, 0 with the connection suspended until there are more,
    /// or the end of the stream.
    func read(_ buffer: UnsafeMutablePointer<CChar>?, _ maximum: Int) -> Int {
        guard let buffer, maximum > 0 else { return ce_mhd_end_of_stream() }
        switch stream.read(
            into: UnsafeMutableRawBufferPointer(start: buffer, count: maximum), park: { daemon.park(connection) })
        {
        case .bytes(let count): return count
        case .parked: return 0
        case .end: return ce_mhd_end_of_stream()
        }
    }

    deinit {
        // libmicrohttpd is done with the response: a stream not sent to its end was cut.
        stream.cancel()
    }
}
