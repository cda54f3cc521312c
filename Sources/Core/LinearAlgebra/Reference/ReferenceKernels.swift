import Foundation

/// Plain-loop versions of the fast kernels, written for obviousness, not speed.
///
/// Tests compare the fast paths against these; benchmarks time both.
package enum ReferenceKernels {
    /// `C[M, N] = A[M, K] · B[K, N]` by the textbook triple loop, accumulating in `Double`.
    package static func matmul(_ a: [Float], _ b: [Float], m: Int, n: Int, k: Int) -> [Float] {
        precondition(a.count == m * k && b.count == k * n, "matmul: shape mismatch")
        var c = [Float](repeating: 0, count: m * n)
        for i in 0..<m {
            for j in 0..<n {
                var s = 0.0
                for p in 0..<k { s += Double(a[i * k + p]) * Double(b[p * n + j]) }
                c[i * n + j] = Float(s)
            }
        }
        return c
    }

    /// `Σⱼ codes[j] · query[j]` for one row of unsigned 8-bit codes, by the plain loop.
    package static func int8Dot(_ codes: [UInt8], _ query: [Int8]) -> Int32 {
        precondition(codes.count == query.count, "int8Dot: length mismatch")
        var sum: Int32 = 0
        for j in codes.indices { sum += Int32(codes[j]) * Int32(query[j]) }
        return sum
    }

    /// The number of differing bits between two rows of 64-bit words, one bit at a time.
    package static func hamming(_ a: [UInt64], _ b: [UInt64]) -> UInt32 {
        precondition(a.count == b.count, "hamming: length mismatch")
        var count: UInt32 = 0
        for w in a.indices {
            var x = a[w] ^ b[w]
            while x != 0 {
                count += UInt32(x & 1)
                x >>= 1
            }
        }
        return count
    }

    /// Layer normalization of each row, in `Double`.
    package static func layerNorm(_ x: [Float], rows: Int, columns: Int, gamma: [Float], beta: [Float], epsilon: Float)
        -> [Float]
    {
        var out = x
        for i in 0..<rows {
            let row = (0..<columns).map { Double(x[i * columns + $0]) }
            let mean = row.reduce(0, +) / Double(columns)
            let variance = row.reduce(0) { $0 + ($1 - mean) * ($1 - mean) } / Double(columns)
            let scale = 1 / (variance + Double(epsilon)).squareRoot()
            for j in 0..<columns {
                out[i * columns + j] = Float((row[j] - mean) * scale * Double(gamma[j]) + Double(beta[j]))
            }
        }
        return out
    }

    /// GELU with libm's `erf`, in `Double`.
    package static func gelu(_ x: Float) -> Float {
        let d = Double(x)
        return Float(0.5 * d * (1 + Foundation.erf(d / 2.0.squareRoot())))
    }

    /// Softmax of each row after scaling, with libm's `exp`, in `Double`.
    package static func softmaxRows(_ x: [Float], rows: Int, columns: Int, scale: Float = 1) -> [Float] {
        var out = x
        for i in 0..<rows {
            let row = (0..<columns).map { Double(x[i * columns + $0]) * Double(scale) }
            let maximum = row.max() ?? 0
            let e = row.map { Foundation.exp($0 - maximum) }
            let total = e.reduce(0, +)
            for j in 0..<columns { out[i * columns + j] = Float(e[j] / total) }
        }
        return out
    }

    /// The dot product by a plain loop, in `Double`.
    package static func dot(_ x: [Float], _ y: [Float]) -> Double {
        precondition(x.count == y.count, "dot: length mismatch")
        var s = 0.0
        for i in x.indices { s += Double(x[i]) * Double(y[i]) }
        return s
    }
}
