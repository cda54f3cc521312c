import Dispatch
import Foundation
import Synchronization

/// A lingering close, as nginx does it: after an answer sent before the request's body was read
/// (413 on its `Content-Length`, 401, 404, 405), the rest of the body is read and thrown away
/// until the client closes, or `bytes` have been read, or `seconds` have passed; then the socket
/// is closed.
///
/// Closing a socket with unread bytes in it makes the kernel send a reset, and a client still
/// writing its body (Python's `urllib`, unlike curl or `requests`) then fails with "Broken pipe"
/// without ever reading the answer that was waiting for it. libmicrohttpd sends the answer, shuts
/// down its writing side (so the client sees the answer end) and closes the socket; the daemon
/// hands this object a duplicate of the socket just before, which keeps the connection open
/// while it drains. Past either bound the socket is closed as before: a client that keeps
/// sending is cut off.
final class LingeringClose: Sendable {
    /// How much and how long a refused body is drained, and how many sockets at most drain at
    /// once (past that, a socket is closed at once, as without lingering).
    struct Bounds: Sendable {
        var bytes: Int
        var seconds: Double
        var sockets: Int
    }

    let bounds: Bounds
    private let queue = DispatchQueue(label: "embeddings.serve.lingering-close")
    /// The sockets draining, by a number of their own (a socket's descriptor may be reused once
    /// it is closed, so it cannot name a drain whose deadline is still pending).
    private let drains = Mutex((next: UInt64(0), sources: [UInt64: any DispatchSourceRead]()))

    init(bounds: Bounds) {
        self.bounds = bounds
    }

    /// Takes over `socket` (non-blocking, a duplicate nobody else reads or closes): drains it
    /// within the bounds, then closes it.
    func drain(_ socket: Int32) {
        let drain = Drain(socket: socket, limit: bounds.bytes)
        let admitted = drains.withOrderedLock { drains -> UInt64? in
            guard drains.sources.count < bounds.sockets else { return nil }
            let id = drains.next
            drains.next += 1
            // Made only once admitted: libdispatch traps on releasing a source never resumed.
            let source = DispatchSource.makeReadSource(fileDescriptor: socket, queue: queue)
            source.setEventHandler { [weak self] in if !drain.discardAvailable() { self?.stop(id) } }
            source.setCancelHandler { close(socket) }
            drains.sources[id] = source
            source.resume()
            return id
        }
        guard let id = admitted else {
            close(socket)
            return
        }
        queue.asyncAfter(deadline: .now() + bounds.seconds) { [weak self] in self?.stop(id) }
    }

    /// Ends drain `id` (its source's cancel handler closes the socket); nothing if it has ended.
    private func stop(_ id: UInt64) {
        drains.withOrderedLock { $0.sources.removeValue(forKey: id)?.cancel() }
    }

    /// One socket being drained; used only on the drain queue.
    private final class Drain: Sendable {
        let socket: Int32
        let limit: Int
        private let discarded = Atomic(0)

        init(socket: Int32, limit: Int) {
            self.socket = socket
            self.limit = limit
        }

        /// Reads and discards what has arrived; false once the client has closed, the socket
        /// failed, or more than `limit` bytes have come.
        func discardAvailable() -> Bool {
            var buffer = [UInt8](repeating: 0, count: 1 << 16)
            while true {
                let count = buffer.withUnsafeMutableBytes {
                    recv(socket, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT))
                }
                if count > 0 {
                    let total = discarded.add(count, ordering: .relaxed).newValue
                    if total > limit { return false }
                    continue
                }
                if count < 0, errno == EINTR { continue }
                return count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)
            }
        }
    }
}
