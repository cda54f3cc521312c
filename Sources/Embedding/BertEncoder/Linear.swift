import LinearAlgebra

extension LayerNormWeights {
    /// Row-wise LayerNorm of `x: [R, H]` in place.
    func apply(_ x: UnsafeMutablePointer<Float>, rows: Int, epsilon: Float) {
        gamma.withUnsafeBufferPointer { g in
            beta.withUnsafeBufferPointer { b in
                Kernels.layerNorm(
                    x, rows: rows, columns: g.count, gamma: g.baseAddress!, beta: b.baseAddress!, epsilon: epsilon)
            }
        }
    }
}
