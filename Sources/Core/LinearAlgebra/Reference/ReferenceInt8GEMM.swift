/// Plain-loop twins of `Int8GEMM`: what the quantizer and the products compute, one value at a time.
extension ReferenceKernels {
    /// One row quantized as `Int8GEMM.quantize` does it, in the same `Float` operations:
    /// `lo = min(0, min x)`, `hi = max(0, max x)`, `scale = (hi − lo) / 255`,
    /// `zero = clamp(round(−lo / scale), 0, 255)`, `code = clamp(round(x · (1 / scale)) + zero, 0, 255)`,
    /// rounding to nearest even; a row whose scale would be below the smallest normal float gets
    /// scale 1, zero 0 and codes 0. Values must be finite.
    package static func quantizedRow(_ x: [Float]) -> (codes: [UInt8], scale: Float, zeroPoint: Int32) {
        var lo: Float = 0
        var hi: Float = 0
        for v in x {
            lo = v < lo ? v : lo
            hi = v > hi ? v : hi
        }
        let scale = (hi - lo) / 255
        guard scale >= Float.leastNormalMagnitude else { return ([UInt8](repeating: 0, count: x.count), 1, 0) }
        let zero = Int32(max(0, min(255, (-lo / scale).rounded(.toNearestOrEven))))
        let inverse = 1 / scale
        let codes = x.map { v in UInt8(max(0, min(255, Int32((v * inverse).rounded(.toNearestOrEven)) + zero))) }
        return (codes, scale, zero)
    }

    /// `acc[i][j] = Σₖ a[i][k] · w[j][k]` for `a: [m, k]` (unsigned) and `w: [n, k]` (signed), by
    /// the triple loop in `Int32` (which traps on overflow).
    package static func int8Accumulators(_ a: [UInt8], _ w: [Int8], m: Int, n: Int, k: Int) -> [Int32] {
        precondition(a.count == m * k && w.count == n * k, "int8Accumulators: shape mismatch")
        var acc = [Int32](repeating: 0, count: m * n)
        for i in 0..<m {
            for j in 0..<n {
                var sum: Int32 = 0
                for p in 0..<k { sum += Int32(a[i * k + p]) * Int32(w[j * k + p]) }
                acc[i * n + j] = sum
            }
        }
        return acc
    }

    /// The float result of `Int8GEMM.multiply`, in its order of `Float` operations, from exact sums:
    /// `t = Float(acc − zᵢ · Σₖ w[j][k])`, `v = wScales[j] · t`, `v = v · aScales[i]`,
    /// `v = v + bias[j]` (when given), `v = v + residual[i][j]` (when given). `c: [m, n]`.
    package static func int8MatMul(
        _ a: [UInt8], scales aScales: [Float], zeroPoints: [Int32],
        _ w: [Int8], scales wScales: [Float], bias: [Float]?, residual: [Float]?, m: Int, n: Int, k: Int
    ) -> [Float] {
        let acc = int8Accumulators(a, w, m: m, n: n, k: k)
        var c = [Float](repeating: 0, count: m * n)
        for j in 0..<n {
            var columnSum: Int32 = 0
            for p in 0..<k { columnSum += Int32(w[j * k + p]) }
            for i in 0..<m {
                var v = wScales[j] * Float(acc[i * n + j] - zeroPoints[i] * columnSum)
                v = v * aScales[i]
                if let bias { v = v + bias[j] }
                if let residual { v = v + residual[i * n + j] }
                c[i * n + j] = v
            }
        }
        return c
    }

    /// The same product from the dequantized values in `Double`:
    /// `Σₖ aScales[i]·(a[i][k] − zᵢ) · wScales[j]·w[j][k] + bias[j]`: what the `Float` result
    /// approximates to within its rounding.
    package static func dequantizedMatMul(
        _ a: [UInt8], scales aScales: [Float], zeroPoints: [Int32],
        _ w: [Int8], scales wScales: [Float], bias: [Float]?, m: Int, n: Int, k: Int
    ) -> [Double] {
        var c = [Double](repeating: 0, count: m * n)
        for i in 0..<m {
            for j in 0..<n {
                var s = 0.0
                for p in 0..<k {
                    s +=
                        Double(aScales[i]) * Double(Int32(a[i * k + p]) - zeroPoints[i]) * Double(wScales[j])
                        * Double(w[j * k + p])
                }
                c[i * n + j] = s + (bias.map { Double($0[j]) } ?? 0)
            }
        }
        return c
    }
}
