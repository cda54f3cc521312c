import Foundation
import LinearAlgebra
import Synchronization

/// A small JSON writer for streaming output: strings escaped per RFC 8259, floats written with
/// Swift's shortest round-trip representation (so they parse back to the same `Float`).
struct JSONWriter {
    private(set) var text = ""

    mutating func raw(_ s: String) { text += s }

    mutating func string(_ s: String) {
        text += "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": text += "\\\""
            case "\\": text += "\\\\"
            case "\n": text += "\\n"
            case "\r": text += "\\r"
            case "\t": text += "\\t"
            case _ where scalar.value < 0x20 || scalar.value == 0x2028 || scalar.value == 0x2029:
                text += "\\u" + String(format: "%04x", scalar.value)
            default: text.unicodeScalars.append(scalar)
            }
        }
        text += "\""
    }

    mutating func float(_ x: Float) {
        // Non-finite values never reach here (the encoder and index reject them); be safe anyway.
        text += x.isFinite ? "\(x)" : "null"
    }

    mutating func floats(_ xs: [Float]) { array(xs) { $0.float($1) } }

    mutating func strings(_ xs: [String]) { array(xs) { $0.string($1) } }

    private mutating func array<Element>(_ xs: [Element], _ write: (inout JSONWriter, Element) -> Void) {
        text += "["
        for (i, x) in xs.enumerated() {
            if i > 0 { text += "," }
            write(&self, x)
        }
        text += "]"
    }
}

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
