import CKernels

/// The encoder's element-wise and row-wise kernels on contiguous row-major `Float` buffers.
///
/// Each kernel has a plain-loop twin in `Reference/ReferenceKernels.swift`; tests check they agree.
package enum Kernels {
    /// Row-wise layer normalization in place.
    ///
    /// `x: [rows, columns]`, `gamma, beta: [columns]`:
    /// `x[i, j] = (x[i, j] − mean_i) / sqrt(var_i + epsilon) · gamma[j] + beta[j]`.
    package static func layerNorm(
        _ x: UnsafeMutablePointer<Float>, rows: Int, columns: Int,
        gamma: UnsafePointer<Float>, beta: UnsafePointer<Float>, epsilon: Float
    ) {
        precondition(rows >= 0 && columns > 0, "layerNorm: bad shape")
        let inverseCount = 1 / Float(columns)
        for row in 0..<rows {
            let r = x + row * columns
            // Two passes in Float with 8 accumulators: mean first, then the centred variance,
            // which is what PyTorch computes and avoids the cancellation of E[x²] − E[x]².
            var sum = SIMD8<Float>()
            var j = 0
            while j + 8 <= columns {
                sum += UnsafeRawPointer(r + j).loadUnaligned(as: SIMD8<Float>.self)
                j += 8
            }
            var mean = sum.sum()
            while j < columns {
                mean += r[j]
                j += 1
            }
            mean *= inverseCount
            var squares = SIMD8<Float>()
            j = 0
            let m8 = SIMD8<Float>(repeating: mean)
            while j + 8 <= columns {
                let d = UnsafeRawPointer(r + j).loadUnaligned(as: SIMD8<Float>.self) - m8
                squares += d * d
                j += 8
            }
            var variance = squares.sum()
            while j < columns {
                let d = r[j] - mean
                variance += d * d
                j += 1
            }
            variance *= inverseCount
            let scale = 1 / (variance + epsilon).squareRoot()
            j = 0
            let s8 = SIMD8<Float>(repeating: scale)
            while j + 8 <= columns {
                let v = UnsafeRawPointer(r + j).loadUnaligned(as: SIMD8<Float>.self)
                let g = UnsafeRawPointer(gamma + j).loadUnaligned(as: SIMD8<Float>.self)
                let b = UnsafeRawPointer(beta + j).loadUnaligned(as: SIMD8<Float>.self)
                UnsafeMutableRawPointer(r + j).storeBytes(of: (v - m8) * s8 * g + b, as: SIMD8<Float>.self)
                j += 8
            }
            while j < columns {
                r[j] = (r[j] - mean) * scale * gamma[j] + beta[j]
                j += 1
            }
        }
    }

    /// Exact (erf) GELU in place over `count` values: `x · (1 + erf(x/√2)) / 2`.
    ///
    /// `erfc(a) = e^(−a²)·R(1/(1 + a/2))` with a degree-10 polynomial `R` fitted by this project;
    /// within 2e-6 relative of libm for x > −5 (see `FastMathTests`). NaN stays NaN.
    package static func gelu(_ x: UnsafeMutablePointer<Float>, count: Int) {
        precondition(count >= 0, "gelu: negative count")
        ce_gelu(x, count)
    }

    /// `e^x` in place for finite inputs ≤ 88 (inputs below −87.3 give about 1e-38): the
    /// vectorized exponential the softmax uses, about 2e-7 relative error.
    package static func expFinite(_ x: UnsafeMutablePointer<Float>, count: Int) {
        precondition(count >= 0, "expFinite: negative count")
        ce_exp_finite(x, count)
    }

    /// Row-wise softmax in place: `x: [rows, columns]`, each row scaled by `scale` first.
    ///
    /// The row maximum is subtracted before exponentiating, so large scores do not overflow.
    package static func softmaxRows(_ x: UnsafeMutablePointer<Float>, rows: Int, columns: Int, scale: Float = 1) {
        precondition(rows >= 0 && columns > 0, "softmaxRows: bad shape")
        ce_softmax_rows(x, rows, columns, scale)
    }

    /// `out[j] = scale · Σᵢ wᵢ · m[i, j]` over `m: [rows, columns]`; `weights` nil means all ones.
    /// The pooling fast path: one pass over the matrix, vectorized along the columns.
    package static func weightedColumnSum(
        _ m: UnsafePointer<Float>, rows: Int, columns: Int, weights: UnsafePointer<Float>?, scale: Float,
        into out: UnsafeMutablePointer<Float>
    ) {
        precondition(rows >= 0 && columns >= 0, "weightedColumnSum: bad shape")
        ce_weighted_column_sum(m, rows, columns, weights, scale, out)
    }

    /// `out[i] = m[i, :] · q` for `m: [rows, columns]`: the single-query similarity scan, one
    /// streaming pass over the matrix (16 accumulators per row, vectorized).
    package static func dotRows(
        _ m: UnsafePointer<Float>, rows: Int, columns: Int, query: UnsafePointer<Float>,
        into out: UnsafeMutablePointer<Float>
    ) {
        precondition(rows >= 0 && columns >= 0, "dotRows: bad shape")
        ce_dot_rows(m, rows, columns, query, out)
    }

    /// Whether the AVX2/FMA versions of the element-wise kernels are in use on this CPU.
    package static var usesAVX2: Bool { ce_uses_avx2() != 0 }

    /// `x += y` element-wise over `count` values (residual connections).
    package static func add(_ y: UnsafePointer<Float>, into x: UnsafeMutablePointer<Float>, count: Int) {
        for i in 0..<count { x[i] += y[i] }
    }
}
