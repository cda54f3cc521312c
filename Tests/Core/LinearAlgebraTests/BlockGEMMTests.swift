import Dispatch
import Foundation
import LinearAlgebra
import Synchronization
import TestSupport
import XCTest

/// The block-quantized products on every path this CPU runs, against plain loops: exact block
/// integers and floats within 1e-5 of the sum of |terms| (+ 1e-6) on random shapes, both code
/// widths, the zero points GGUF uses, with and without minimums, bias, accumulation and column
/// ranges; the extremes that expose 16-bit saturation; the quantizer bit for bit; the float16
/// conversions; and the quantizer of float weights.
final class BlockGEMMTests: XCTestCase {
    // MARK: One test per path (skipped only where the CPU lacks it)

    func testGenericPath() throws { try checkPath(.generic) }
    func testAVX2Path() throws { try checkPath(.avx2) }
    func testAVX512VNNIPath() throws { try checkPath(.avx512VNNI) }
    func testAVXVNNIPath() throws { try checkPath(.avxVNNI) }
    func testAVX512VNNI256Path() throws { try checkPath(.avx512VNNI256) }

    func testPathsAreInt8GEMMs() {
        XCTAssertEqual(BlockGEMM.paths, Int8GEMM.paths)
        XCTAssertEqual(BlockGEMM.defaultPath, Int8GEMM.defaultPath)
        for path in BlockGEMM.paths {
            Int8GEMM.withPath(path) { XCTAssertEqual(BlockGEMM.defaultPath, path, "one switch forces both") }
        }
        print(
            "BlockGEMM paths on \(CPUInfo.current.modelName): \(BlockGEMM.paths.map(\.description).joined(separator: ", ")); default \(BlockGEMM.defaultPath)"
        )
    }

    func testUnavailablePathsAreRefused() {
        var rows = BlockQuantizedRows()
        let x = [Float](repeating: 1, count: 32)
        XCTAssertTrue(BlockGEMM.quantize(x, rows: 1, columns: 32, into: &rows))
        let w = BlockQuantizedMatrix(
            outputSize: 1, inputSize: 32, bits: 8, zeroPoint: 0, codes: [UInt8](repeating: 1, count: 32),
            scales: [0x3C00], mins: nil)
        for path in BlockGEMM.Path.allCases where !BlockGEMM.paths.contains(path) {
            var out: [Float] = [7]
            var acc: [Int32] = [7]
            var other = BlockQuantizedRows()
            XCTAssertFalse(BlockGEMM.multiply(rows, w, bias: nil, into: &out, path: path), "\(path)")
            XCTAssertFalse(BlockGEMM.accumulators(rows, w, into: &acc, path: path), "\(path)")
            XCTAssertFalse(BlockGEMM.quantize(x, rows: 1, columns: 32, into: &other, path: path), "\(path)")
            XCTAssertEqual(out, [7])
            XCTAssertEqual(acc, [7])
        }
    }

    // MARK: What every path must compute

    func checkPath(_ path: BlockGEMM.Path) throws {
        guard BlockGEMM.paths.contains(path) else {
            throw XCTSkip("\(path) does not run on \(CPUInfo.current.modelName)")
        }
        try checkRandomProducts(path)
        try checkExtremes(path)
        try checkQuantizer(path)
        try checkStridesAndColumnRanges(path)
    }

    /// A scale or minimum as float16, of either sign, spread over four decades.
    func randomHalf(using rng: inout SeededGenerator) -> UInt16 {
        HalfFloat.half(
            (Bool.random(using: &rng) ? 1 : -1) * Float(pow(10, Double.random(in: -4 ... -1, using: &rng))))
    }

    /// Codes uniform over every byte (both nibbles, and every fifth bit), float16 scales and
    /// (optionally) minimums.
    func randomMatrix(out: Int, in k: Int, bits: Int, zeroPoint: Int, mins: Bool, using rng: inout SeededGenerator)
        -> BlockQuantizedMatrix
    {
        let codes = (0..<(out * k * (bits == 8 ? 8 : 4) / 8)).map { _ in UInt8.random(in: 0...255, using: &rng) }
        let high = bits == 5 ? (0..<(out * k / 8)).map { _ in UInt8.random(in: 0...255, using: &rng) } : nil
        let blocks = out * k / BlockQuantizedMatrix.blockSize
        let scales = (0..<blocks).map { _ in randomHalf(using: &rng) }
        let minimums = mins ? (0..<blocks).map { _ in randomHalf(using: &rng) } : nil
        return BlockQuantizedMatrix(
            outputSize: out, inputSize: k, bits: bits, zeroPoint: zeroPoint, codes: codes, highBits: high,
            scales: scales, mins: minimums)
    }

    /// Activation codes uniform in −127 … 127 with scales of realistic size: `[rows, k]`, `[rows, k / 32]`.
    func randomActivations(rows: Int, in k: Int, using rng: inout SeededGenerator) -> (codes: [Int8], scales: [Float]) {
        (
            (0..<(rows * k)).map { _ in Int8.random(in: -127...127, using: &rng) },
            (0..<(rows * k / BlockQuantizedMatrix.blockSize)).map { _ in Float.random(in: 1e-3...1e-1, using: &rng) }
        )
    }

    /// Random shapes: in = 32 … 2048, out = 1 … 300 (around the multiples of 4, 8, 16, 32 and 64),
    /// T = 1 … 40 (the streaming kernel at 1, the tiled one above, every register-block remainder),
    /// both widths, zero points 0, 8, 32 and 128, minimums or not, all columns or an odd range.
    func checkRandomProducts(_ path: BlockGEMM.Path) throws {
        var rng = SeededGenerator(seed: 4100 + UInt64(path.rawValue))
        let blockCounts = [1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 18, 31, 33, 48, 64]
        let outputs = [1, 2, 3, 4, 5, 7, 15, 16, 17, 31, 33, 63, 65, 100, 129, 255, 300]
        let rowCounts = [1, 1, 1, 2, 3, 4, 5, 7, 8, 9, 13, 16, 17, 40]
        for index in 0..<48 {
            let bits = [4, 8, 5][index % 3]
            let zeroPoint = [0, 8, 32, 128][(index / 2) % 4]
            let mins = (index / 8) % 2 == 1
            let k = 32 * blockCounts.randomElement(using: &rng)!
            let t = rowCounts.randomElement(using: &rng)!
            // Keep each case within about 1.5 million multiply-adds (the reference is plain loops).
            let out = min(outputs.randomElement(using: &rng)!, max(1, 1_500_000 / (t * k)))
            let lower = index % 3 == 0 ? 0 : Int.random(in: 0..<out, using: &rng)
            let upper = index % 3 == 0 ? out : Int.random(in: (lower + 1)...out, using: &rng)
            let w = randomMatrix(out: out, in: k, bits: bits, zeroPoint: zeroPoint, mins: mins, using: &rng)
            let (codes, scales) = randomActivations(rows: t, in: k, using: &rng)
            try checkProduct(
                codes, scales, rows: t, w, columns: lower..<upper, path: path, using: &rng,
                label:
                    "\(path) case \(index): \(bits)-bit z \(zeroPoint) mins \(mins) T \(t) out \(out) in \(k) columns \(lower)..<\(upper)"
            )
        }
        // SmolLM2-135M's shapes, fewer rows.
        for (k, out, t) in [(576, 67, 1), (576, 40, 2), (1536, 35, 1), (1536, 19, 9), (896, 21, 1), (896, 18, 3)] {
            for bits in [4, 5, 8] {
                let w = randomMatrix(
                    out: out, in: k, bits: bits, zeroPoint: [4: 8, 5: 16, 8: 128][bits]!, mins: bits == 4, using: &rng)
                let (codes, scales) = randomActivations(rows: t, in: k, using: &rng)
                try checkProduct(
                    codes, scales, rows: t, w, columns: 0..<out, path: path, using: &rng,
                    label: "\(path) SmolLM2 \(k)→\(out) T \(t) \(bits)-bit")
            }
        }
        // Every block count from 1 to 20 (and two past 32) at one and two rows: the streaming
        // kernels' partial steps and cross-row tails, the tiled ones' edges; 9 and 6 outputs
        // leave groups of 1 and 2 rows beside whole groups of 4.
        for blocks in Array(1...20) + [33, 47] {
            for (t, bits) in [(1, 4), (1, 8), (2, 4), (2, 8), (1, 5), (2, 5)] {
                let out = blocks % 2 == 0 ? 9 : 6
                let zeroPoint = [0, 8, 32, 128][blocks % 4]
                let w = randomMatrix(
                    out: out, in: 32 * blocks, bits: bits, zeroPoint: zeroPoint, mins: blocks % 3 != 0, using: &rng)
                let (codes, scales) = randomActivations(rows: t, in: 32 * blocks, using: &rng)
                let lower = blocks % 5
                try checkProduct(
                    codes, scales, rows: t, w, columns: lower..<out, path: path, using: &rng,
                    label: "\(path) \(blocks) blocks T \(t) \(bits)-bit columns \(lower)..<\(out)")
            }
        }
    }

    /// Exact integers, then floats with and without bias and residual, against the references;
    /// the columns outside `columns` left as they were.
    func checkProduct(
        _ codes: [Int8], _ scales: [Float], rows t: Int, _ w: BlockQuantizedMatrix, columns: Range<Int>,
        path: BlockGEMM.Path,
        using rng: inout SeededGenerator, label: String, file: StaticString = #filePath, line: UInt = #line
    ) throws {
        let a = BlockQuantizedRows(codes: codes, scales: scales, columns: w.inputSize)
        let integers = ReferenceKernels.blockIntegers(codes, rows: t, w, columns: columns)
        var acc = [Int32](repeating: .min, count: max(1, integers.count))
        XCTAssertTrue(
            BlockGEMM.accumulators(a, w, columns: columns, into: &acc, path: path), label, file: file, line: line)
        if let i = firstDifference(Array(acc.prefix(integers.count)), integers) {
            XCTFail("\(label): integers differ first at \(i): \(acc[i]) vs \(integers[i])", file: file, line: line)
            return
        }
        let out = w.outputSize
        let bias = (0..<out).map { _ in Float.random(in: -1...1, using: &rng) }
        let residual = (0..<(t * out)).map { _ in Float.random(in: -4...4, using: &rng) }
        for (withBias, accumulate) in [(false, false), (true, false), (true, true), (false, true)] {
            let reference = ReferenceKernels.blockMatMul(
                codes, scales: scales, rows: t, w, columns: columns, bias: withBias ? bias : nil,
                residual: accumulate ? residual : nil, integers: integers)
            let sentinel: Float = -12345.5
            var y = accumulate ? residual : [Float](repeating: sentinel, count: t * out)
            let before = y
            let ran = bias.withUnsafeBufferPointer { b in
                BlockGEMM.multiply(
                    a, w, columns: columns, bias: withBias ? b.baseAddress : nil, into: &y, accumulate: accumulate,
                    path: path)
            }
            XCTAssertTrue(ran, label, file: file, line: line)
            let what = "\(label) bias \(withBias) accumulate \(accumulate)"
            if !assertWithinTolerance(
                y, reference, rows: t, out: out, columns: columns, ldc: out, what, file: file, line: line)
            {
                return
            }
            for r in 0..<t {
                for j in 0..<out
                where !columns.contains(j) && y[r * out + j].bitPattern != before[r * out + j].bitPattern {
                    XCTFail("\(what): column \(j) of row \(r) outside the range was written", file: file, line: line)
                    return
                }
            }
        }
    }

    /// |y − reference| ≤ 1e-5 · Σ|terms| + 1e-6 for the columns `columns` of `y: [rows, ldc]`;
    /// reports the first failure and the largest ratio of error to allowance.
    @discardableResult
    func assertWithinTolerance(
        _ y: [Float], _ reference: (values: [Double], magnitudes: [Double]), rows: Int, out: Int, columns: Range<Int>,
        ldc: Int,
        _ what: String, file: StaticString = #filePath, line: UInt = #line
    ) -> Bool {
        var first: String?
        var worst = 0.0
        for t in 0..<rows {
            for (c, j) in columns.enumerated() {
                let i = t * columns.count + c
                let error = abs(Double(y[t * ldc + j]) - reference.values[i])
                let allowed = 1e-5 * reference.magnitudes[i] + 1e-6
                worst = max(worst, error.isNaN ? .infinity : error / allowed)
                if !(error <= allowed), first == nil {
                    first =
                        "row \(t) column \(j): \(y[t * ldc + j]) vs \(reference.values[i]) (Σ|terms| \(reference.magnitudes[i]))"
                }
            }
        }
        if let first {
            XCTFail("\(what): first mismatch at \(first); largest error / allowance \(worst)", file: file, line: line)
            return false
        }
        return true
    }

    /// Codes 0 and the largest (15, 255) against activations ±127, zero points 0 and the largest,
    /// whole blocks of them (the 16-bit sums of the AVX2 kernels at their limits: 8 groups · 2 ·
    /// 15 · 127 = 30,480; 2 · 128 · 127 = 32,512), zero activation blocks, and scales at float16's
    /// extremes (65,504 and the smallest subnormal) with activation scales from 1e-8 to 1e3.
    func checkExtremes(_ path: BlockGEMM.Path) throws {
        var rng = SeededGenerator(seed: 77)
        let size = BlockQuantizedMatrix.blockSize
        for bits in [4, 5, 8] {
            let top: UInt8 = 255
            for (t, k, out) in [(1, 32, 5), (1, 2048, 9), (3, 96, 17), (9, 2048, 3), (2, 160, 33)] {
                let byteCount = out * k * (bits == 8 ? 8 : 4) / 8
                for zeroPoint in [0, [4: 15, 5: 31, 8: 255][bits]!, 128] {
                    let codeSets: [(String, [UInt8])] = [
                        ("largest codes", [UInt8](repeating: top, count: byteCount)),
                        ("zero codes", [UInt8](repeating: 0, count: byteCount)),
                        (
                            "codes 0 or largest",
                            (0..<byteCount).map { _ in
                                [0, top, bits == 8 ? 128 : 0x0F, bits == 8 ? 127 : 0xF0].randomElement(using: &rng)!
                            }
                        ),
                    ]
                    let activationSets: [(String, [Int8])] = [
                        ("+127", [Int8](repeating: 127, count: t * k)),
                        ("−127", [Int8](repeating: -127, count: t * k)),
                        ("±127", (0..<(t * k)).map { _ in Bool.random(using: &rng) ? 127 : -127 }),
                        // Every other block zero, as the quantizer leaves a block of zeros (scale 0 too).
                        (
                            "zero blocks",
                            (0..<(t * k)).map { i in (i / size) % 2 == 0 ? 0 : (Bool.random(using: &rng) ? 127 : -127) }
                        ),
                    ]
                    for (codeName, codes) in codeSets {
                        for (activationName, activations) in activationSets {
                            let hugeScales = Bool.random(using: &rng)
                            let scaleBits: [UInt16] = (0..<(out * k / size)).map { _ in
                                hugeScales
                                    ? [0x7BFF, 0xFBFF, 0x0001, 0x8001].randomElement(using: &rng)!
                                    : randomHalf(using: &rng)
                            }
                            // 5-bit: the fifth bits as the codes' own bytes (all set with the largest codes).
                            let high = bits == 5 ? Array(codes.prefix(out * k / 8)) : nil
                            let w = BlockQuantizedMatrix(
                                outputSize: out, inputSize: k, bits: bits, zeroPoint: zeroPoint, codes: codes,
                                highBits: high, scales: scaleBits,
                                mins: zeroPoint == 0 ? Array(scaleBits.reversed()) : nil)
                            let scales: [Float] = (0..<(t * k / size)).map { b in
                                activationName == "zero blocks" && b % 2 == 0
                                    ? 0 : [1e-8, 1, 1e3].randomElement(using: &rng)!
                            }
                            try checkProduct(
                                activations, scales, rows: t, w, columns: 0..<out, path: path, using: &rng,
                                label:
                                    "\(path) extremes \(bits)-bit z \(zeroPoint) \(codeName) × \(activationName) T \(t) in \(k)"
                            )
                        }
                    }
                }
            }
        }
        // The exact value of one full block at the limit, by hand: 32 · 255 · 127 − 0.
        let w = BlockQuantizedMatrix(
            outputSize: 1, inputSize: 32, bits: 8, zeroPoint: 0, codes: [UInt8](repeating: 255, count: 32),
            scales: [0x3C00], mins: nil)
        let a = BlockQuantizedRows(codes: [Int8](repeating: 127, count: 32), scales: [1], columns: 32)
        var acc: [Int32] = [0]
        XCTAssertTrue(BlockGEMM.accumulators(a, w, into: &acc, path: path))
        XCTAssertEqual(acc, [1_036_320], "\(path)")
        // And with the largest correction: codes 0, z 255, activations −127: 0 − 255 · (−4,064).
        let z = BlockQuantizedMatrix(
            outputSize: 1, inputSize: 32, bits: 8, zeroPoint: 255, codes: [UInt8](repeating: 0, count: 32),
            scales: [0x3C00], mins: nil)
        let negative = BlockQuantizedRows(codes: [Int8](repeating: -127, count: 32), scales: [1], columns: 32)
        XCTAssertTrue(BlockGEMM.accumulators(negative, z, into: &acc, path: path))
        XCTAssertEqual(acc, [1_036_320], "\(path)")
    }

    /// The path's quantizer gives the reference's codes, scales (bit for bit) and sums, with the
    /// padding zeroed even in a reused buffer, from strided rows.
    func checkQuantizer(_ path: BlockGEMM.Path) throws {
        var rng = SeededGenerator(seed: 91)
        var buffer = BlockQuantizedRows()
        for k in [2048, 32, 64, 96, 128, 160, 576, 1536] {
            var x = [Float]()
            var kinds = [String]()
            func add(_ row: [Float], _ kind: String) {
                x += row
                kinds.append(kind)
            }
            add((0..<k).map { _ in rng.gaussian() }, "gaussian")
            add([Float](repeating: 0, count: k), "zeros")
            add((0..<k).map { i in i % 2 == 0 ? -0.0 : 0 }, "signed zeros")
            add((0..<k).map { _ in rng.gaussian() * 0x1p-133 }, "subnormal")
            add((0..<k).map { _ in Float(Int.random(in: -127...127, using: &rng)) + 0.5 }, "ties")
            add(
                (0..<k).map { i in i % 32 == 0 ? 127 : [0.5, -0.5, 1.5, -2.5, 126.5].randomElement(using: &rng)! },
                "ties at scale 1")
            add((0..<k).map { i in i % 97 == 5 ? 3e4 : rng.gaussian() * 0.01 }, "outliers")
            add((0..<k).map { _ in rng.gaussian() * 1e30 }, "huge")
            add((0..<k).map { i in (i / 32) % 3 == 1 ? 0 : rng.gaussian() }, "zero blocks")
            let m = kinds.count
            let ldx = k + 7
            var strided = [Float](repeating: .nan, count: m * ldx)
            for i in 0..<m { strided.replaceSubrange((i * ldx)..<(i * ldx + k), with: x[(i * k)..<((i + 1) * k)]) }
            XCTAssertTrue(BlockGEMM.quantize(strided, rows: m, columns: k, rowStride: ldx, into: &buffer, path: path))
            let used = Set((0..<k).map { BlockQuantizedRows.offset(block: $0 / 32, element: $0 % 32) })
            for i in 0..<m {
                let expected = ReferenceKernels.blockQuantizedRow(Array(x[(i * k)..<((i + 1) * k)]))
                let what = "\(path) quantize \(kinds[i]) in \(k)"
                XCTAssertEqual(buffer.codes(ofRow: i), expected.codes, what)
                XCTAssertEqual(buffer.scales(ofRow: i).map(\.bitPattern), expected.scales.map(\.bitPattern), what)
                XCTAssertEqual(buffer.sums(ofRow: i), expected.sums, what)
                // Padding: codes of the blocks past in, scales and sums past in / 32 (the buffer held a 2048-wide quantization before).
                let row = buffer.codes[(i * buffer.codeStride)..<((i + 1) * buffer.codeStride)]
                let padding = zip(0..<buffer.codeStride, row).filter { !used.contains($0.0) }
                XCTAssertTrue(padding.allSatisfy { $0.1 == 0 }, "\(what): code padding")
                let blocks = k / 32
                XCTAssertTrue(
                    buffer.scales[(i * buffer.blockStride + blocks)..<((i + 1) * buffer.blockStride)].allSatisfy {
                        $0 == 0
                    }, "\(what): scale padding")
                XCTAssertTrue(
                    buffer.sums[(i * buffer.blockStride + blocks)..<((i + 1) * buffer.blockStride)].allSatisfy {
                        $0 == 0
                    }, "\(what): sum padding")
            }
            // Each value within half a step of its code (the block's largest within a step: d_a rounds).
            for i in 0..<m where kinds[i] != "subnormal" {
                let codes = buffer.codes(ofRow: i)
                let scales = buffer.scales(ofRow: i)
                for p in 0..<k {
                    let d = Double(scales[p / 32])
                    let value = Double(x[i * k + p])
                    XCTAssertLessThanOrEqual(
                        abs(d * Double(codes[p]) - value), 0.5001 * d + abs(value) * 1e-6, "\(kinds[i]) in \(k) at \(p)"
                    )
                }
            }
        }
    }

    /// Row strides of the activations and the output, a column range with odd bounds, and the
    /// output's padding and other columns left alone, through `matmul`.
    func checkStridesAndColumnRanges(_ path: BlockGEMM.Path) throws {
        var rng = SeededGenerator(seed: 5)
        for (t, k, out, lda, ldc) in [(1, 96, 45, 100, 50), (19, 160, 45, 170, 48), (3, 64, 70, 64, 71)] {
            for bits in [4, 5, 8] {
                let w = randomMatrix(out: out, in: k, bits: bits, zeroPoint: 8, mins: true, using: &rng)
                let x = (0..<(t * lda)).map { _ in rng.gaussian() }
                let bias = (0..<out).map { _ in rng.gaussian() }
                for columns in [3..<40, 0..<out, 17..<18, 31..<out] {
                    var y = [Float](repeating: 9, count: t * ldc)
                    var buffer = BlockQuantizedRows()
                    let ran = bias.withUnsafeBufferPointer { b in
                        BlockGEMM.matmul(
                            activations: x, rows: t, lda: lda, weights: w, columns: columns, bias: b.baseAddress,
                            into: &y,
                            ldc: ldc, accumulate: true, buffer: &buffer, path: path)
                    }
                    XCTAssertTrue(ran)
                    let codes = (0..<t).flatMap { buffer.codes(ofRow: $0) }
                    let scales = (0..<t).flatMap { buffer.scales(ofRow: $0) }
                    let residual = [Float](repeating: 9, count: t * out)
                    let reference = ReferenceKernels.blockMatMul(
                        codes, scales: scales, rows: t, w, columns: columns, bias: bias, residual: residual)
                    let what = "\(path) strided \(bits)-bit T \(t) in \(k) columns \(columns)"
                    assertWithinTolerance(y, reference, rows: t, out: out, columns: columns, ldc: ldc, what)
                    for r in 0..<t {
                        for j in 0..<ldc where !columns.contains(j) {
                            XCTAssertEqual(y[r * ldc + j], 9, "\(what): row \(r) column \(j) written")
                        }
                    }
                }
            }
        }
    }

    // MARK: Across paths, threads and shapes with nothing to do

    func testIntegersIdenticalAcrossPaths() {
        var rng = SeededGenerator(seed: 12)
        for (t, k, out, bits, zeroPoint) in [
            (1, 576, 70, 4, 8), (5, 576, 33, 8, 128), (17, 1536, 20, 4, 0), (2, 2048, 9, 8, 32),
            (1, 896, 21, 5, 16), (3, 4864, 7, 5, 0), (9, 160, 18, 5, 31),
        ] {
            let w = randomMatrix(out: out, in: k, bits: bits, zeroPoint: zeroPoint, mins: false, using: &rng)
            let (codes, scales) = randomActivations(rows: t, in: k, using: &rng)
            let a = BlockQuantizedRows(codes: codes, scales: scales, columns: k)
            var generic = [Int32](repeating: 0, count: t * out * k / 32)
            XCTAssertTrue(BlockGEMM.accumulators(a, w, into: &generic, path: .generic))
            for path in BlockGEMM.paths {
                var acc = [Int32](repeating: .min, count: generic.count)
                XCTAssertTrue(BlockGEMM.accumulators(a, w, into: &acc, path: path))
                XCTAssertNil(firstDifference(acc, generic), "\(path) T \(t) \(k)→\(out) \(bits)-bit")
            }
        }
    }

    /// One matrix, its columns split over threads at odd bounds (each thread with its own
    /// activation buffer): the same bits as one call on the same path.
    func testColumnSplitsAcrossThreads() throws {
        var rng = SeededGenerator(seed: 8)
        for t in [1, 7] {
            let (k, out) = (192, 101)
            let w = randomMatrix(out: out, in: k, bits: 4, zeroPoint: 0, mins: true, using: &rng)
            let x = (0..<(t * k)).map { _ in rng.gaussian() }
            var whole = [Float](repeating: 0, count: t * out)
            var buffer = BlockQuantizedRows()
            BlockGEMM.matmul(activations: x, rows: t, weights: w, bias: nil, into: &whole, buffer: &buffer)
            let splits = [0..<13, 13..<50, 50..<51, 51..<101]
            let pieces = Mutex<[Int: [Float]]>([:])
            DispatchQueue.concurrentPerform(iterations: splits.count) { i in
                var y = [Float](repeating: 0, count: t * out)
                var rows = BlockQuantizedRows()
                BlockGEMM.matmul(
                    activations: x, rows: t, weights: w, columns: splits[i], bias: nil, into: &y, buffer: &rows)
                pieces.withOrderedLock { $0[i] = y }
            }
            let all = pieces.withOrderedLock { $0 }
            for (i, columns) in splits.enumerated() {
                let y = try XCTUnwrap(all[i])
                for r in 0..<t {
                    for j in columns {
                        XCTAssertEqual(
                            y[r * out + j].bitPattern, whole[r * out + j].bitPattern, "T \(t) row \(r) column \(j)")
                    }
                }
            }
        }
    }

    func testEmptyShapes() {
        var buffer = BlockQuantizedRows()
        let x = [Float](repeating: 1, count: 64)
        let w = BlockQuantizedMatrix(
            outputSize: 2, inputSize: 32, bits: 4, zeroPoint: 8, codes: [UInt8](repeating: 0x9A, count: 32),
            scales: [0x3C00, 0x3C00], mins: nil)
        for path in BlockGEMM.paths {
            var y: [Float] = [4, 4]
            XCTAssertTrue(
                BlockGEMM.matmul(activations: x, rows: 0, weights: w, bias: nil, into: &y, buffer: &buffer, path: path))
            XCTAssertEqual(y, [4, 4], "\(path): no rows, nothing written")
            XCTAssertTrue(
                BlockGEMM.matmul(
                    activations: x, rows: 1, weights: w, columns: 1..<1, bias: nil, into: &y, buffer: &buffer,
                    path: path))
            XCTAssertEqual(y, [4, 4], "\(path): no columns, nothing written")
        }
        // Depth 0: the product is the bias.
        let flat = BlockQuantizedMatrix(
            outputSize: 2, inputSize: 0, bits: 8, zeroPoint: 128, codes: [], scales: [], mins: [])
        let bias: [Float] = [0.5, -0.5]
        for path in BlockGEMM.paths {
            var y: [Float] = [4, 4]
            XCTAssertTrue(
                BlockGEMM.matmul(
                    activations: x, rows: 1, weights: flat, bias: bias, into: &y, buffer: &buffer, path: path))
            XCTAssertEqual(y, bias, "\(path): depth 0")
        }
    }

    // MARK: The references and the formats

    /// `blockMatMul` (integers, then scales) and `blockDequantizedMatMul` (dequantized weights)
    /// are the same number by two routes.
    func testReferencesAgree() {
        var rng = SeededGenerator(seed: 21)
        for (bits, zeroPoint, mins) in [
            (4, 8, false), (4, 0, true), (5, 16, false), (5, 0, true), (8, 128, false), (8, 32, true),
        ] {
            let (t, k, out) = (3, 96, 7)
            let w = randomMatrix(out: out, in: k, bits: bits, zeroPoint: zeroPoint, mins: mins, using: &rng)
            let (codes, scales) = randomActivations(rows: t, in: k, using: &rng)
            let bias = (0..<out).map { _ in Float.random(in: -1...1, using: &rng) }
            let viaIntegers = ReferenceKernels.blockMatMul(
                codes, scales: scales, rows: t, w, columns: 2..<7, bias: bias, residual: nil)
            let viaWeights = ReferenceKernels.blockDequantizedMatMul(
                codes, scales: scales, rows: t, w, columns: 2..<7, bias: bias)
            for i in viaWeights.indices {
                XCTAssertEqual(
                    viaIntegers.values[i], viaWeights[i], accuracy: 1e-12 * viaIntegers.magnitudes[i],
                    "\(bits)-bit z \(zeroPoint) at \(i)")
            }
        }
    }

    /// GGML's nibble order: byte i of a block holds element i (low) and i + 16 (high).
    func testFourBitCodeOrder() {
        var codes = [UInt8](repeating: 0, count: 32)
        for i in 0..<16 { codes[16 + i] = UInt8(i) | UInt8(15 - i) << 4 }
        let w = BlockQuantizedMatrix(
            outputSize: 1, inputSize: 64, bits: 4, zeroPoint: 8, codes: codes, scales: [0x3C00, 0x4000], mins: nil)
        XCTAssertEqual((32..<64).map { w.code(row: 0, column: $0) }, Array(0..<16) + (0..<16).map { 15 - $0 })
        XCTAssertEqual(w.value(row: 0, column: 32), 2 * (0 - 8))
        XCTAssertEqual(w.value(row: 0, column: 5), 1 * (0 - 8))
        XCTAssertEqual(w.byteCount, 32 + 4)
    }

    /// GGML's Q5_0 order: the nibbles as for 4 bits, bit i of a block's little-endian 32-bit word
    /// the fifth bit of element i.
    func testFiveBitCodeOrder() {
        var codes = [UInt8](repeating: 0, count: 16)
        for i in 0..<16 { codes[i] = UInt8(i) | UInt8(15 - i) << 4 }
        // Fifth bits on elements 0, 9, 16 and 31.
        let word: UInt32 = 1 | 1 << 9 | 1 << 16 | 1 << 31
        let high = (0..<4).map { UInt8(truncatingIfNeeded: word >> (8 * UInt32($0))) }
        let w = BlockQuantizedMatrix(
            outputSize: 1, inputSize: 32, bits: 5, zeroPoint: 16, codes: codes, highBits: high, scales: [0x3C00],
            mins: nil)
        var expected = Array(0..<16) + (0..<16).map { 15 - $0 }
        for e in [0, 9, 16, 31] { expected[e] += 16 }
        XCTAssertEqual((0..<32).map { w.code(row: 0, column: $0) }, expected)
        XCTAssertEqual(w.value(row: 0, column: 16), Double(15 + 16 - 16))
        XCTAssertEqual(w.byteCount, 16 + 4 + 2)
    }

    /// Fused projections: 4- and 5-bit parts of one zero point stack as 5-bit; with an 8-bit part,
    /// everything widens to 8-bit; either way every weight keeps its value.
    func testStackingKeepsEveryWeight() {
        var rng = SeededGenerator(seed: 31)
        let four = randomMatrix(out: 3, in: 64, bits: 4, zeroPoint: 0, mins: true, using: &rng)
        let five = randomMatrix(out: 5, in: 64, bits: 5, zeroPoint: 0, mins: false, using: &rng)
        let five16 = randomMatrix(out: 2, in: 64, bits: 5, zeroPoint: 16, mins: false, using: &rng)
        let eight = randomMatrix(out: 4, in: 64, bits: 8, zeroPoint: 128, mins: false, using: &rng)
        for (parts, bits) in [([four, five], 5), ([five, five], 5), ([five16, eight, five], 8), ([four, four], 4)] {
            let stacked = BlockQuantizedMatrix(stacking: parts)
            XCTAssertEqual(stacked.bits, bits)
            var row = 0
            for part in parts {
                for j in 0..<part.outputSize {
                    for k in 0..<64 {
                        XCTAssertEqual(
                            stacked.value(row: row, column: k), part.value(row: j, column: k), "\(bits): [\(row), \(k)]"
                        )
                    }
                    row += 1
                }
            }
        }
    }

    func testHalfConversions() {
        // Every finite half and infinity survives float and back; NaN stays NaN.
        for bits in UInt16.min...UInt16.max {
            let value = HalfFloat.float(fromHalf: bits)
            if bits & 0x7C00 == 0x7C00 && bits & 0x03FF != 0 {
                XCTAssertTrue(value.isNaN)
                XCTAssertTrue(HalfFloat.float(fromHalf: HalfFloat.half(value)).isNaN)
            } else if HalfFloat.half(value) != bits {
                XCTFail("half \(bits) → \(value) → \(HalfFloat.half(value))")
            }
        }
        // Ties to even, overflow, subnormals, signed zero.
        XCTAssertEqual(HalfFloat.half(1 + 0x1p-11), 0x3C00)
        XCTAssertEqual(HalfFloat.half(1 + 3 * 0x1p-11), 0x3C02)
        XCTAssertEqual(HalfFloat.half(65504), 0x7BFF)
        XCTAssertEqual(HalfFloat.half(65519.996), 0x7BFF)
        XCTAssertEqual(HalfFloat.half(65520), 0x7C00)
        XCTAssertEqual(HalfFloat.half(-.infinity), 0xFC00)
        XCTAssertEqual(HalfFloat.half(0x1p-25), 0)
        XCTAssertEqual(HalfFloat.half(0x1.000002p-25), 1)
        XCTAssertEqual(HalfFloat.half(3 * 0x1p-25), 2)
        XCTAssertEqual(HalfFloat.half(0x1.ff8p-15), 0x03FF, "the largest subnormal")
        XCTAssertEqual(HalfFloat.half(0x1.ffcp-15), 0x0400, "halfway past it: to even, the smallest normal")
        XCTAssertEqual(HalfFloat.half(-0.0), 0x8000)
        XCTAssertEqual(HalfFloat.float(fromHalf: 0x0001), 0x1p-24)
        XCTAssertEqual(HalfFloat.float(fromHalf: 0xC000), -2)
        #if !(os(macOS) && arch(x86_64))
            var rng = SeededGenerator(seed: 16)
            for _ in 0..<100_000 {
                let value = Float(bitPattern: UInt32.random(in: 0...UInt32.max, using: &rng))
                guard !value.isNaN else { continue }
                XCTAssertEqual(HalfFloat.half(value), Float16(value).bitPattern, "\(value)")
            }
        #endif
    }

    func testFloatWeightsQuantizedToEightBitBlocks() throws {
        var rng = SeededGenerator(seed: 3)
        let (out, k) = (5, 96)
        var weights = (0..<(out * k)).map { _ in rng.gaussian() * 0.05 }
        for i in 32..<64 { weights[2 * k + i] = 0 }  // a zero block
        weights[4 * k + 70] = -1000  // a block with one large weight
        let w = try BlockQuantizedMatrix(weights: weights, outputSize: out, inputSize: k)
        XCTAssertEqual(w.bits, 8)
        XCTAssertEqual(w.zeroPoint, 128)
        XCTAssertNil(w.mins)
        XCTAssertEqual(w.byteCount, out * k + 2 * out * k / 32)
        XCTAssertEqual(w.scales[2 * 3 + 1], 0, "a zero block has scale 0")
        XCTAssertTrue((32..<64).allSatisfy { w.code(row: 2, column: $0) == 128 }, "and codes 128")
        for j in 0..<out {
            for b in 0..<(k / 32) {
                let block = weights[(j * k + 32 * b)..<(j * k + 32 * b + 32)]
                let largest = block.reduce(Float(0)) { max($0, abs($1)) }
                XCTAssertEqual(
                    w.scales[j * 3 + b], HalfFloat.half(largest / 127), "scale of block \(b) of row \(j)")
                let d = Double(HalfFloat.float(fromHalf: w.scales[j * 3 + b]))
                for (index, value) in zip(block.indices, block) {
                    let column = index - j * k
                    let code = w.code(row: j, column: column)
                    XCTAssertTrue((1...255).contains(code), "codes 1 … 255: symmetric around 128")
                    // Half a step, plus what clamping at ±127 costs when d rounded down.
                    XCTAssertLessThanOrEqual(
                        abs(w.value(row: j, column: column) - Double(value)),
                        0.5 * d * 1.0001 + Double(largest) * 0x1p-11,
                        "row \(j) column \(column)")
                }
            }
        }

        weights[3 * k + 7] = .nan
        XCTAssertThrowsError(try BlockQuantizedMatrix(weights: weights, outputSize: out, inputSize: k)) { error in
            XCTAssertEqual(error as? QuantizedMatrix.InvalidWeight, QuantizedMatrix.InvalidWeight(row: 3, column: 7))
        }
        weights[3 * k + 7] = .infinity
        XCTAssertThrowsError(try BlockQuantizedMatrix(weights: weights, outputSize: out, inputSize: k)) { error in
            XCTAssertEqual(error as? QuantizedMatrix.InvalidWeight, QuantizedMatrix.InvalidWeight(row: 3, column: 7))
        }
        weights[3 * k + 7] = 0
        weights[1 * k + 40] = -127 * 65520  // d = 65,520 rounds to infinity in float16
        XCTAssertThrowsError(try BlockQuantizedMatrix(weights: weights, outputSize: out, inputSize: k)) { error in
            XCTAssertEqual(error as? QuantizedMatrix.InvalidWeight, QuantizedMatrix.InvalidWeight(row: 1, column: 40))
        }
        weights[1 * k + 40] = 127 * 65504  // the largest finite scale
        XCTAssertNoThrow(try BlockQuantizedMatrix(weights: weights, outputSize: out, inputSize: k))
    }

    /// The whole scheme against the float product: float weights quantized to 8-bit blocks and
    /// activations to int8 blocks stay within 1% (relative, over the output) of `x · Wᵀ` in
    /// `Double`, on every path; and a 4-bit matrix gives what its dequantized weights give.
    func testAccuracyAgainstFloatProduct() throws {
        var rng = SeededGenerator(seed: 576)
        let (t, k, out) = (6, 576, 64)
        let weights = (0..<(out * k)).map { _ in rng.gaussian() * 0.05 }
        let x = (0..<(t * k)).map { _ in rng.gaussian() }
        let w = try BlockQuantizedMatrix(weights: weights, outputSize: out, inputSize: k)
        var exact = [Double](repeating: 0, count: t * out)
        for r in 0..<t {
            for j in 0..<out {
                exact[r * out + j] = (0..<k).reduce(0.0) { $0 + Double(x[r * k + $1]) * Double(weights[j * k + $1]) }
            }
        }
        let norm = exact.reduce(0.0) { $0 + $1 * $1 }.squareRoot()
        for path in BlockGEMM.paths {
            var y = [Float](repeating: 0, count: t * out)
            var buffer = BlockQuantizedRows()
            XCTAssertTrue(
                BlockGEMM.matmul(activations: x, rows: t, weights: w, bias: nil, into: &y, buffer: &buffer, path: path))
            let error = zip(y, exact).reduce(0.0) { $0 + (Double($1.0) - $1.1) * (Double($1.0) - $1.1) }.squareRoot()
            print(
                "block int8 × 8-bit blocks vs float (\(t)×\(out)×\(k), \(path)): relative error \(String(format: "%.5f", error / norm))"
            )
            XCTAssertLessThan(error / norm, 0.01, "\(path)")
        }
    }
}
