import Foundation
import JSONText
import LinearAlgebra
import Synchronization

/// Buffered standard output.
final class Output: Sendable {
    static let standard = Output()
    private let buffer = Mutex(Data())

    func write(_ s: String) {
        let full = buffer.withOrderedLock { buffer in
            buffer.append(contentsOf: s.utf8)
            return buffer.count > 1 << 16
        }
        if full { flush() }
    }

    func flush() {
        let pending = buffer.withOrderedLock { buffer in
            defer { buffer.removeAll(keepingCapacity: true) }
            return buffer
        }
        guard !pending.isEmpty else { return }
        Self.writeToStandardOutput(pending)
    }

    /// Writes `data` to standard output. When the reader has gone away (`… | head`), the process
    /// ends the way Unix tools do, by SIGPIPE (status 141 in the shell): no backtrace, no error
    /// line. Nothing else is written to standard output before that, so no file is left half made.
    static func writeToStandardOutput(_ data: Data) {
        do {
            try FileHandle.standardOutput.write(contentsOf: data)
        } catch {
            readerWentAway()
        }
    }

    /// Ends the process as a write to a closed pipe would have, had SIGPIPE not been ignored.
    static func readerWentAway() -> Never {
        signal(SIGPIPE, SIG_DFL)
        raise(SIGPIPE)
        exit(141)
    }
}
