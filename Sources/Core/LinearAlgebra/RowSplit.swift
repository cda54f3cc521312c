import Foundation
import Synchronization

/// How work over rows is cut into contiguous row ranges, one per core: the scans and encoders of
/// a row-major `rows × dimension` matrix when it is large (the one place that threshold is
/// written), and the decoder's products over output columns (its own threshold, in
/// multiply-adds, through `map`).
/// Work of equal cost per row, read once, wants equal static ranges with no per-part locking;
/// uneven groups of work (an encoder's texts) go through `ParallelGroups` instead, which hands
/// them out one at a time.
///
/// ```swift
/// let parts = RowSplit.parts(rows: 6_000, dimension: 384)   // the active cores (≥ 2²¹ values)
/// let sums = RowSplit.map(rows: 6_000, parts: parts) { rows in rows.count }
/// ```
package enum RowSplit {
    /// Matrices of at least this many values are split; below it, starting threads costs more
    /// than one core's pass over the rows.
    package static let threshold = 1 << 21

    /// The number of parts for a `rows × dimension` matrix: 1 below `threshold`, else one per
    /// active core, but never more than `rows`.
    package static func parts(rows: Int, dimension: Int) -> Int {
        rows * dimension >= threshold ? max(1, min(ProcessInfo.processInfo.activeProcessorCount, rows)) : 1
    }

    /// The rows of part `part` of `parts` over `rows` rows: near-equal, contiguous, in order.
    /// Parts for a scan whose parts call BLAS (the batch search's matrix products): split as
    /// `parts(rows:dimension:)` says only while BLAS runs one thread per call; when OpenBLAS runs
    /// its own threads, one part uses them all (splitting as well would run cores × BLAS threads
    /// on the cores). Run such parts inside `BLAS.singleThreaded`, so that a scope ending
    /// elsewhere cannot make them multi-threaded midway.
    package static func blasParts(rows: Int, dimension: Int) -> Int {
        let split = parts(rows: rows, dimension: dimension)
        return split > 1 && BLAS.threadCount == 1 ? split : 1
    }

    package static func range(part: Int, of parts: Int, rows: Int) -> Range<Int> {
        (rows * part / parts)..<(rows * (part + 1) / parts)
    }

    /// Runs `body` on each part's rows, the parts concurrently when there are several, and returns
    /// their results in part order (so the count is the number of parts used). Each worker
    /// creates its own result and writes it into its own slot once, at its end; nothing a
    /// worker mutates is shared. Records `parts` with the task's `observer`, if any.
    /// - Complexity: the parts' work, on `parts` threads.
    package static func map<T: Sendable>(rows: Int, parts: Int, _ body: @Sendable (Range<Int>) -> T) -> [T] {
        precondition(parts >= 1, "a row split needs at least one part")
        observer?.record(parts)
        guard parts > 1 else { return [body(0..<rows)] }
        var slots = [T?](repeating: nil, count: parts)
        slots.withUnsafeMutableBufferPointer { buffer in
            let shared = WorkerShared(buffer)
            withoutActuallyEscaping(body) { body in
                DispatchQueue.concurrentPerform(iterations: parts) { part in
                    shared.value[part] = body(range(part: part, of: parts, rows: rows))
                }
            }
        }
        let results = slots.compactMap { $0 }
        precondition(results.count == parts, "every part of a row split returns a result")
        return results
    }

    /// Records the part count of every split run while it is the task's `observer`, so a test
    /// can check that a scan really ran on several threads.
    package final class Observer: Sendable {
        private let counts = Mutex<[Int]>([])

        /// An observer that has recorded nothing yet.
        package init() {}

        /// The part counts of the splits run so far, in order.
        package var partCounts: [Int] { counts.withOrderedLock { $0 } }

        func record(_ parts: Int) { counts.withOrderedLock { $0.append(parts) } }
    }

    /// The observer of the splits run by this task (set with `RowSplit.$observer.withValue`).
    @TaskLocal package static var observer: Observer?
}
