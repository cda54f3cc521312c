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

    // MARK: One pass over the weights for both parts, per path (skipped only where the CPU lacks it)

    func testOnePassGenericPath() throws { try checkOnePass(.generic) }
    func testOnePassAVX2Path() throws { try checkOnePass(.avx2) }
    func testOnePassAVX512VNNIPath() throws { try checkOnePass(.avx512VNNI) }
    func testOnePassAVXVNNIPath() throws { try checkOnePass(.avxVNNI) }
    func testOnePassAVX512VNNI256Path() throws { try checkOnePass(.avx512VNNI256) }

    /// Codes uniform over every byte, float16 scales of either sign and (optionally) minimums.
    func randomMatrix(out: Int, in k: Int, bits: Int, zeroPoint: Int, mins: Bool, using rng: inout SeededGenerator)
        -> BlockQuantizedMatrix
    {
        let blocks = out * k / BlockQuantizedMatrix.blockSize
        let half = { (rng: inout SeededGenerator) in
            HalfFloat.half(Float.random(in: -0.1...0.1, using: &rng))
        }
        return BlockQuantizedMatrix(
            outputSize: out, inputSize: k, bits: bits, zeroPoint: zeroPoint,
            codes: (0..<(out * k * bits / 8)).map { _ in UInt8.random(in: 0...255, using: &rng) },
            scales: (0..<blocks).map { _ in half(&rng) }, mins: mins ? (0..<blocks).map { _ in half(&rng) } : nil)
    }

    /// The one-pass product equals, bit for bit, the coarse product followed by the residual
    /// product accumulating, on `path`: T = 1 (the streaming kernel: whole steps of 8 and 16
    /// blocks and the cross-row tails) and T > 1 (tiles; odd T leaves a panel half empty), both
    /// code widths, minimums or not, every mix of bias and accumulation, all columns and odd
    /// ranges (groups of fewer than 4 rows at either edge), and SmolLM2's shapes.
    func checkOnePass(_ path: BlockGEMM.Path) throws {
        guard BlockGEMM.paths.contains(path) else {
            throw XCTSkip("\(path) does not run on \(CPUInfo.current.modelName)")
        }
        var rng = SeededGenerator(seed: 2600 + UInt64(path.rawValue))
        var cases: [(t: Int, k: Int, out: Int, bits: Int, columns: Range<Int>)] = []
        for blocks in [1, 2, 3, 7, 8, 9, 15, 16, 17, 18, 33, 48] {
            for t in [1, 2, 3, 5, 9] {
                let out = [1, 5, 6, 9, 19, 33][(blocks + t) % 6]
                let lower = (blocks + t) % 3 == 0 ? 0 : Int.random(in: 0..<out, using: &rng)
                let upper = Int.random(in: (lower + 1)...out, using: &rng)
                cases.append((t, 32 * blocks, out, blocks % 2 == 0 ? 4 : 8, lower..<upper))
            }
        }
        cases += [(1, 576, 67, 4, 0..<67), (1, 1536, 35, 4, 3..<34), (1, 576, 41, 8, 1..<40), (4, 576, 37, 4, 0..<37)]
        for (index, (t, k, out, bits, columns)) in cases.enumerated() {
            let zeroPoint = [0, 8, 32, 128][index % 4]
            let w = randomMatrix(out: out, in: k, bits: bits, zeroPoint: zeroPoint, mins: index % 3 != 1, using: &rng)
            let x = activations(rows: t, columns: k, using: &rng)
            var parts = TwoPartBlockRows()
            XCTAssertTrue(parts.quantize(x, rows: t, columns: k, path: path))
            let bias = (0..<out).map { _ in rng.gaussian() }
            let start = (0..<(t * out)).map { _ in rng.gaussian() * 4 }
            for (withBias, accumulate) in [(false, false), (true, false), (true, true), (false, true)] {
                var twice = start
                var once = start
                bias.withUnsafeBufferPointer { biasBuffer in
                    let b = withBias ? biasBuffer.baseAddress : nil
                    XCTAssertTrue(
                        BlockGEMM.multiply(
                            parts.coarse, w, columns: columns, bias: b, into: &twice, accumulate: accumulate, path: path
                        ))
                    XCTAssertTrue(
                        BlockGEMM.multiply(
                            parts.residual, w, columns: columns, bias: nil, into: &twice, accumulate: true, path: path))
                    XCTAssertTrue(
                        BlockGEMM.multiply(
                            parts, w, columns: columns, bias: b, into: &once, accumulate: accumulate, path: path))
                }
                let label =
                    "\(path) T \(t) \(out)×\(k) \(bits)-bit z \(zeroPoint) columns \(columns) bias \(withBias) accumulate \(accumulate)"
                if let i = (0..<(t * out)).first(where: { once[$0].bitPattern != twice[$0].bitPattern }) {
                    let largest = zip(once, twice).map { abs($0 - $1) }.max() ?? 0
                    XCTFail("\(label): first difference at \(i): \(once[i]) vs \(twice[i]); largest \(largest)")
                    return
                }
            }
        }
    }

    func testOnePassOnUnavailablePathsIsRefused() {
        var parts = TwoPartBlockRows()
        XCTAssertTrue(parts.quantize([Float](repeating: 1, count: 32), rows: 1, columns: 32))
        let w = BlockQuantizedMatrix(
            outputSize: 1, inputSize: 32, bits: 8, zeroPoint: 0, codes: [UInt8](repeating: 1, count: 32),
            scales: [0x3C00], mins: nil)
        for path in BlockGEMM.Path.allCases where !BlockGEMM.paths.contains(path) {
            var out: [Float] = [7]
            XCTAssertFalse(BlockGEMM.multiply(parts, w, bias: nil, into: &out, path: path), "\(path)")
            XCTAssertEqual(out, [7])
        }
    }

    func testEmptyRows() {
        var parts = TwoPartBlockRows()
        XCTAssertTrue(parts.quantize([Float](), rows: 0, columns: 64))
        XCTAssertEqual(parts.rows, 0)
    }
}
