import LinearAlgebra

extension LinearWeights {
    /// `y[R, out] = (accumulate ? y : 0) + x[R, in] · Wᵀ + b`. `y` must not alias `x`.
    /// With `accumulate`, `y` holds the residual on entry and the sub-layer's sum on return.
    /// A quantized layer quantizes `x` into `buffer` first and runs `Int8GEMM`; a `Float` one
    /// runs sgemm and leaves `buffer` alone.
    func apply(_ x: UnsafePointer<Float>, rows: Int, into y: UnsafeMutablePointer<Float>, accumulate: Bool = false,
               buffer: inout QuantizedRows) {
        if let int8Weight {
            bias.withUnsafeBufferPointer { b in
                let done = Int8GEMM.matmul(activations: x, rows: rows, weights: int8Weight, bias: b.baseAddress!,
                                           into: y, accumulate: accumulate, buffer: &buffer)
                precondition(done, "Int8GEMM: the default path always runs")
            }
            return
        }
        // Put the bias in every row (onto the residual when accumulating), then add the product
        // onto it (beta = 1): the residual sum costs no pass of its own.
        bias.withUnsafeBufferPointer { b in
            for r in 0..<rows {
                if accumulate {
                    Kernels.add(b.baseAddress!, into: y + r * outputSize, count: outputSize)
                } else {
                    (y + r * outputSize).update(from: b.baseAddress!, count: outputSize)
                }
            }
        }
        weight.withUnsafeBufferPointer { w in
            BLAS.gemm(.none, .transposed, m: rows, n: outputSize, k: inputSize,
                      a: x, lda: inputSize, b: w.baseAddress!, ldb: inputSize,
                      beta: 1, c: y, ldc: outputSize)
        }
    }
}

extension LayerNormWeights {
    /// Row-wise LayerNorm of `x: [R, H]` in place.
    func apply(_ x: UnsafeMutablePointer<Float>, rows: Int, epsilon: Float) {
        gamma.withUnsafeBufferPointer { g in
            beta.withUnsafeBufferPointer { b in
                Kernels.layerNorm(x, rows: rows, columns: g.count, gamma: g.baseAddress!, beta: b.baseAddress!, epsilon: epsilon)
            }
        }
    }
}
