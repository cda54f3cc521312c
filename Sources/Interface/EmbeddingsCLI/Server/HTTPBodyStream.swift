import LinearAlgebra
import Synchronization

/// A response body produced over time (server-sent events): a producer on its own thread writes
/// pieces and then finishes; `HTTPDaemon` sends each piece as a chunk as soon as it is written.
///
/// ```swift
/// let body = HTTPBodyStream()
/// reply(HTTPResponse(status: 200, contentType: "text/event-stream", stream: body))
/// while !body.isCancelled, let piece = next() { body.write(piece) }
/// body.finish()
/// ```
/// A client that goes away, or a server that stops past its grace period, cancels the stream:
/// `isCancelled` turns true (and `onCancel` runs) so the producer stops, and later writes are
/// dropped. While nothing is buffered the connection is suspended (no polling, no busy loop);
/// the next write or the end resumes it.
final class HTTPBodyStream: Sendable {
    private struct State {
        var buffer: [UInt8] = []
        var ended = false
        var cancelled = false
        /// The connection the daemon suspended for want of bytes, and who resumes it.
        var parked: (@Sendable () -> Void)?
        var onCancel: [@Sendable () -> Void] = []
    }
    private let state = Mutex(State())

    /// A stream with nothing written yet.
    init() {}

    /// Whether the stream was cancelled: the client went away or the server cut it.
    var isCancelled: Bool { state.withOrderedLock { $0.cancelled } }

    /// Appends `bytes` to what the client will receive; false (and nothing kept) once the stream
    /// was cancelled or finished.
    @discardableResult
    func write(_ bytes: [UInt8]) -> Bool {
        let (accepted, wake) = state.withOrderedLock { state -> (Bool, (@Sendable () -> Void)?) in
            guard !state.cancelled, !state.ended else { return (false, nil) }
            state.buffer.append(contentsOf: bytes)
            defer { state.parked = nil }
            return (true, state.parked)
        }
        wake?()
        return accepted
    }

    /// Ends the stream once what was written has been sent. Further calls do nothing.
    func finish() {
        let wake = state.withOrderedLock { state -> (@Sendable () -> Void)? in
            state.ended = true
            defer { state.parked = nil }
            return state.parked
        }
        wake?()
    }

    /// Runs `body` when the stream is cancelled (at once when it already is), on the thread that
    /// notices: keep it short.
    func onCancel(_ body: @escaping @Sendable () -> Void) {
        let now = state.withOrderedLock { state -> Bool in
            if !state.cancelled { state.onCancel.append(body) }
            return state.cancelled
        }
        if now { body() }
    }

    // MARK: The daemon's side

    /// What the daemon's content reader does next.
    enum Read {
        /// `count` bytes were copied.
        case bytes(Int)
        /// Nothing is buffered: the connection was parked (`park` ran) until a write or the end.
        case parked
        /// Everything was sent and the stream has ended (or was cut).
        case end
    }

    /// Copies buffered bytes into `destination`; with none, ends when the stream has ended, else
    /// parks the connection: `park()` suspends it and returns the closure that resumes it, or
    /// nil when it may not be suspended (the daemon is stopping), and then the stream is cut.
    func read(into destination: UnsafeMutableRawBufferPointer, park: () -> (@Sendable () -> Void)?) -> Read {
        let (read, cancelled) = state.withOrderedLock { state -> (Read, [@Sendable () -> Void]) in
            if !state.buffer.isEmpty {
                let count = min(destination.count, state.buffer.count)
                state.buffer.withUnsafeBytes { source in
                    destination.copyMemory(from: UnsafeRawBufferPointer(rebasing: source[..<count]))
                }
                state.buffer.removeFirst(count)
                return (.bytes(count), [])
            }
            if state.ended { return (.end, []) }
            // Suspended inside the lock, so that a write cannot try to resume it first.
            guard let resume = park() else { return (.end, Self.cancel(&state)) }
            state.parked = resume
            return (.parked, [])
        }
        for body in cancelled { body() }
        return read
    }

    /// Cancels the stream (the client went away, the daemon stops): the producer hears of it, and
    /// a parked connection is resumed so that it ends.
    func cancel() {
        let (wake, cancelled) = state.withOrderedLock { state -> ((@Sendable () -> Void)?, [@Sendable () -> Void]) in
            defer { state.parked = nil }
            return (state.parked, Self.cancel(&state))
        }
        wake?()
        for body in cancelled { body() }
    }

    /// Whether the stream ended and everything written was handed to the connection.
    var isComplete: Bool { state.withOrderedLock { $0.ended && !$0.cancelled && $0.buffer.isEmpty } }

    /// Marks `state` cancelled and ended; the cancel handlers to run (outside the lock), once.
    private static func cancel(_ state: inout State) -> [@Sendable () -> Void] {
        guard !state.cancelled else { return [] }
        let complete = state.ended && state.buffer.isEmpty
        state.ended = true
        guard !complete else { return [] }
        state.cancelled = true
        defer { state.onCancel = [] }
        return state.onCancel
    }
}
