/// The encoder's element-wise and row-wise kernels on contiguous row-major `Float` buffers.
///
/// Each kernel has a plain-loop twin in `Reference/ReferenceKernels.swift`; tests check they agree.
public enum Kernels {
    /// Row-wise layer normalization in place.
    ///
    /// `x: [rows, columns]`, `gamma, beta: [columns]`:
    /// `x[i, j] = (x[i, j] − mean_i) / sqrt(var_i + epsilon) · gamma[j] + beta[j]`.
    public static func layerNorm(
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
            while j < columns { mean += r[j]; j += 1 }
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
            while j < columns { let d = r[j] - mean; variance += d * d; j += 1 }
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
            while j < columns { r[j] = (r[j] - mean) * scale * gamma[j] + beta[j]; j += 1 }
        }
    }

    /// Exact (erf) GELU in place over `count` values.
    public static func gelu(_ x: UnsafeMutablePointer<Float>, count: Int) {
        var i = 0
        while i + 8 <= count {
            let v = UnsafeRawPointer(x + i).loadUnaligned(as: SIMD8<Float>.self)
            UnsafeMutableRawPointer(x + i).storeBytes(of: FastMath.gelu(v), as: SIMD8<Float>.self)
            i += 8
        }
        if i < count {
            var tail = SIMD8<Float>()
            for k in 0..<(count - i) { tail[k] = x[i + k] }
            let out = FastMath.gelu(tail)
            for k in 0..<(count - i) { x[i + k] = out[k] }
        }
    }

    /// Row-wise softmax in place: `x: [rows, columns]`, each row scaled by `scale` first.
    ///
    /// The row maximum is subtracted before exponentiating, so large scores do not overflow.
    public static func softmaxRows(_ x: UnsafeMutablePointer<Float>, rows: Int, columns: Int, scale: Float = 1) {
        precondition(rows >= 0 && columns > 0, "softmaxRows: bad shape")
        for row in 0..<rows {
            let r = x + row * columns
            var maximum = -Float.infinity
            for j in 0..<columns { maximum = max(maximum, r[j]) }
            let shift = SIMD8<Float>(repeating: maximum * scale)
            let s8 = SIMD8<Float>(repeating: scale)
            var total = SIMD8<Float>()
            var j = 0
            while j + 8 <= columns {
                let v = UnsafeRawPointer(r + j).loadUnaligned(as: SIMD8<Float>.self)
                let e = FastMath.exp(v * s8 - shift)
                total += e
                UnsafeMutableRawPointer(r + j).storeBytes(of: e, as: SIMD8<Float>.self)
                j += 8
            }
            var sum = total.sum()
            if j < columns {
                var tail = SIMD8<Float>(repeating: -Float.infinity)
                for k in 0..<(columns - j) { tail[k] = r[j + k] * scale - maximum * scale }
                let e = FastMath.exp(tail)
                for k in 0..<(columns - j) { r[j + k] = e[k]; sum += e[k] }
            }
            let inverse = 1 / sum
            for k in 0..<columns { r[k] *= inverse }
        }
    }

    /// Adds `bias: [columns]` to every row of `x: [rows, columns]`.
    public static func addBias(_ x: UnsafeMutablePointer<Float>, rows: Int, columns: Int, bias: UnsafePointer<Float>) {
        for row in 0..<rows {
            let r = x + row * columns
            for j in 0..<columns { r[j] += bias[j] }
        }
    }

    /// `x += y` element-wise over `count` values (residual connections).
    public static func add(_ y: UnsafePointer<Float>, into x: UnsafeMutablePointer<Float>, count: Int) {
        for i in 0..<count { x[i] += y[i] }
    }
}
