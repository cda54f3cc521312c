import LinearAlgebra

/// `BertSelfAttention` with a fused QKV projection: per head, `softmax(Q·Kᵀ/√D)·V`, each sequence
/// of the batch attending only to itself (no padding, so no mask is needed).
struct BertSelfAttention {
    let configuration: BertConfiguration

    /// `hidden: [R, H]` → `workspace.context: [R, H]`, for sequences at `segments` (row ranges).
    func apply(
        _ layer: BertLayerWeights, hidden: UnsafePointer<Float>, rows: Int, segments: [Range<Int>], workspace: Workspace
    ) {
        let h = configuration.hiddenSize
        let d = configuration.headSize
        let qkv = workspace.queryKeyValue
        // qkv: [R, 3H] = hidden[R, H] · Wqkvᵀ[H, 3H] + b
        layer.queryKeyValue.apply(hidden, rows: rows, into: qkv, buffer: &workspace.quantizedRows)
        let scale = 1 / Float(d).squareRoot()
        for segment in segments {
            let t = segment.count
            guard t > 0 else { continue }
            for head in 0..<configuration.headCount {
                let q = qkv + segment.lowerBound * 3 * h + head * d
                let k = q + h
                let v = q + 2 * h
                // scores: [T, T] = Q_head[T, D] · K_headᵀ[D, T]   (rows of stride 3H)
                BLAS.gemm(
                    .none, .transposed, m: t, n: t, k: d, a: q, lda: 3 * h, b: k, ldb: 3 * h,
                    c: workspace.scores, ldc: t)
                Kernels.softmaxRows(workspace.scores, rows: t, columns: t, scale: scale)
                // context[:, head] : [T, D] = P[T, T] · V_head[T, D]
                BLAS.gemm(
                    .none, .none, m: t, n: d, k: t, a: workspace.scores, lda: t, b: v, ldb: 3 * h,
                    c: workspace.context + segment.lowerBound * h + head * d, ldc: h)
            }
        }
    }
}
