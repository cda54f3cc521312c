import LinearAlgebra

/// `BertLayer`: self-attention, `BertSelfOutput` (projection + residual + LayerNorm),
/// `BertIntermediate` (projection + GELU) and `BertOutput` (projection + residual + LayerNorm).
struct BertLayer {
    let configuration: BertConfiguration

    /// Updates `workspace.hidden: [R, H]` in place.
    func apply(_ layer: BertLayerWeights, rows: Int, segments: [Range<Int>], workspace: Workspace) {
        let h = configuration.hiddenSize, i = configuration.intermediateSize
        let eps = configuration.layerNormEpsilon
        let x = workspace.hidden
        BertSelfAttention(configuration: configuration)
            .apply(layer, hidden: x, rows: rows, segments: segments, workspace: workspace)
        // BertSelfOutput — projected: [R, H] = context · Woᵀ + b; x = LayerNorm(projected + x)
        layer.attentionOutput.apply(workspace.context, rows: rows, into: workspace.projected)
        Kernels.add(workspace.projected, into: x, count: rows * h)
        layer.attentionLayerNorm.apply(x, rows: rows, epsilon: eps)
        // BertIntermediate — intermediate: [R, I] = GELU(x · Wiᵀ + b)
        layer.intermediate.apply(x, rows: rows, into: workspace.intermediate)
        Kernels.gelu(workspace.intermediate, count: rows * i)
        // BertOutput — projected: [R, H] = intermediate · Wo2ᵀ + b; x = LayerNorm(projected + x)
        layer.output.apply(workspace.intermediate, rows: rows, into: workspace.projected)
        Kernels.add(workspace.projected, into: x, count: rows * h)
        layer.outputLayerNorm.apply(x, rows: rows, epsilon: eps)
    }
}
