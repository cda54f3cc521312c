import Dispatch
import Foundation
import LinearAlgebra

/// One sequence being decoded by a `LlamaModel`: its tokens so far and their keys and values
/// (the KV cache), so that each new token costs one step, not a pass over the whole prefix.
///
/// A model serves any number of sequences at once; a sequence belongs to one caller at a time
/// (it is not `Sendable`). The cache grows with the tokens actually held, up to `contextSize`.
///
/// ```swift
/// let sequence = model.makeSequence()
/// var logits = try sequence.append(promptIDs)      // prefill: the last position's logits
/// let next = logits.indices.max { logits[$0] < logits[$1] }!
/// logits = try sequence.append([next])             // one decode step
/// ```
package final class LlamaSequence {
    /// The model this sequence runs.
    package let model: LlamaModel
    /// The most tokens the sequence may hold.
    package let contextSize: Int
    /// The tokens held, in order (their keys and values are cached).
    package private(set) var tokens: [Int] = []

    private let cache: KeyValueCache
    private let scratch: Scratch

    init(model: LlamaModel, contextSize: Int) {
        self.model = model
        self.contextSize = contextSize
        self.cache = KeyValueCache(configuration: model.configuration, limit: contextSize)
        self.scratch = Scratch(configuration: model.configuration)
    }

    /// The number of tokens held.
    package var count: Int { tokens.count }

    /// Forgets every token after the first `count` (to reuse a shared prefix, or to start again with 0).
    package func truncate(to count: Int) {
        precondition(count >= 0 && count <= tokens.count, "truncate(to:) beyond the tokens held")
        tokens.removeSubrange(count...)
    }

    /// Runs `ids` through the model after the tokens already held and returns the logits `[V]`
    /// of the last one: a prefill when there are many, a decode step for one.
    /// - Throws: `LlamaDecoderError` with `.invalidArgument` for an empty list or an id outside the
    ///   vocabulary, `.contextOverflow` when the tokens would not fit `contextSize`.
    package func append(_ ids: [Int]) throws(LlamaDecoderError) -> [Float] {
        var logits = [Float](repeating: 0, count: model.configuration.vocabularySize)
        try append(ids, allLogits: false) { _, row in
            logits.withUnsafeMutableBufferPointer { $0.baseAddress!.update(from: row, count: $0.count) }
        }
        return logits
    }

    /// Runs `ids` after the tokens held and hands `body` the logits `[V]` of every one of them, in
    /// order (`body(k, logits)` for the `k`-th of `ids`), for scoring a text. The pointer is valid
    /// only during the call.
    package func appendScoring(_ ids: [Int], _ body: (Int, UnsafePointer<Float>) -> Void) throws(LlamaDecoderError) {
        try append(ids, allLogits: true, body)
    }

    private func append(_ ids: [Int], allLogits: Bool, _ body: (Int, UnsafePointer<Float>) -> Void)
        throws(LlamaDecoderError)
    {
        let configuration = model.configuration
        guard !ids.isEmpty else { throw .invalidArgument("no tokens to append") }
        if let bad = ids.first(where: { $0 < 0 || $0 >= configuration.vocabularySize }) {
            throw .invalidArgument("token id \(bad) is outside the vocabulary of \(configuration.vocabularySize)")
        }
        guard tokens.count + ids.count <= contextSize else {
            throw .contextOverflow(
                "\(tokens.count) tokens held and \(ids.count) more exceed the context of \(contextSize)")
        }
        // Prompts run in chunks so that the scratch buffers stay bounded whatever the prompt's length.
        var start = 0
        while start < ids.count {
            let chunk = Array(ids[start..<min(ids.count, start + Self.chunkRows)])
            let last = start + chunk.count == ids.count
            try model.forward(
                chunk, at: tokens.count, cache: cache, scratch: scratch,
                logitRows: allLogits ? .all : (last ? .last : .none)
            ) { row, logits in body(start + row, logits) }
            tokens += chunk
            start += chunk.count
        }
    }

    /// The most prompt tokens one forward pass takes.
    static let chunkRows = 256
}

/// The keys and values of every layer, for positions `0..<capacity`, grown on demand.
///
/// Per layer and key-value head, keys and values are `[capacity, D]` each (head-major), so one
/// head's history is contiguous for the attention's dot products.
final class KeyValueCache {
    let layers: Int, heads: Int, headDimension: Int, limit: Int
    private(set) var capacity = 0
    /// `[L][Hkv][capacity][D]`.
    private(set) var keys: UnsafeMutablePointer<Float>
    private(set) var values: UnsafeMutablePointer<Float>

    init(configuration: LlamaConfiguration, limit: Int) {
        layers = configuration.layerCount
        heads = configuration.keyValueHeadCount
        headDimension = configuration.headDimension
        self.limit = limit
        keys = .allocate(capacity: 1)
        values = .allocate(capacity: 1)
    }

    deinit {
        keys.deallocate()
        values.deallocate()
    }

    /// Grows (doubling, at most `limit`) so that `positions` fit, keeping what is held.
    func reserve(_ positions: Int, keeping held: Int) {
        guard positions > capacity else { return }
        let newCapacity = min(limit, max(positions, max(64, capacity * 2)))
        let stride = headDimension
        let newKeys = UnsafeMutablePointer<Float>.allocate(capacity: layers * heads * newCapacity * stride)
        let newValues = UnsafeMutablePointer<Float>.allocate(capacity: layers * heads * newCapacity * stride)
        if held > 0 {
            for block in 0..<(layers * heads) {
                (newKeys + block * newCapacity * stride).update(
                    from: keys + block * capacity * stride, count: held * stride)
                (newValues + block * newCapacity * stride).update(
                    from: values + block * capacity * stride, count: held * stride)
            }
        }
        keys.deallocate()
        values.deallocate()
        keys = newKeys
        values = newValues
        capacity = newCapacity
    }

    /// `[capacity, D]`: the keys of `layer`, head `head`.
    func keys(layer: Int, head: Int) -> UnsafeMutablePointer<Float> {
        keys + (layer * heads + head) * capacity * headDimension
    }
    /// `[capacity, D]`: the values of `layer`, head `head`.
    func values(layer: Int, head: Int) -> UnsafeMutablePointer<Float> {
        values + (layer * heads + head) * capacity * headDimension
    }

    /// Bytes held.
    var byteCount: Int { 2 * layers * heads * capacity * headDimension * MemoryLayout<Float>.size }
}

/// Scratch buffers for one forward pass of up to `rows` tokens, reused across calls.
final class Scratch {
    let configuration: LlamaConfiguration
    private(set) var rows = 0
    private(set) var positions = 0
    /// `[R, H]` the residual stream.
    var hidden: UnsafeMutablePointer<Float> = .allocate(capacity: 1)
    /// `[R, H]` normalized rows.
    var normalized: UnsafeMutablePointer<Float> = .allocate(capacity: 1)
    /// `[R, Hq·D + 2·Hkv·D]` queries, keys and values.
    var queryKeyValue: UnsafeMutablePointer<Float> = .allocate(capacity: 1)
    /// `[R, Hq·D]` the attention's output, heads side by side.
    var context: UnsafeMutablePointer<Float> = .allocate(capacity: 1)
    /// `[R, 2F]` gate and up projections.
    var gateUp: UnsafeMutablePointer<Float> = .allocate(capacity: 1)
    /// `[R, F]` the gated activations.
    var gated: UnsafeMutablePointer<Float> = .allocate(capacity: 1)
    /// `[R, N]` one head's attention scores over `N` positions.
    var scores: UnsafeMutablePointer<Float> = .allocate(capacity: 1)
    /// `[R, V]` logits.
    var logits: UnsafeMutablePointer<Float> = .allocate(capacity: 1)
    /// `[R, ropeDimension / 2]` RoPE's cosines and sines per row.
    var cosines: UnsafeMutablePointer<Float> = .allocate(capacity: 1)
    var sines: UnsafeMutablePointer<Float> = .allocate(capacity: 1)
    /// `[R, ropeDimension / 2]` the same for the sliding-window layers' own frequencies (Gemma 3).
    var localCosines: UnsafeMutablePointer<Float> = .allocate(capacity: 1)
    var localSines: UnsafeMutablePointer<Float> = .allocate(capacity: 1)
    /// Quantized input rows for int8 products.
    var quantizedRows = QuantizedRows()
    /// Quantized input rows for block products, in two 8-bit parts (see `TwoPartBlockRows`).
    var twoPartRows = TwoPartBlockRows()

    init(configuration: LlamaConfiguration) { self.configuration = configuration }

    deinit {
        freeRows()
        scores.deallocate()
    }

    func reserve(rows needed: Int, positions neededPositions: Int) {
        let c = configuration
        var scoresTooSmall = neededPositions > positions
        if needed > rows {
            freeRows()
            hidden = .allocate(capacity: needed * c.hiddenSize)
            normalized = .allocate(capacity: needed * c.hiddenSize)
            queryKeyValue = .allocate(capacity: needed * (c.queryWidth + 2 * c.keyValueWidth))
            context = .allocate(capacity: needed * c.queryWidth)
            gateUp = .allocate(capacity: needed * 2 * c.feedForwardSize)
            gated = .allocate(capacity: needed * c.feedForwardSize)
            logits = .allocate(capacity: needed * c.vocabularySize)
            cosines = .allocate(capacity: needed * c.ropeDimension / 2)
            sines = .allocate(capacity: needed * c.ropeDimension / 2)
            localCosines = .allocate(capacity: needed * c.ropeDimension / 2)
            localSines = .allocate(capacity: needed * c.ropeDimension / 2)
            rows = needed
            scoresTooSmall = true
        }
        if scoresTooSmall {
            scores.deallocate()
            positions = max(neededPositions, positions, 64)
            scores = .allocate(capacity: rows * positions)
        }
    }

    private func freeRows() {
        for buffer in [
            hidden, normalized, queryKeyValue, context, gateUp, gated, logits, cosines, sines, localCosines, localSines,
        ] {
            buffer.deallocate()
        }
    }
}
