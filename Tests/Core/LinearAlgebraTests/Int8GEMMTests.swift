import Dispatch
import Foundation
import LinearAlgebra
import Synchronization
import TestSupport
import XCTest

/// The int8 products on every path this CPU runs, against plain loops: exact integers and
/// bit-identical floats on odd shapes and at the extremes that expose 16-bit saturation; the
/// quantizers; and the accuracy of the whole scheme against float32 sgemm.
final class Int8GEMMTests: XCTestCase {
    // MARK: One test per path (skipped only where the CPU lacks it)

    func testGenericPath() throws { try checkPath(.generic) }
    func testAVX2Path() throws { try checkPath(.avx2) }
    func testAVX512VNNIPath() throws { try checkPath(.avx512VNNI) }
    func testAVXVNNIPath() throws { try checkPath(.avxVNNI) }
    func testAVX512VNNI256Path() throws { try checkPath(.avx512VNNI256) }

    func testPathsFollowTheCPU() {
        let cpu = CPUInfo.current
        let paths = Int8GEMM.paths
        XCTAssertTrue(paths.contains(.generic))
        #if arch(x86_64)
            XCTAssertEqual(paths.contains(.avx2), cpu.features.contains(.avx2), "AVX2 exactly when the CPU has it")
            let vnni = cpu.features.isSuperset(of: [.avx512f, .avx512bw, .avx512vnni])
            XCTAssertEqual(paths.contains(.avx512VNNI), vnni, "AVX-512 VNNI exactly when the CPU has it")
            XCTAssertEqual(paths.contains(.avx512VNNI256), vnni && cpu.features.contains(.avx512vl))
            // The default is the fastest: 512-bit VNNI, else AVX-VNNI, else AVX2.
            let fastest: Int8GEMM.Path =
                vnni ? .avx512VNNI : paths.contains(.avxVNNI) ? .avxVNNI : paths.contains(.avx2) ? .avx2 : .generic
            XCTAssertEqual(Int8GEMM.defaultPath, fastest)
        #endif
        print(
            "Int8GEMM paths on \(cpu.modelName): \(paths.map(\.description).joined(separator: ", ")); default \(Int8GEMM.defaultPath)"
        )
    }

    func testUnavailablePathsAreRefused() {
        var rows = QuantizedRows()
        let w = QuantizedMatrix(codes: [1, 2], scales: [1], outputSize: 1, inputSize: 2)
        let x: [Float] = [1, 2]
        XCTAssertTrue(Int8GEMM.quantize(x, rows: 1, columns: 2, into: &rows))
        for path in Int8GEMM.Path.allCases where !Int8GEMM.paths.contains(path) {
            var out: [Float] = [7]
            var acc: [Int32] = [7]
            XCTAssertFalse(Int8GEMM.multiply(rows, w, bias: nil, into: &out, path: path), "\(path)")
            XCTAssertFalse(Int8GEMM.accumulators(rows, w, into: &acc, path: path), "\(path)")
            XCTAssertEqual(out, [7])
            XCTAssertEqual(acc, [7])
        }
    }

    func testForcedPathBecomesTheDefault() {
        let fastest = Int8GEMM.defaultPath
        for path in Int8GEMM.paths {
            Int8GEMM.withPath(path) { XCTAssertEqual(Int8GEMM.defaultPath, path) }
            XCTAssertEqual(Int8GEMM.defaultPath, fastest, "the fastest path is back after \(path)")
        }
    }

    // MARK: What every path must compute

    /// Random codes: the activations `[m, k]` and weights `[n, k]`.
    func randomCodes(m: Int, n: Int, k: Int, using rng: inout SeededGenerator) -> ([UInt8], [Int8]) {
        let a = (0..<(m * k)).map { _ in UInt8.random(in: 0...255, using: &rng) }
        let w = (0..<(n * k)).map { _ in Int8.random(in: -128...127, using: &rng) }
        return (a, w)
    }

    func checkPath(_ path: Int8GEMM.Path) throws {
        guard Int8GEMM.paths.contains(path) else {
            throw XCTSkip("\(path) does not run on \(CPUInfo.current.modelName)")
        }
        var rng = SeededGenerator(seed: 2200 + UInt64(path.rawValue))
        // Odd shapes: 1, 3 and 17 rows (and a full chunk and more); depths around the 4-byte
        // groups and the 32- and 64-byte vectors; column counts around the 16-wide panels.
        for m in [1, 3, 17, 53] {
            for n in [1, 7, 16, 17, 33, 47] {
                for k in [1, 2, 3, 5, 31, 33, 63, 65, 100, 129] {
                    let (a, w) = randomCodes(m: m, n: n, k: k, using: &rng)
                    try checkProduct(a, w, m: m, n: n, k: k, path: path, using: &rng)
                }
            }
        }
        try checkExtremes(path)
        try checkQuantizer(path)
        try checkStridesAndAccumulation(path)
    }

    /// Exact sums and bit-identical floats (with and without bias and residual) against the references.
    func checkProduct(
        _ a: [UInt8], _ w: [Int8], m: Int, n: Int, k: Int, path: Int8GEMM.Path,
        using rng: inout SeededGenerator, file: StaticString = #filePath, line: UInt = #line
    ) throws {
        let label = "\(path) \(m)×\(n)×\(k)"
        // Scales and zero points of realistic size, so that the float epilogue rounds.
        let aScales = (0..<m).map { _ in Float.random(in: 1e-3...1e-1, using: &rng) }
        let zeros = (0..<m).map { _ in Int32.random(in: 0...255, using: &rng) }
        let quantized = QuantizedRows(codes: a, scales: aScales, zeroPoints: zeros, columns: k)
        let weightScales = (0..<n).map { _ in Float.random(in: 1e-4...1e-2, using: &rng) }
        let matrix = QuantizedMatrix(codes: w, scales: weightScales, outputSize: n, inputSize: k)
        let expected = ReferenceKernels.int8Accumulators(a, w, m: m, n: n, k: k)
        var acc = [Int32](repeating: .min, count: m * n)
        XCTAssertTrue(Int8GEMM.accumulators(quantized, matrix, into: &acc, path: path), label, file: file, line: line)
        if let i = firstDifference(acc, expected) {
            XCTFail("\(label): sums differ first at \(i): \(acc[i]) vs \(expected[i])", file: file, line: line)
            return
        }
        let bias = (0..<n).map { _ in Float.random(in: -1...1, using: &rng) }
        let residual = (0..<(m * n)).map { _ in Float.random(in: -4...4, using: &rng) }
        for (withBias, accumulate) in [(false, false), (true, false), (true, true)] {
            let reference = ReferenceKernels.int8MatMul(
                a, scales: aScales, zeroPoints: zeros, w, scales: weightScales,
                bias: withBias ? bias : nil, residual: accumulate ? residual : nil, m: m, n: n, k: k)
            var c = accumulate ? residual : [Float](repeating: .nan, count: m * n)
            let ran = bias.withUnsafeBufferPointer { b in
                Int8GEMM.multiply(
                    quantized, matrix, bias: withBias ? b.baseAddress : nil, into: &c, accumulate: accumulate,
                    path: path)
            }
            XCTAssertTrue(ran, label, file: file, line: line)
            if let i = firstDifference(c.map(\.bitPattern), reference.map(\.bitPattern)) {
                XCTFail(
                    "\(label) bias \(withBias) accumulate \(accumulate): floats differ first at \(i): \(c[i]) vs \(reference[i]); largest difference \(largestDifference(c, reference).difference)",
                    file: file, line: line)
                return
            }
        }
    }

    /// The values that break a 16-bit pair sum (255 · 127 + 255 · 127 = 64,770; 255 · −128 · 2),
    /// at the encoder's largest depth too.
    func checkExtremes(_ path: Int8GEMM.Path) throws {
        var rng = SeededGenerator(seed: 77)
        for (m, n, k) in [(1, 1, 4), (3, 17, 67), (17, 33, 384), (3, 17, 1536)] {
            let allHigh = [UInt8](repeating: 255, count: m * k)
            for value in [Int8(-128), -127, 127, 0] {
                let w = [Int8](repeating: value, count: n * k)
                try checkSums(allHigh, w, m: m, n: n, k: k, path: path)
            }
            // Mixed extremes: every activation 0 or 255, every weight −128, −127, 0 or 127.
            let a = (0..<(m * k)).map { _ in Bool.random(using: &rng) ? UInt8(255) : 0 }
            let w = (0..<(n * k)).map { _ in [Int8(-128), -127, 0, 127].randomElement(using: &rng)! }
            try checkSums(a, w, m: m, n: n, k: k, path: path)
            try checkProduct(a, w, m: m, n: n, k: k, path: path, using: &rng)
        }
        // The exact value at the largest depth: 255 · −128 · 1536.
        let rows = QuantizedRows(
            codes: [UInt8](repeating: 255, count: 1536), scales: [1], zeroPoints: [0], columns: 1536)
        var acc: [Int32] = [0]
        let w = QuantizedMatrix(
            codes: [Int8](repeating: -128, count: 1536), scales: [1], outputSize: 1, inputSize: 1536)
        XCTAssertTrue(Int8GEMM.accumulators(rows, w, into: &acc, path: path))
        XCTAssertEqual(acc, [-50_135_040], "\(path)")
    }

    /// Exact sums only (scales 1, zero points 0).
    func checkSums(_ a: [UInt8], _ w: [Int8], m: Int, n: Int, k: Int, path: Int8GEMM.Path) throws {
        let rows = QuantizedRows(
            codes: a, scales: [Float](repeating: 1, count: m), zeroPoints: [Int32](repeating: 0, count: m), columns: k)
        let expected = ReferenceKernels.int8Accumulators(a, w, m: m, n: n, k: k)
        let matrix = QuantizedMatrix(codes: w, scales: [Float](repeating: 1, count: n), outputSize: n, inputSize: k)
        var acc = [Int32](repeating: .min, count: m * n)
        XCTAssertTrue(Int8GEMM.accumulators(rows, matrix, into: &acc, path: path))
        if let i = firstDifference(acc, expected) {
            XCTFail("\(path) \(m)×\(n)×\(k) extremes: sums differ first at \(i): \(acc[i]) vs \(expected[i])")
        }
    }

    /// The path's quantizer gives the reference's bytes, scales and zero points, padding zeroed.
    func checkQuantizer(_ path: Int8GEMM.Path) throws {
        var rng = SeededGenerator(seed: 91)
        for k in [1, 3, 7, 8, 31, 32, 33, 100, 384, 1537] {
            var x = [Float]()
            var kinds = [String]()
            func add(_ row: [Float], _ kind: String) {
                x += row
                kinds.append(kind)
            }
            add((0..<k).map { _ in rng.gaussian() }, "gaussian")
            add((0..<k).map { _ in abs(rng.gaussian()) }, "positive")
            add((0..<k).map { _ in -abs(rng.gaussian()) - 1 }, "negative")
            add([Float](repeating: 0, count: k), "zeros")
            add([Float](repeating: Float.leastNormalMagnitude / 4, count: k), "subnormal")
            add((0..<k).map { j in j % 97 == 5 ? 40 : rng.gaussian() * 0.1 }, "outliers")
            add((0..<k).map { _ in max(-0.17, rng.gaussian()) }, "GELU-like")
            let m = kinds.count
            // Stale bytes in the buffer must not survive: the padding is written each time.
            let stride = (k + 3) / 4 * 4
            var rows = QuantizedRows(
                codes: [UInt8](repeating: 0xAB, count: m * stride), scales: [Float](repeating: 1, count: m),
                zeroPoints: [Int32](repeating: 0, count: m), columns: stride)
            XCTAssertTrue(Int8GEMM.quantize(x, rows: m, columns: k, into: &rows, path: path))
            for i in 0..<m {
                let expected = ReferenceKernels.quantizedRow(Array(x[(i * k)..<((i + 1) * k)]))
                XCTAssertEqual(rows.codes(ofRow: i), expected.codes, "\(path) quantize \(kinds[i]) k \(k)")
                XCTAssertEqual(rows.scales[i].bitPattern, expected.scale.bitPattern, "\(path) scale \(kinds[i]) k \(k)")
                XCTAssertEqual(rows.zeroPoints[i], expected.zeroPoint, "\(path) zero point \(kinds[i]) k \(k)")
                let padding = rows.codes[(i * rows.stride + k)..<((i + 1) * rows.stride)]
                XCTAssertTrue(padding.allSatisfy { $0 == 0 }, "\(path) padding \(kinds[i]) k \(k)")
            }
            // Each value within half a step of its code; the row's extremes within a step (the zero
            // point's rounding can push one of them one code past 0 or 255, where it is clamped).
            for i in 0..<m where kinds[i] != "subnormal" {
                let row = x[(i * k)..<((i + 1) * k)]
                let (lo, hi) = (min(0, row.min()!), max(0, row.max()!))
                let s = Double(rows.scales[i])
                let z = Double(rows.zeroPoints[i])
                for (j, value) in row.enumerated() {
                    let back = s * (Double(rows.codes[i * rows.stride + j]) - z)
                    let allowed = value == lo || value == hi ? 1.0001 * s : 0.5001 * s
                    XCTAssertLessThanOrEqual(abs(back - Double(value)), allowed, "\(kinds[i]) k \(k) at \(j)")
                }
            }
        }
    }

    /// Row strides of the activations and the output, and an output's padding left alone.
    func checkStridesAndAccumulation(_ path: Int8GEMM.Path) throws {
        var rng = SeededGenerator(seed: 5)
        let (m, n, k, lda, ldc) = (19, 21, 45, 50, 24)
        let x = (0..<(m * lda)).map { _ in rng.gaussian() }
        let weights = (0..<(n * k)).map { _ in rng.gaussian() * 0.05 }
        let matrix = try QuantizedMatrix(weights: weights, outputSize: n, inputSize: k)
        let bias = (0..<n).map { _ in rng.gaussian() }
        var y = [Float](repeating: 9, count: m * ldc)
        var buffer = QuantizedRows()
        let ran = bias.withUnsafeBufferPointer { b in
            Int8GEMM.matmul(
                activations: x, rows: m, lda: lda, weights: matrix, bias: b.baseAddress, into: &y, ldc: ldc,
                accumulate: true, buffer: &buffer, path: path)
        }
        XCTAssertTrue(ran)
        // The reference from the same quantized values.
        let dense = (0..<m).flatMap { i in x[(i * lda)..<(i * lda + k)] }
        let codes = (0..<m).flatMap { buffer.codes(ofRow: $0) }
        for i in 0..<m {
            XCTAssertEqual(
                ReferenceKernels.quantizedRow(Array(dense[(i * k)..<((i + 1) * k)])).codes, buffer.codes(ofRow: i))
        }
        let wCodes = (0..<n).flatMap { j in QuantizedMatrix.quantizedChannel(weights[(j * k)..<((j + 1) * k)]).values }
        let expected = ReferenceKernels.int8MatMul(
            codes, scales: Array(buffer.scales.prefix(m)), zeroPoints: Array(buffer.zeroPoints.prefix(m)),
            wCodes, scales: matrix.scales, bias: bias, residual: [Float](repeating: 9, count: m * n), m: m, n: n, k: k)
        for i in 0..<m {
            let row = Array(y[(i * ldc)..<(i * ldc + n)])
            let want = Array(expected[(i * n)..<((i + 1) * n)])
            XCTAssertEqual(row.map(\.bitPattern), want.map(\.bitPattern), "\(path) strided row \(i)")
            XCTAssertEqual(
                Array(y[(i * ldc + n)..<((i + 1) * ldc)]), [Float](repeating: 9, count: ldc - n),
                "\(path) padding of row \(i)")
        }
    }

    // MARK: Shapes with nothing to do

    func testEmptyShapes() throws {
        var buffer = QuantizedRows()
        let x: [Float] = [1, 2, 3]
        let w = try QuantizedMatrix(weights: [Float](repeating: 0.5, count: 6), outputSize: 2, inputSize: 3)
        var y: [Float] = [4, 4]
        for path in Int8GEMM.paths {
            XCTAssertTrue(
                Int8GEMM.matmul(activations: x, rows: 0, weights: w, bias: nil, into: &y, buffer: &buffer, path: path))
            XCTAssertEqual(y, [4, 4], "\(path): no rows, nothing written")
        }
        let none = try QuantizedMatrix(weights: [], outputSize: 0, inputSize: 3)
        XCTAssertTrue(Int8GEMM.matmul(activations: x, rows: 1, weights: none, bias: nil, into: &y, buffer: &buffer))
        XCTAssertEqual(y, [4, 4], "no columns, nothing written")
        // Depth 0: the product is the bias.
        let flat = QuantizedMatrix(codes: [], scales: [2, 3], outputSize: 2, inputSize: 0)
        let bias: [Float] = [0.5, -0.5]
        for path in Int8GEMM.paths {
            y = [4, 4]
            XCTAssertTrue(
                Int8GEMM.matmul(
                    activations: x, rows: 1, weights: flat, bias: bias, into: &y, buffer: &buffer, path: path))
            XCTAssertEqual(y, bias, "\(path): depth 0")
        }
    }

    // MARK: Threads

    /// One matrix shared by several threads, each with its own activation buffer: the same bits
    /// as one thread alone (the packed weights are only read).
    func testOneMatrixFromSeveralThreads() throws {
        var rng = SeededGenerator(seed: 8)
        let (m, n, k) = (9, 40, 70)
        let matrix = try QuantizedMatrix(
            weights: (0..<(n * k)).map { _ in rng.gaussian() * 0.05 }, outputSize: n, inputSize: k)
        let x = (0..<(m * k)).map { _ in rng.gaussian() }
        @Sendable func product() -> [Float] {
            var y = [Float](repeating: 0, count: m * n)
            var buffer = QuantizedRows()
            Int8GEMM.matmul(activations: x, rows: m, weights: matrix, bias: nil, into: &y, buffer: &buffer)
            return y
        }
        let alone = product()
        let results = Mutex<[[Float]]>([])
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            let y = product()
            results.withOrderedLock { $0.append(y) }
        }
        let all = results.withOrderedLock { $0 }
        XCTAssertEqual(all.count, 8)
        for y in all { XCTAssertEqual(y.map(\.bitPattern), alone.map(\.bitPattern)) }
    }

    // MARK: Weights

    func testWeightQuantizationPerOutputChannel() throws {
        var rng = SeededGenerator(seed: 3)
        let (n, k) = (5, 37)
        var weights = (0..<(n * k)).map { _ in rng.gaussian() * 0.05 }
        for p in 0..<k { weights[2 * k + p] = 0 }  // a zero channel
        weights[4 * k + 3] = -2  // a channel with one large weight
        let matrix = try QuantizedMatrix(weights: weights, outputSize: n, inputSize: k)
        XCTAssertEqual(matrix.scales[2], 1, "a zero channel keeps scale 1")
        for j in 0..<n {
            let channel = weights[(j * k)..<((j + 1) * k)]
            let (codes, scale) = QuantizedMatrix.quantizedChannel(channel)
            XCTAssertEqual(scale, matrix.scales[j])
            XCTAssertEqual(matrix.columnSums[j], codes.reduce(Int32(0)) { $0 + Int32($1) }, "column sum \(j)")
            XCTAssertTrue(codes.allSatisfy { $0 >= -127 }, "symmetric: −128 is never used")
            if j != 2 {
                XCTAssertEqual(codes.map { abs(Int($0)) }.max(), 127, "the largest weight of channel \(j) maps to ±127")
            }
            for (p, w) in channel.enumerated() {
                XCTAssertLessThanOrEqual(
                    abs(Double(w) - Double(scale) * Double(codes[p])), 0.5 * Double(scale) * 1.0001,
                    "channel \(j) at \(p)")
            }
        }
        XCTAssertEqual(
            QuantizedMatrix.quantizedChannel(channelOf: [-127, 63.5, 62.5, 31.75]), [-127, 64, 62, 32],
            "scale 1, rounding to nearest even")
        XCTAssertEqual(matrix.byteCount, 1 * 40 * 16 + 8 * n, "one panel of 16 columns × 40 depths, scales and sums")

        weights[3 * k + 7] = .nan
        XCTAssertThrowsError(try QuantizedMatrix(weights: weights, outputSize: n, inputSize: k)) { error in
            XCTAssertEqual(error as? QuantizedMatrix.InvalidWeight, QuantizedMatrix.InvalidWeight(row: 3, column: 7))
        }
        weights[3 * k + 7] = -.infinity
        XCTAssertThrowsError(try QuantizedMatrix(weights: weights, outputSize: n, inputSize: k))
    }

    // MARK: Accuracy of the scheme against float32

    /// Quantized products against sgemm on data shaped like the encoder's: weights ~ N(0, 0.05),
    /// activations ~ N(0, 1) with outliers (a few channels ×20, as BERT's hidden states have).
    /// The relative error must stay within 1.25× what independent rounding errors predict from the
    /// actual steps (√(Σᵢ stepᵢ²/12 · Σ w² + Σ a² · Σⱼ sⱼ²/12) / ‖y‖), and under a fixed bound;
    /// and the float result must match the exact quantized product (in `Double`) to float rounding.
    func testAccuracyAgainstFloatSGEMM() throws {
        var rng = SeededGenerator(seed: 384)
        let (m, n, k) = (48, 256, 384)
        let weights = (0..<(n * k)).map { _ in rng.gaussian() * 0.05 }
        let bias = (0..<n).map { _ in rng.gaussian() * 0.02 }
        let matrix = try QuantizedMatrix(weights: weights, outputSize: n, inputSize: k)
        let outlierChannels: Set = [7, 101, 300]
        for (label, outliers, bound) in [("gaussian", false, 0.015), ("with outliers", true, 0.035)] {
            let x = (0..<(m * k)).map { index in
                rng.gaussian() * (outliers && outlierChannels.contains(index % k) ? 20 : 1)
            }
            var exact = [Float](repeating: 0, count: m * n)
            for i in 0..<m { for j in 0..<n { exact[i * n + j] = bias[j] } }
            BLAS.gemm(
                .none, .transposed, m: m, n: n, k: k, a: x, lda: k, b: weights, ldb: k, beta: 1, c: &exact, ldc: n)
            var y = [Float](repeating: 0, count: m * n)
            var buffer = QuantizedRows()
            XCTAssertTrue(
                Int8GEMM.matmul(activations: x, rows: m, weights: matrix, bias: bias, into: &y, buffer: &buffer))

            var errorSquares = 0.0
            var normSquares = 0.0
            for i in y.indices {
                errorSquares += (Double(y[i]) - Double(exact[i])) * (Double(y[i]) - Double(exact[i]))
                normSquares += Double(exact[i]) * Double(exact[i])
            }
            let relative = (errorSquares / normSquares).squareRoot()
            let weightSquares = weights.reduce(0.0) { $0 + Double($1) * Double($1) }
            let activationSquares = x.reduce(0.0) { $0 + Double($1) * Double($1) }
            let stepTerm =
                (0..<m).reduce(0.0) { $0 + Double(buffer.scales[$1]) * Double(buffer.scales[$1]) / 12 } * weightSquares
            let weightTerm = activationSquares * matrix.scales.reduce(0.0) { $0 + Double($1) * Double($1) / 12 }
            let predicted = ((stepTerm + weightTerm) / normSquares).squareRoot()
            print(
                "int8 vs sgemm, \(label) (\(m)×\(n)×\(k), \(Int8GEMM.defaultPath)): relative error \(String(format: "%.5f", relative)), predicted \(String(format: "%.5f", predicted))"
            )
            XCTAssertLessThanOrEqual(relative, 1.25 * predicted, label)
            XCTAssertLessThanOrEqual(relative, bound, label)

            // The float epilogue against the exact product of the quantized values.
            let codes = (0..<m).flatMap { buffer.codes(ofRow: $0) }
            let wCodes = (0..<n).flatMap { j in
                QuantizedMatrix.quantizedChannel(weights[(j * k)..<((j + 1) * k)]).values
            }
            let dequantized = ReferenceKernels.dequantizedMatMul(
                codes, scales: Array(buffer.scales.prefix(m)), zeroPoints: Array(buffer.zeroPoints.prefix(m)),
                wCodes, scales: matrix.scales, bias: bias, m: m, n: n, k: k)
            let scale = dequantized.reduce(0.0) { max($0, abs($1)) }
            assertClose(
                y, dequantized, relative: 0, absolute: 1e-6 * scale, "\(label): int8 result vs exact quantized product")
        }
    }
}

extension QuantizedMatrix {
    fileprivate static func quantizedChannel(channelOf values: [Float]) -> [Int8] { quantizedChannel(values).values }
}
