import GGUF
import LinearAlgebra
import LlamaDecoder
import TestSupport
import XCTest

/// The fast kernels against the reference loops, the conversions against their definitions, and
/// both against the `gguf` Python package's dequantization (Fixtures/gguf/generate.py).
final class GGUFDequantizationTests: XCTestCase {
    struct TypesFixture: Decodable {
        struct Size: Decodable { var id: UInt32, name: String, block: Int, bytes: Int }
        struct Tensor: Decodable { var name: String, type: String, ne: [Int], bits: [UInt32] }
        var file: String
        var quantSizes: [Size]
        var tensors: [Tensor]
    }

    /// A file holding one tensor of `rows` rows of `blocksPerRow` random blocks of `type`.
    func randomTensorFile(_ type: GGMLType, rows: Int, blocksPerRow: Int, seed: UInt64) throws -> (
        GGUFFile, GGUFTensorInfo
    ) {
        var generator = SeededGenerator(seed: seed)
        let data = randomBlocks(type, count: rows * blocksPerRow, using: &generator)
        let tensor = TestTensor(name: "t", dimensions: [blocksPerRow * type.blockSize, rows], type: type, data: data)
        let file = try GGUFFile(bytes: makeGGUF(tensors: [tensor]))
        return (file, file.tensors[0])
    }

    func dequantized(_ file: GGUFFile, _ tensor: GGUFTensorInfo, rows: Range<Int>? = nil, kernel: DequantizationKernel)
        throws -> [Float]
    {
        let rows = rows ?? 0..<tensor.rowCount
        var values = [Float](repeating: .nan, count: rows.count * tensor.rowLength)
        try values.withUnsafeMutableBufferPointer { buffer in
            guard let start = buffer.baseAddress else { return }
            try file.dequantizeRows(tensor, rows: rows, into: start, kernel: kernel)
        }
        return values
    }

    func testFastMatchesReferenceBitForBitOnRandomBlocks() throws {
        for (i, type) in GGMLType.supported.enumerated() {
            // Row lengths that leave a remainder for the 8-wide float paths, and more blocks than
            // one 8K-value chunk so chunk boundaries are crossed.
            let blocksPerRow = type.blockSize == 1 ? 37 : 3
            let rows = type.blockSize == 1 ? 300 : 8192 / type.blockSize / 3 + 5
            let (file, tensor) = try randomTensorFile(
                type, rows: rows, blocksPerRow: blocksPerRow, seed: UInt64(100 + i))
            let fast = try dequantized(file, tensor, kernel: .fast)
            let reference = try dequantized(file, tensor, kernel: .reference)
            XCTAssertGreaterThan(fast.count, 8192)
            assertSameBits(fast, bitPatterns(reference), "\(type.name) fast vs reference")
            if type.blockSize > 1 {
                XCTAssertTrue(fast.allSatisfy(\.isFinite), "\(type.name): finite scales give finite values")
            }
            XCTAssertEqual(bitPatterns(try file.dequantize(tensor)), bitPatterns(fast), "\(type.name) public API")
        }
    }

    /// The decoder's native form of each type (`blockQuantized`): the file's values exactly for
    /// the types that map as they are, within float16 rounding of the per-32 scale products for
    /// the K-quants and IQ4_XS, nil (requantized by the caller) for the rest.
    func testNativeBlocksHoldTheFilesValues() throws {
        let exact: Set<GGMLType> = [.q4_0, .q4_1, .q5_0, .q5_1, .q8_0, .iq4_nl]
        let rounded: Set<GGMLType> = [.q4_K, .q5_K, .iq4_xs]
        for (i, type) in GGMLType.supported.enumerated() {
            let blocksPerRow = type.blockSize == 1 ? 64 : 512 / type.blockSize
            let (file, tensor) = try randomTensorFile(type, rows: 3, blocksPerRow: blocksPerRow, seed: UInt64(200 + i))
            let native = try file.blockCodes(tensor).map(BlockQuantizedMatrix.init)
            guard exact.contains(type) || rounded.contains(type) else {
                XCTAssertNil(native, "\(type.name) is requantized by the caller")
                continue
            }
            let matrix = try XCTUnwrap(native, type.name)
            XCTAssertEqual(matrix.outputSize, 3)
            XCTAssertEqual(matrix.inputSize, 512)
            let values = try file.dequantize(tensor)
            for j in 0..<3 {
                for block in 0..<16 {
                    let range = (j * 512 + 32 * block)..<(j * 512 + 32 * block + 32)
                    let largest = values[range].map { abs(Double($0)) }.max() ?? 0
                    let minimum = matrix.mins.map {
                        abs(Double(HalfFloat.float(fromHalf: $0[j * 16 + block])))
                    }
                    let tolerance = exact.contains(type) ? 0 : 0x1p-10 * (largest + 2 * (minimum ?? 0))
                    for k in range {
                        let column = k - j * 512
                        let difference = abs(matrix.value(row: j, column: column) - Double(values[k]))
                        if difference > tolerance {
                            XCTFail(
                                "\(type.name) [\(j), \(column)]: \(matrix.value(row: j, column: column)) vs \(values[k])"
                            )
                            return
                        }
                    }
                }
            }
        }
    }

    func testHalfConversionOfEveryBitPattern() {
        let all = (0...UInt16.max).map { $0 }
        var fast = [Float](repeating: 0, count: all.count)
        var reference = fast
        all.withUnsafeBytes { raw in
            guard let base = raw.baseAddress else { return }
            fast.withUnsafeMutableBufferPointer {
                Dequantization.dequantize(.f16, base, count: all.count, into: $0.baseAddress!)
            }
            reference.withUnsafeMutableBufferPointer {
                Dequantization.dequantize(.f16, base, count: all.count, into: $0.baseAddress!, kernel: .reference)
            }
        }
        assertSameBits(fast, bitPatterns(reference), "F16 fast vs reference")
        for bits in all {
            let value = reference[Int(bits)]
            let exponent = (bits >> 10) & 0x1F
            let mantissa = UInt32(bits & 0x3FF)
            if exponent == 0x1F && mantissa != 0 {
                // NaN: sign and payload kept, shifted into the single's mantissa, as numpy does.
                XCTAssertEqual(
                    value.bitPattern, UInt32(bits >> 15) << 31 | 0x7F80_0000 | mantissa << 13,
                    "0x\(String(bits, radix: 16))")
            } else {
                XCTAssertEqual(
                    value.bitPattern, Float(Float16(bitPattern: bits)).bitPattern, "0x\(String(bits, radix: 16))")
            }
        }
        XCTAssertEqual(reference[0x0001], 0x1p-24, "smallest subnormal")
        XCTAssertEqual(reference[0x03FF], 1023 * 0x1p-24, "largest subnormal")
        XCTAssertEqual(reference[0x8000].bitPattern, (-0.0 as Float).bitPattern)
        XCTAssertEqual(reference[0x7C00], .infinity)
        XCTAssertEqual(reference[0xFC00], -.infinity)
        XCTAssertEqual(reference[0x7BFF], 65504)
    }

    func testBFloat16ConversionOfEveryBitPattern() {
        let all = (0...UInt16.max).map { $0 }
        var fast = [Float](repeating: 0, count: all.count)
        var reference = fast
        all.withUnsafeBytes { raw in
            guard let base = raw.baseAddress else { return }
            fast.withUnsafeMutableBufferPointer {
                Dequantization.dequantize(.bf16, base, count: all.count, into: $0.baseAddress!)
            }
            reference.withUnsafeMutableBufferPointer {
                Dequantization.dequantize(.bf16, base, count: all.count, into: $0.baseAddress!, kernel: .reference)
            }
        }
        assertSameBits(fast, all.map { UInt32($0) << 16 }, "BF16 fast")
        assertSameBits(reference, all.map { UInt32($0) << 16 }, "BF16 reference")
    }

    func testGoldenValuesFromThePythonPackage() throws {
        let fixture = try TestFixtures.decode(TypesFixture.self, from: "gguf/types.json")
        let file = try GGUFFile(
            contentsOf: TestFixtures.folder.appendingPathComponent("gguf").appendingPathComponent(fixture.file))
        XCTAssertEqual(fixture.tensors.count, 15)
        XCTAssertEqual(Set(fixture.tensors.map(\.type)), Set(GGMLType.supported.map(\.name)), "one tensor per type")
        for expected in fixture.tensors {
            let tensor = try XCTUnwrap(file.tensor(named: expected.name))
            XCTAssertEqual(tensor.type.name, expected.type)
            XCTAssertEqual(tensor.dimensions, expected.ne)
            assertSameBits(
                try dequantized(file, tensor, kernel: .fast), expected.bits, "\(expected.name) fast vs gguf.quants")
            assertSameBits(
                try dequantized(file, tensor, kernel: .reference), expected.bits,
                "\(expected.name) reference vs gguf.quants")
        }
    }

    func testBlockSizesMatchThePythonPackage() throws {
        let fixture = try TestFixtures.decode(TypesFixture.self, from: "gguf/types.json")
        for size in fixture.quantSizes {
            let type = try XCTUnwrap(GGMLType(rawValue: size.id), "\(size.name) (\(size.id)) is unknown")
            XCTAssertEqual(type.name, size.name)
            XCTAssertEqual(type.blockSize, size.block, size.name)
            // The one known difference: ggml's block_q8_1 (ggml-common.h) is two halves and 32
            // bytes, 36 in all; the Python package lists 40, from an older layout with f32 fields.
            XCTAssertEqual(type.blockByteCount, type == .q8_1 ? 36 : size.bytes, size.name)
        }
        XCTAssertEqual(
            fixture.quantSizes.first { $0.name == "Q8_1" }?.bytes, 40, "still different in the Python package")
        XCTAssertEqual(Set(fixture.quantSizes.map(\.id)), Set(GGMLType.allCases.map(\.rawValue)))
        XCTAssertEqual(GGMLType.allCases.filter(\.isSupported), GGMLType.supported.sorted { $0.rawValue < $1.rawValue })
    }

    func testUnsupportedTypesNameTheTypeAndTheSupportedOnes() throws {
        let tensor = TestTensor(name: "w", dimensions: [256], type: .iq2_xxs, data: [UInt8](repeating: 0, count: 66))
        let file = try GGUFFile(bytes: makeGGUF(tensors: [tensor]))
        XCTAssertEqual(file.tensors[0].type, .iq2_xxs, "a known but unsupported type reads")
        assertGGUFError(
            try file.dequantize(file.tensors[0]), code: .unsupportedType,
            mentions: [
                "tensor 'w'",
                "IQ2_XXS is not supported; supported: F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, "
                    + "Q5_K, Q6_K, IQ4_NL, IQ4_XS",
            ])
        let bytes = file.withTensorBytes(file.tensors[0]) { $0.count }
        XCTAssertEqual(bytes, 66, "its raw bytes are still there")
    }

    func testNonFiniteScalesAreErrorsNamingTheBlock() throws {
        let cases: [(GGMLType, field: Int, bits: UInt16, name: String)] = [
            (.q4_0, 0, 0x7C00, "d"), (.q4_1, 2, 0xFC00, "m"), (.q8_0, 0, 0x7E00, "d"), (.q4_K, 2, 0x7C01, "dmin"),
            (.q5_K, 0, 0xFE00, "d"), (.q6_K, 208, 0x7C00, "d"), (.q5_0, 0, 0x7C00, "d"), (.q5_1, 2, 0x7E00, "m"),
            (.q2_K, 82, 0xFC00, "dmin"), (.q3_K, 108, 0x7C00, "d"), (.iq4_nl, 0, 0x7C01, "d"),
            (.iq4_xs, 0, 0xFC00, "d"),
        ]
        for (type, field, bits, name) in cases {
            var generator = SeededGenerator(seed: 3)
            var data = randomBlocks(type, count: 12, using: &generator)
            // Block 7 of 12: row 3 of a tensor of 4 rows of 3 blocks.
            data[7 * type.blockByteCount + field] = UInt8(bits & 0xFF)
            data[7 * type.blockByteCount + field + 1] = UInt8(bits >> 8)
            let tensor = TestTensor(name: "bad", dimensions: [3 * type.blockSize, 4], type: type, data: data)
            let file = try GGUFFile(bytes: makeGGUF(tensors: [tensor]))
            let error = assertGGUFError(
                try file.dequantize(file.tensors[0]), code: .nonFiniteScale,
                mentions: ["tensor 'bad'", "\(type.name) block 7 (row 2) has a non-finite \(name)"])
            XCTAssertEqual(error?.offset, file.dataOffset + 7 * type.blockByteCount, type.name)
            XCTAssertEqual(
                try file.dequantize(file.tensors[0], rows: 0..<2).count, 2 * 3 * type.blockSize,
                "rows without the block")
            XCTAssertEqual(try file.dequantize(file.tensors[0], rows: 3..<4).count, 3 * type.blockSize)
            assertGGUFError(try file.dequantize(file.tensors[0], rows: 2..<3), code: .nonFiniteScale)
        }
    }

    func testFloatTypesKeepNonFiniteValues() throws {
        let values: [Float] = [.infinity, -.infinity, .nan, 1]
        let file = try GGUFFile(
            bytes: makeGGUF(tensors: [TestTensor(name: "x", dimensions: [4], type: .f32, data: f32Bytes(values))]))
        XCTAssertEqual(bitPatterns(try file.dequantize(file.tensors[0])), bitPatterns(values))
    }

    func testRowsOutsideTheTensorAreErrors() throws {
        let (file, tensor) = try randomTensorFile(.q8_0, rows: 4, blocksPerRow: 2, seed: 5)
        assertGGUFError(
            try file.dequantize(tensor, rows: 3..<5), code: .rowsOutOfRange,
            mentions: ["tensor 't'", "rows 3..<5 are outside the tensor's rows 0..<4"])
        assertGGUFError(try file.dequantize(tensor, rows: -1..<1), code: .rowsOutOfRange)
        XCTAssertEqual(try file.dequantize(tensor, rows: 4..<4), [])
    }

    func testRowsMatchTheWholeTensor() throws {
        for (i, type) in GGMLType.supported.enumerated() {
            let (file, tensor) = try randomTensorFile(type, rows: 5, blocksPerRow: 2, seed: UInt64(i))
            let whole = try file.dequantize(tensor)
            XCTAssertEqual(whole.count, tensor.elementCount)
            for rows in [0..<1, 2..<5, 4..<5] {
                let part = try file.dequantize(tensor, rows: rows)
                let slice = Array(whole[(rows.lowerBound * tensor.rowLength)..<(rows.upperBound * tensor.rowLength)])
                XCTAssertEqual(bitPatterns(part), bitPatterns(slice), "\(type.name) rows \(rows)")
            }
        }
    }

    func testHandWrittenBlocks() throws {
        // Q8_0: d = 0.5, codes -128, -1, 0, 127, …
        var q8 = halfBytes(0.5) + [0x80, 0xFF, 0x00, 0x7F]
        q8 += [UInt8](repeating: 2, count: 28)
        // Q4_1: d = 2, m = -1; byte j = j | (15 - j) << 4: weights j → 2j - 1, j + 16 → 2(15 - j) - 1.
        let q41 = halfBytes(2) + halfBytes(-1) + (0..<16).map { UInt8($0) | UInt8(15 - $0) << 4 }
        // Q4_0: d = 0.25; every byte 0x80: low nibble 0 → -8 · 0.25, high nibble 8 → 0.
        let q40 = halfBytes(0.25) + [UInt8](repeating: 0x80, count: 16)
        let file = try GGUFFile(
            bytes: makeGGUF(tensors: [
                TestTensor(name: "q8", dimensions: [32], type: .q8_0, data: q8),
                TestTensor(name: "q41", dimensions: [32], type: .q4_1, data: q41),
                TestTensor(name: "q40", dimensions: [32], type: .q4_0, data: q40),
            ]))
        XCTAssertEqual(try file.dequantize(file.tensors[0]), [-64, -0.5, 0, 63.5] + [Float](repeating: 1, count: 28))
        XCTAssertEqual(
            try file.dequantize(file.tensors[1]),
            (0..<16).map { Float(2 * $0 - 1) } + (0..<16).map { Float(2 * (15 - $0) - 1) })
        XCTAssertEqual(
            try file.dequantize(file.tensors[2]), [Float](repeating: -2, count: 16) + [Float](repeating: 0, count: 16))
    }

    func testKQuantScaleUnpacking() {
        // Bytes 0–3: scales 0–3 low 6 bits, top 2 bits = top of scales 4–7; bytes 4–7 likewise
        // for minimums; bytes 8–11: low nibbles of scales 4–7, high nibbles of minimums 4–7.
        let packed: [UInt8] = [
            0b01_000001, 0b10_000010, 0b11_000011, 0b00_111111, 0b11_000101, 0b00_000110, 0b01_000111, 0b10_001000,
            0x9A, 0x0F, 0xF0, 0x55,
        ]
        let expected: [(Float, Float)] = [
            (1, 5), (2, 6), (3, 7), (63, 8), (0x1A, 0x39), (0x2F, 0x00), (0x30, 0x1F), (0x05, 0x25),
        ]
        packed.withUnsafeBytes { raw in
            guard let base = raw.baseAddress else { return }
            for (j, (scale, minimum)) in expected.enumerated() {
                let unpacked = BlockQ4_K.scaleAndMinimum(base, j)
                XCTAssertEqual(unpacked.scale, scale, "scale \(j)")
                XCTAssertEqual(unpacked.minimum, minimum, "minimum \(j)")
            }
        }
    }
}
