import Foundation
import LinearAlgebra
import Synchronization

/// Scratch buffers for one forward pass, sized for a number of rows (tokens) and reused across
/// calls so that encoding allocates nothing per token.
// @unchecked: it owns raw scratch buffers; WorkspacePool hands each to one forward pass at a time.
final class Workspace: @unchecked Sendable {
    private(set) var rowCapacity = 0
    private(set) var sequenceCapacity = 0
    /// `[R, H]` the running hidden states.
    var hidden: UnsafeMutablePointer<Float>
    /// `[R, 3H]` fused query/key/value projections.
    var queryKeyValue: UnsafeMutablePointer<Float>
    /// `[R, H]` attention context (all heads side by side).
    var context: UnsafeMutablePointer<Float>
    /// `[R, I]` feed-forward inner activations.
    var intermediate: UnsafeMutablePointer<Float>
    /// `[T, T]` one head's attention scores.
    var scores: UnsafeMutablePointer<Float>
    /// A quantized layer's input rows (unused in `Float`).
    var quantizedRows = QuantizedRows()
    let hiddenSize: Int
    let intermediateSize: Int

    init(configuration: BertConfiguration) {
        hiddenSize = configuration.hiddenSize
        intermediateSize = configuration.intermediateSize
        hidden = .allocate(capacity: 1)
        queryKeyValue = .allocate(capacity: 1)
        context = .allocate(capacity: 1)
        intermediate = .allocate(capacity: 1)
        scores = .allocate(capacity: 1)
    }

    deinit { release() }

    /// Grows the buffers (never shrinks) to hold `rows` tokens in sequences of up to `longest`.
    func reserve(rows: Int, longest: Int) {
        if rows > rowCapacity {
            release(keepScores: true)
            let capacity = max(rows, 64)
            hidden = .allocate(capacity: capacity * hiddenSize)
            queryKeyValue = .allocate(capacity: capacity * 3 * hiddenSize)
            context = .allocate(capacity: capacity * hiddenSize)
            intermediate = .allocate(capacity: capacity * intermediateSize)
            rowCapacity = capacity
        }
        if longest > sequenceCapacity {
            scores.deallocate()
            let capacity = max(longest, 64)
            scores = .allocate(capacity: capacity * capacity)
            sequenceCapacity = capacity
        }
    }

    private func release(keepScores: Bool = false) {
        hidden.deallocate()
        queryKeyValue.deallocate()
        context.deallocate()
        intermediate.deallocate()
        if !keepScores { scores.deallocate() }
    }
}

/// A stack of idle workspaces: each concurrent forward pass takes its own.
final class WorkspacePool: Sendable {
    private let free = Mutex<[Workspace]>([])
    private let configuration: BertConfiguration

    init(configuration: BertConfiguration) { self.configuration = configuration }

    func withWorkspace<R>(_ body: (Workspace) throws -> R) rethrows -> R {
        // A workspace goes from one thread's forward pass to another's through the free list.
        let workspace = free.withOrderedLock { $0.popLast() } ?? Workspace(configuration: configuration)
        defer { free.withOrderedLock { $0.append(workspace) } }
        return try body(workspace)
    }
}
