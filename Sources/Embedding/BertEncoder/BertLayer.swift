import LinearAlgebra

/// `BertLayer`: self-attention, `BertSelfOutput` (projection + residual + LayerNorm),
/// `BertIntermediate` (projection + GELU) and `BertOutput` (projection + residual + LayerNorm).
struct BertLayer {
    let configuration: BertConfiguration

    /// Updates `workspace.hidden: [R, H]` in place.
    func apply(_ layer: BertLayerWeights, rows: Int, segments: [Range<Int>], workspace: Workspace) {
        let i = configuration.intermediateSize
        let eps = configuration.layerNormEpsilon
        let x = workspace.hidden
        BertSelfAttention(configuration: configuration)
            .apply(layer, hidden: x, rows: rows, segments: segments, workspace: workspace)
        // BertSelfOutput — x = LayerNorm(x + context · Woᵀ + b), the residual summed in the product
        layer.attentionOutput.apply(
            workspace.context, rows: rows, into: x, accumulate: true, buffer: &workspace.quantizedRows)
        layer.attentionLayerNorm.apply(x, rows: rows, epsilon: eps)
        // BertIntermediate — intermediate: [R, I] = GELU(x · Wiᵀ + b)
        layer.intermediate.apply(x, rows: rows, into: workspace.intermediate, buffer: &workspace.quantizedRows)
        Kernels.gelu(workspace.intermediate, count: rows * i)
        // BertOutput — x = LayerNorm(x + intermediate · Wo2ᵀ + b)
        layer.output.apply(
            workspace.intermediate, rows: rows, into: x, accumulate: true, buffer: &workspace.quantizedRows)
        layer.outputLayerNorm.apply(x, rows: rows, epsilon: eps)
    }
}
