import Dispatch
import Synchronization

/// How the package spreads a list of independent groups of work over threads: the encoder's
/// sequences, the batch calls' texts. Groups are uneven (milliseconds to seconds each), so threads
/// take the next one as they finish, and the first error stops the rest. `RowSplit` (VectorIndex)
/// is the other pattern and stays apart on purpose: one memory-bound pass over a large matrix,
/// cut once into equal contiguous row ranges, and only above a size threshold.
package enum ParallelGroups {
    /// `body(g)` for every `g` in `0..<count`, results in order. Up to `threads` threads each
    /// take the next group in turn, so none waits for another while groups remain; after the
    /// first error no thread starts another group, and that error is rethrown. One thread (or
    /// one group) runs on the calling thread.
    package static func map<T: Sendable>(count: Int, threads: Int, _ body: @Sendable (Int) throws -> T) throws -> [T] {
        let state = Mutex(GroupState())
        // A handful of groups, each milliseconds to seconds of work: one lock per group costs nothing.
        let results = Mutex([T?](repeating: nil, count: count))
        @Sendable func work() {
            while let g = state.withOrderedLock({ s -> Int? in
                guard s.failure == nil, s.next < count else { return nil }
                s.next += 1
                return s.next - 1
            }) {
                do {
                    let value = try body(g)
                    results.withOrderedLock { $0[g] = value }
                } catch {
                    state.withOrderedLock { if $0.failure == nil { $0.failure = error } }
                }
            }
        }
        let workers = min(max(1, threads), count)
        if workers > 1 { DispatchQueue.concurrentPerform(iterations: workers) { _ in work() } } else { work() }
        if let failure = state.withOrderedLock({ $0.failure }) { throw failure }
        return results.withOrderedLock { $0 }.map { $0! }
    }

    /// The next group to take, and the first error.
    private struct GroupState {
        var next = 0
        var failure: (any Error)?
    }
}
