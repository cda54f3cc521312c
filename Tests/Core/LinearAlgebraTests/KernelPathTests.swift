import Foundation
import LinearAlgebra
import TestSupport
import XCTest

/// The portable C kernels, forced, and the vectorized ones this CPU runs: both against the
/// reference loops, so the path a CPU without AVX2 takes is tested on every machine.
final class KernelPathTests: XCTestCase {
    func checkAllKernels(_ label: String) {
        var rng = SeededGenerator(seed: 41)
        for count in [1, 7, 8, 33, 385] {
            var x = rng.floats(count, in: -6...6)
            let expected = x.map(ReferenceKernels.gelu)
            x.withUnsafeMutableBufferPointer { Kernels.gelu($0.baseAddress!, count: $0.count) }
            assertClose(x, expected, relative: 1e-5, absolute: 1e-6, "\(label) gelu \(count)")

            var e = rng.floats(count, in: -80...80)
            let expectedExp = e.map { Float(Foundation.exp(Double($0))) }
            e.withUnsafeMutableBufferPointer { Kernels.expFinite($0.baseAddress!, count: $0.count) }
            assertClose(e, expectedExp, relative: 1e-5, absolute: 0, "\(label) exp \(count)")
        }
        for columns in [1, 5, 8, 13, 180] {
            let rows = 3
            var x = rng.floats(rows * columns, in: -10...10)
            let expected = ReferenceKernels.softmaxRows(x, rows: rows, columns: columns, scale: 0.125)
            x.withUnsafeMutableBufferPointer {
                Kernels.softmaxRows($0.baseAddress!, rows: rows, columns: columns, scale: 0.125)
            }
            assertClose(x, expected, relative: 1e-5, absolute: 1e-7, "\(label) softmax \(columns)")

            let m = rng.floats(rows * columns)
            let q = rng.floats(columns)
            var dots = [Float](repeating: 0, count: rows)
            m.withUnsafeBufferPointer { pm in
                q.withUnsafeBufferPointer { pq in
                    dots.withUnsafeMutableBufferPointer {
                        Kernels.dotRows(
                            pm.baseAddress!, rows: rows, columns: columns, query: pq.baseAddress!, into: $0.baseAddress!
                        )
                    }
                }
            }
            let expectedDots = (0..<rows).map {
                Float(ReferenceKernels.dot(Array(m[($0 * columns)..<(($0 + 1) * columns)]), q))
            }
            assertClose(dots, expectedDots, relative: 1e-5, absolute: 1e-5, "\(label) dot rows \(columns)")

            let w = rng.floats(rows, in: 0...1)
            var sums = [Float](repeating: 0, count: columns)
            m.withUnsafeBufferPointer { pm in
                w.withUnsafeBufferPointer { pw in
                    sums.withUnsafeMutableBufferPointer {
                        Kernels.weightedColumnSum(
                            pm.baseAddress!, rows: rows, columns: columns, weights: pw.baseAddress, scale: 0.5,
                            into: $0.baseAddress!)
                    }
                }
            }
            let expectedSums = (0..<columns).map { j in
                Float(0.5 * (0..<rows).reduce(0.0) { $0 + Double(w[$1]) * Double(m[$1 * columns + j]) })
            }
            assertClose(sums, expectedSums, relative: 1e-5, absolute: 1e-6, "\(label) column sum \(columns)")
        }
    }

    func testGenericPathMatchesTheReferences() {
        Kernels.withGenericPath {
            XCTAssertFalse(Kernels.usesAVX2, "the portable path is forced")
            checkAllKernels("generic")
        }
        XCTAssertEqual(Kernels.usesAVX2, CPUInfo.current.hasAVX2FMA, "the best path is back")
    }

    func testBestPathMatchesTheReferences() {
        XCTAssertEqual(Kernels.usesAVX2, CPUInfo.current.hasAVX2FMA, "AVX2/FMA kernels exactly when the CPU has them")
        checkAllKernels(Kernels.usesAVX2 ? "avx2" : "generic")
    }
}
