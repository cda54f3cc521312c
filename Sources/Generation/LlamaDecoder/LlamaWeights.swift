import LinearAlgebra

/// One decoder layer's weights. Projections are `[out, in]` (Hugging Face's layout); the query,
/// key and value projections are fused into one, and so are the gate and up projections.
struct LlamaLayerWeights: Sendable {
    /// `[H]` RMSNorm scale before attention.
    var attentionNorm: [Float]
    /// `[Hq·D + 2·Hkv·D, H]`: rows `0..<Hq·D` query, then key, then value (biases for `qwen2`).
    var queryKeyValue: LinearWeights
    /// `[D]` RMSNorm scales of each query head and each key head (Qwen3, Gemma 3), or nil.
    var queryNorm: [Float]?
    var keyNorm: [Float]?
    /// `[H, Hq·D]`.
    var attentionOutput: LinearWeights
    /// `[H]` RMSNorm scale of the attention's output before the residual sum (Gemma), or nil.
    var attentionPostNorm: [Float]?
    /// `[H]` RMSNorm scale before the feed-forward block.
    var feedForwardNorm: [Float]
    /// `[2F, H]`: rows `0..<F` gate, `F..<2F` up.
    var gateUp: LinearWeights
    /// `[H, F]`.
    var down: LinearWeights
    /// `[H]` RMSNorm scale of the feed-forward block's output before the residual sum (Gemma), or nil.
    var feedForwardPostNorm: [Float]?

    /// The bytes the layer's weights take in memory.
    var byteCount: Int {
        let norms = [queryNorm, keyNorm, attentionPostNorm, feedForwardPostNorm].reduce(0) { $0 + ($1?.count ?? 0) }
        return (attentionNorm.count + feedForwardNorm.count + norms) * 4 + queryKeyValue.byteCount
            + attentionOutput.byteCount + gateUp.byteCount + down.byteCount
    }
}

/// Every weight of a decoder, in the precision it runs at.
struct LlamaWeights: Sendable {
    var layers: [LlamaLayerWeights]
    /// `[H]` the final RMSNorm's scale.
    var outputNorm: [Float]
    /// `[V, H]` the output head (the token embeddings when tied).
    var output: LinearWeights
    /// `[ropeDimension / 2]` RoPE's inverse frequencies, `base^(−2i/d)` divided by the file's
    /// frequency factors when it has them (`rope_freqs.weight`).
    var inverseFrequencies: [Float]
    /// The sliding-window layers' inverse frequencies when they differ (Gemma 3's own base, or no
    /// linear scaling), else nil.
    var slidingWindowInverseFrequencies: [Float]?

    var byteCount: Int {
        layers.reduce(0) { $0 + $1.byteCount } + outputNorm.count * 4 + output.byteCount
            + (inverseFrequencies.count + (slidingWindowInverseFrequencies?.count ?? 0)) * 4
    }
}
