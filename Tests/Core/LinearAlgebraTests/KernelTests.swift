import LinearAlgebra
import TestSupport
import XCTest

final class KernelTests: XCTestCase {
    func testGemmMatchesReferenceMatmulOnRandomShapes() {
        var rng = SeededGenerator(seed: 1)
        for (m, n, k) in [(1, 1, 1), (3, 5, 7), (17, 9, 33), (64, 48, 384)] {
            let a = rng.floats(m * k)
            let b = rng.floats(k * n)
            var c = [Float](repeating: 0, count: m * n)
            a.withUnsafeBufferPointer { pa in
                b.withUnsafeBufferPointer { pb in
                    c.withUnsafeMutableBufferPointer { pc in
                        BLAS.gemm(
                            .none, .none, m: m, n: n, k: k, a: pa.baseAddress!, lda: k,
                            b: pb.baseAddress!, ldb: n, c: pc.baseAddress!, ldc: n)
                    }
                }
            }
            assertClose(
                c, ReferenceKernels.matmul(a, b, m: m, n: n, k: k), relative: 1e-5, absolute: 1e-5, "\(m)x\(n)x\(k)")
        }
    }

    func testLayerNormMatchesReference() {
        var rng = SeededGenerator(seed: 2)
        for columns in [1, 7, 8, 384, 390] {
            let rows = 5
            var x = rng.floats(rows * columns, in: -4...4)
            let gamma = rng.floats(columns)
            let beta = rng.floats(columns)
            let expected = ReferenceKernels.layerNorm(
                x, rows: rows, columns: columns, gamma: gamma, beta: beta, epsilon: 1e-12)
            x.withUnsafeMutableBufferPointer { px in
                Kernels.layerNorm(
                    px.baseAddress!, rows: rows, columns: columns, gamma: gamma, beta: beta, epsilon: 1e-12)
            }
            assertClose(x, expected, relative: 1e-5, absolute: 1e-5, "columns \(columns)")
        }
    }

    func testSoftmaxRowsMatchesReferenceAndSumsToOne() {
        var rng = SeededGenerator(seed: 3)
        for columns in [1, 3, 8, 13, 180] {
            let rows = 4
            var x = rng.floats(rows * columns, in: -30...30)
            let expected = ReferenceKernels.softmaxRows(x, rows: rows, columns: columns, scale: 0.17)
            x.withUnsafeMutableBufferPointer {
                Kernels.softmaxRows($0.baseAddress!, rows: rows, columns: columns, scale: 0.17)
            }
            assertClose(x, expected, relative: 1e-5, absolute: 1e-7, "columns \(columns)")
            for r in 0..<rows {
                XCTAssertEqual(x[(r * columns)..<((r + 1) * columns)].reduce(0, +), 1, accuracy: 1e-5)
            }
        }
    }

    func testSoftmaxOfHugeScoresDoesNotOverflow() {
        var x: [Float] = [1e30, 1e30, -1e30]
        x.withUnsafeMutableBufferPointer { Kernels.softmaxRows($0.baseAddress!, rows: 1, columns: 3) }
        XCTAssertEqual(x[0], 0.5)
        XCTAssertEqual(x[1], 0.5)
        XCTAssertEqual(x[2], 0, accuracy: 1e-30)
    }

    func testGeluKernelMatchesReferenceIncludingTail() {
        var rng = SeededGenerator(seed: 4)
        var x = rng.floats(1003, in: -8...8)
        let expected = x.map(ReferenceKernels.gelu)
        x.withUnsafeMutableBufferPointer { Kernels.gelu($0.baseAddress!, count: $0.count) }
        assertClose(x, expected, relative: 2e-6, absolute: 2e-6)
    }

    func testVectorMathAgainstReference() {
        var rng = SeededGenerator(seed: 5)
        for _ in 0..<50 {
            let a = rng.floats(384)
            let b = rng.floats(384)
            XCTAssertEqual(Double(VectorMath.dot(a, b)), ReferenceVectorMath.dot(a, b), accuracy: 1e-4)
            XCTAssertEqual(
                Double(VectorMath.cosineSimilarity(a, b)), ReferenceVectorMath.cosineSimilarity(a, b), accuracy: 1e-5)
            XCTAssertEqual(Double(VectorMath.norm(VectorMath.normalized(a))), 1, accuracy: 1e-6)
            XCTAssertEqual(VectorMath.cosineDistance(a, b), 1 - VectorMath.cosineSimilarity(a, b))
        }
    }

    func testZeroVectorNormalizesToZeroAndHasZeroSimilarity() {
        let zero = [Float](repeating: 0, count: 4)
        XCTAssertEqual(VectorMath.normalized(zero), zero)
        XCTAssertEqual(VectorMath.cosineSimilarity(zero, [1, 2, 3, 4]), 0)
        XCTAssertEqual(VectorMath.cosineDistance(zero, zero), 1)
        XCTAssertEqual(VectorMath.normalized([3, 4]), [0.6, 0.8])
    }

    /// Normalizing twice gives the same floats as once (a store that indexes its own unit vectors
    /// again must not move their last bits), and nearly-unit vectors still get scaled.
    func testNormalizingIsIdempotent() {
        var rng = SeededGenerator(seed: 5)
        for dimension in [3, 384, 1000] {
            for _ in 0..<200 {
                let once = VectorMath.normalized(rng.floats(dimension, in: -2...2))
                XCTAssertEqual(VectorMath.normalized(once), once, "dimension \(dimension)")
            }
        }
        let long = VectorMath.normalized(rng.floats(384)).map { $0 * 1.0001 }
        XCTAssertNotEqual(VectorMath.normalized(long), long)
        XCTAssertEqual(Double(VectorMath.norm(VectorMath.normalized(long))), 1, accuracy: 1e-6)
    }

    func testCosineIsClampedToUnitInterval() {
        let a: [Float] = [0.1, 0.2, 0.3]
        XCTAssertLessThanOrEqual(VectorMath.cosineSimilarity(a, a), 1)
        XCTAssertGreaterThanOrEqual(VectorMath.cosineSimilarity(a, a.map { -$0 }), -1)
    }
}

final class DotRowsTests: XCTestCase {
    func testDotRowsMatchesReferenceIncludingTails() {
        var rng = SeededGenerator(seed: 8)
        for columns in [1, 15, 16, 17, 384, 385] {
            let rows = 7
            let m = rng.floats(rows * columns)
            let q = rng.floats(columns)
            var out = [Float](repeating: 0, count: rows)
            m.withUnsafeBufferPointer { pm in
                q.withUnsafeBufferPointer { pq in
                    out.withUnsafeMutableBufferPointer {
                        Kernels.dotRows(
                            pm.baseAddress!, rows: rows, columns: columns, query: pq.baseAddress!, into: $0.baseAddress!
                        )
                    }
                }
            }
            let expected = (0..<rows).map { r in ReferenceKernels.dot(Array(m[(r * columns)..<((r + 1) * columns)]), q)
            }
            assertClose(out, expected, relative: 1e-5, absolute: 1e-5, "columns \(columns)")
        }
    }
}
