import Foundation
import LinearAlgebra
import TestSupport
import XCTest

/// Activations in two 8-bit parts: the residual is exactly what the coarse codes leave out, the
/// two-part product stays within the bound the residual's scale sets (and far inside the one-part
/// error), and every path gives the same integers for both parts.
final class TwoPartBlockRowsTests: XCTestCase {
    /// Rows with a large value per block (what makes 8-bit codes coarse for the rest) and ordinary ones.
    func activations(rows: Int, columns: Int, using rng: inout SeededGenerator) -> [Float] {
        (0..<(rows * columns)).map { i in
            i % 37 == 0 ? rng.gaussian() * 40 : rng.gaussian()
        }
    }

    func testResidualIsWhatTheCoarseCodesLeaveOut() {
        var rng = SeededGenerator(seed: 15)
        let (t, k) = (5, 576)
        let x = activations(rows: t, columns: k, using: &rng)
        var parts = TwoPartBlockRows()
        XCTAssertTrue(parts.quantize(x, rows: t, columns: k))
        XCTAssertEqual(parts.rows, t)
        for r in 0..<t {
            let coarse = parts.coarse.codes(ofRow: r)
            let scales = parts.coarse.scales(ofRow: r)
            let fine = parts.residual.codes(ofRow: r)
            let fineScales = parts.residual.scales(ofRow: r)
            for b in 0..<(k / 32) {
                let block = (b * 32)..<(b * 32 + 32)
                let largest = block.map { abs(x[r * k + $0]) }.max()!
                XCTAssertEqual(scales[b], largest / 127, "row \(r) block \(b): the coarse part is BlockGEMM.quantize's")
                let residual = block.map { x[r * k + $0] - scales[b] * Float(coarse[$0]) }
                XCTAssertLessThanOrEqual(residual.map(abs).max()!, scales[b] / 2 * (1 + 1e-6))
                XCTAssertEqual(
                    fineScales[b], residual.map(abs).max()! / 127, accuracy: 1e-6 * scales[b], "row \(r) block \(b)")
                for c in block {
                    // What both parts together hold differs from x by at most half a residual step.
                    let held = scales[b] * Float(coarse[c]) + fineScales[b] * Float(fine[c])
                    XCTAssertLessThanOrEqual(
                        abs(held - x[r * k + c]), fineScales[b] / 2 + 1e-6 * abs(x[r * k + c]), "row \(r) element \(c)"
                    )
                }
            }
        }
    }

    func testTwoPartProductAgainstTheFloatProduct() throws {
        var rng = SeededGenerator(seed: 1536)
        let (t, k, out) = (7, 1536, 48)
        let x = activations(rows: t, columns: k, using: &rng)
        let weights = (0..<(out * k)).map { _ in rng.gaussian() * 0.05 }
        let bias = (0..<out).map { _ in rng.gaussian() }
        let w = try BlockQuantizedMatrix(weights: weights, outputSize: out, inputSize: k)
        // The product of the weights as stored with x in Double, and the bound on what two 8-bit
        // parts may miss: Σ_i |w_i| · d_r / 2 per output, plus float rounding.
        var parts = TwoPartBlockRows()
        XCTAssertTrue(parts.quantize(x, rows: t, columns: k))
        var exact = [Double](repeating: 0, count: t * out)
        var bound = exact
        for r in 0..<t {
            let fineScales = parts.residual.scales(ofRow: r)
            for j in 0..<out {
                var sum = Double(bias[j])
                var magnitude = 0.0
                var missing = 0.0
                for c in 0..<k {
                    let weight = w.value(row: j, column: c)
                    sum += weight * Double(x[r * k + c])
                    magnitude += abs(weight * Double(x[r * k + c]))
                    missing += abs(weight) * Double(fineScales[c / 32]) / 2
                }
                exact[r * out + j] = sum
                bound[r * out + j] = missing + 1e-5 * magnitude + 1e-6
            }
        }
        var firstPath: [Float]?
        for path in BlockGEMM.paths {
            var parts = TwoPartBlockRows()
            XCTAssertTrue(parts.quantize(x, rows: t, columns: k, path: path))
            var y = [Float](repeating: 0, count: t * out)
            XCTAssertTrue(BlockGEMM.multiply(parts, w, bias: bias, into: &y, path: path))
            for i in 0..<(t * out) {
                XCTAssertLessThanOrEqual(abs(Double(y[i]) - exact[i]), bound[i], "\(path), output \(i)")
            }
            // One part, for scale: the two-part error is a small fraction of it.
            var one = BlockQuantizedRows()
            var y1 = [Float](repeating: 0, count: t * out)
            XCTAssertTrue(
                BlockGEMM.matmul(activations: x, rows: t, weights: w, bias: bias, into: &y1, buffer: &one, path: path))
            let error2 = zip(y, exact).map { (Double($0) - $1) * (Double($0) - $1) }.reduce(0, +).squareRoot()
            let error1 = zip(y1, exact).map { (Double($0) - $1) * (Double($0) - $1) }.reduce(0, +).squareRoot()
            print("two-part vs one-part error (\(t)×\(out)×\(k), \(path)): \(error2) vs \(error1)")
            XCTAssertLessThan(error2, error1 / 50, "\(path)")
            if let firstPath {
                // Same integers on every path; the float sums may differ by their order only.
                for i in 0..<(t * out) {
                    XCTAssertEqual(y[i], firstPath[i], accuracy: 1e-5 * Float(bound[i] / 1e-6 + 1), "\(path), \(i)")
                }
            } else {
                firstPath = y
            }
        }
    }

    func testAccumulatesAndSplitsColumns() throws {
        var rng = SeededGenerator(seed: 96)
        let (t, k, out) = (3, 96, 40)
        let x = activations(rows: t, columns: k, using: &rng)
        let weights = (0..<(out * k)).map { _ in rng.gaussian() * 0.1 }
        let w = try BlockQuantizedMatrix(weights: weights, outputSize: out, inputSize: k)
        var parts = TwoPartBlockRows()
        XCTAssertTrue(parts.quantize(x, rows: t, columns: k))
        var whole = [Float](repeating: 0, count: t * out)
        XCTAssertTrue(BlockGEMM.multiply(parts, w, bias: nil, into: &whole))
        // Two column ranges, accumulating onto a residual stream of ones.
        var split = [Float](repeating: 1, count: t * out)
        XCTAssertTrue(BlockGEMM.multiply(parts, w, columns: 0..<17, bias: nil, into: &split, accumulate: true))
        XCTAssertTrue(BlockGEMM.multiply(parts, w, columns: 17..<out, bias: nil, into: &split, accumulate: true))
        for i in 0..<(t * out) { XCTAssertEqual(split[i], whole[i] + 1, accuracy: 1e-4 * max(1, abs(whole[i]))) }
    }

    func testEmptyRows() {
        var parts = TwoPartBlockRows()
        XCTAssertTrue(parts.quantize([Float](), rows: 0, columns: 64))
        XCTAssertEqual(parts.rows, 0)
    }
}
