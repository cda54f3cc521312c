import Dispatch
import Foundation
import LinearAlgebra
import Synchronization

/// The error of `answerFromAnotherThread` when the work did not finish in time.
package struct DidNotAnswer: Error, CustomStringConvertible {
    package let seconds: Double
    package var description: String {
        "no answer within \(seconds) s: the call waited for something that does not end soon"
    }
}

/// Runs `body` on a thread of its own and waits for it at most `seconds`: for tests that show a
/// call does not wait for other work in progress on the calling thread (an indexing run). The
/// limit only turns a wait that would never end into a failure; it times nothing.
package func answerFromAnotherThread<T: Sendable>(
    within seconds: Double = 120, _ body: @escaping @Sendable () throws -> T
) -> Result<T, any Error> {
    let done = DispatchSemaphore(value: 0)
    let result = Mutex<Result<T, any Error>?>(nil)
    DispatchQueue.global().async {
        let outcome = Result { try body() }
        result.withOrderedLock { $0 = outcome }
        done.signal()
    }
    guard done.wait(timeout: .now() + seconds) == .success, let outcome = result.withOrderedLock({ $0 }) else {
        return .failure(DidNotAnswer(seconds: seconds))
    }
    return outcome
}

/// Everything two pipes deliver until they close, read at the same time (a child process that
/// fills one pipe while the parent waits on the other would otherwise block both).
package func readBoth(_ first: FileHandle, _ second: FileHandle) -> (Data, Data) {
    let other = Mutex<Data>(Data())
    let group = DispatchGroup()
    DispatchQueue.global().async(group: group) {
        let data = second.readDataToEndOfFile()
        other.withOrderedLock { $0 = data }
    }
    let data = first.readDataToEndOfFile()
    group.wait()
    return (data, other.withOrderedLock { $0 })
}

/// Reads `handle` line by line until a line starts with `prefix` and returns it (nil: the pipe
/// closed first). Blocks on the reads: no polling.
package func firstLine(startingWith prefix: String, from handle: FileHandle) -> String? {
    var pending = Data()
    while true {
        let chunk = handle.availableData
        if chunk.isEmpty { return nil }
        pending.append(chunk)
        while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
            let line = String(decoding: pending[pending.startIndex..<newline], as: UTF8.self)
            pending.removeSubrange(pending.startIndex...newline)
            // A terminal's bar redraws with carriage returns; a pipe gets plain lines.
            if line.hasPrefix(prefix) { return line }
        }
    }
}
