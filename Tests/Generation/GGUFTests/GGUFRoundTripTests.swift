import Foundation
import GGUF
import TestSupport
import XCTest

/// Files written by the test writer read back the same: every value type, nested arrays, both
/// versions, any alignment.
final class GGUFRoundTripTests: XCTestCase {
    /// One value of every type, arrays of every element type (empty ones included), and arrays of
    /// arrays of different element types nested three deep.
    static let everyValue: [(String, GGUFValue)] = [
        ("general.architecture", .string("llama")),
        ("u8", .uint8(255)), ("i8", .int8(-128)), ("u16", .uint16(65535)), ("i16", .int16(-32768)),
        ("u32", .uint32(4_294_967_295)), ("i32", .int32(-2_147_483_648)), ("f32", .float32(-1.5e-7)),
        ("bool.true", .bool(true)), ("bool.false", .bool(false)),
        ("text", .string("naïve ☕ 日本 \u{0}end")), ("empty.text", .string("")),
        ("u64", .uint64(.max)), ("i64", .int64(.min)), ("f64", .float64(-2.2250738585072014e-308)),
        ("a.u8", .array(.uint8([0, 1, 255]))), ("a.i8", .array(.int8([-1, 127]))),
        ("a.u16", .array(.uint16([7]))), ("a.i16", .array(.int16([-7, 8]))),
        ("a.u32", .array(.uint32([1, 2, 3]))), ("a.i32", .array(.int32([-1]))),
        ("a.f32", .array(.float32([0.25, -.infinity]))), ("a.bool", .array(.bool([true, false, true]))),
        ("a.string", .array(.string(["Ġthe", "", "<|im_end|>"]))), ("a.u64", .array(.uint64([.max, 0]))),
        ("a.i64", .array(.int64([.min]))), ("a.f64", .array(.float64([1e300]))),
        ("a.empty.u32", .array(.uint32([]))), ("a.empty.string", .array(.string([]))),
        (
            "a.nested",
            .array(.array([.uint8([1]), .string(["x", "y"]), .array([.float64([2]), .array([])]), .bool([])]))
        ),
    ]

    func testEveryValueTypeRoundTripsInBothVersions() throws {
        for version: UInt32 in [2, 3] {
            let file = try GGUFFile(bytes: makeGGUF(version: version, metadata: Self.everyValue))
            XCTAssertEqual(file.version, version)
            XCTAssertEqual(file.metadata.keys, Self.everyValue.map(\.0), "file order")
            for (key, value) in Self.everyValue {
                XCTAssertEqual(file.metadata[key], value, "v\(version) \(key)")
                XCTAssertEqual(file.metadata[key]?.type, value.type)
            }
            let offsets = file.metadata.entries.map(\.offset)
            XCTAssertEqual(offsets.first, 24, "the first entry follows the 24-byte header")
            XCTAssertEqual(offsets, offsets.sorted())
            XCTAssertTrue(file.tensors.isEmpty)
        }
    }

    func testFloatValuesKeepTheirBits() throws {
        let nan32 = Float(bitPattern: 0xFFC0_1234)
        let nan64 = Double(bitPattern: 0x7FF0_0000_0000_0001)
        let file = try GGUFFile(
            bytes: makeGGUF(metadata: [
                ("nan32", .float32(nan32)), ("nan64", .float64(nan64)), ("zero", .float32(-0.0)),
                ("nans", .array(.float32([nan32]))),
            ]))
        guard case .float32(let a)? = file.metadata["nan32"], case .float64(let b)? = file.metadata["nan64"],
            case .float32(let z)? = file.metadata["zero"], case .array(.float32(let c))? = file.metadata["nans"]
        else { return XCTFail("wrong types: \(file.metadata.entries)") }
        XCTAssertEqual(a.bitPattern, nan32.bitPattern)
        XCTAssertEqual(b.bitPattern, nan64.bitPattern)
        XCTAssertEqual(z.bitPattern, (-0.0 as Float).bitPattern)
        XCTAssertEqual(c.map(\.bitPattern), [nan32.bitPattern])
    }

    func testArraysNestedToTheLimitRead() throws {
        var value = GGUFArray.uint8([42])
        for _ in 1..<GGUFFile.maximumArrayDepth { value = .array([value]) }
        let file = try GGUFFile(bytes: makeGGUF(metadata: [("deep", .array(value))]))
        XCTAssertEqual(file.metadata["deep"], .array(value))
    }

    func testAlignmentValuesPlaceTheData() throws {
        for alignment in [1, 2, 8, 32, 64, 256, 4096] {
            let tensors = [
                TestTensor(name: "a", dimensions: [3], type: .f32, data: f32Bytes([1, 2, 3])),
                TestTensor(name: "b", dimensions: [2], type: .f32, data: f32Bytes([4, 5])),
            ]
            let bytes = makeGGUF(metadata: [("general.alignment", .uint32(UInt32(alignment)))], tensors: tensors)
            let file = try GGUFFile(bytes: bytes)
            XCTAssertEqual(file.alignment, alignment)
            XCTAssertEqual(file.dataOffset % alignment, 0, "alignment \(alignment)")
            XCTAssertEqual(file.tensors.map(\.offset), [0, (12 + alignment - 1) / alignment * alignment])
            XCTAssertEqual(try file.dequantize(file.tensors[0]), [1, 2, 3])
            XCTAssertEqual(try file.dequantize(file.tensors[1]), [4, 5])
            let raw = file.withTensorBytes(file.tensors[1]) { Array($0) }
            XCTAssertEqual(raw, f32Bytes([4, 5]))
        }
    }

    func testAlignmentDefaultsTo32AndAcceptsAnyIntegerType() throws {
        let tensor = TestTensor(name: "x", dimensions: [1], type: .f32, data: f32Bytes([7]))
        XCTAssertEqual(try GGUFFile(bytes: makeGGUF(tensors: [tensor])).alignment, 32)
        for value: GGUFValue in [.uint64(16), .int32(16), .uint8(16)] {
            let file = try GGUFFile(bytes: makeGGUF(metadata: [("general.alignment", value)], tensors: [tensor]))
            XCTAssertEqual(file.alignment, 16, "\(value)")
            XCTAssertEqual(try file.dequantize(file.tensors[0]), [7])
        }
    }

    func testTensorInfoDerivedCounts() throws {
        // Hugging Face [out 192, in 576] is ne = [576, 192]: 192 rows of 576.
        let q41 = TestTensor(
            name: "w", dimensions: [576, 192], type: .q4_1, data: [UInt8](repeating: 0, count: 18 * 20 * 192))
        let cube = TestTensor(
            name: "cube", dimensions: [32, 3, 2], type: .q8_0, data: [UInt8](repeating: 0, count: 6 * 34))
        let scalar = TestTensor(name: "scalar", dimensions: [], type: .f32, data: f32Bytes([9]))
        let empty = TestTensor(name: "empty", dimensions: [0, 5], type: .f16, data: [])
        let file = try GGUFFile(bytes: makeGGUF(tensors: [q41, cube, scalar, empty]))
        let w = try XCTUnwrap(file.tensor(named: "w"))
        XCTAssertEqual(w.dimensions, [576, 192])
        XCTAssertEqual(w.type, .q4_1)
        XCTAssertEqual(w.elementCount, 576 * 192)
        XCTAssertEqual(w.rowLength, 576)
        XCTAssertEqual(w.rowCount, 192)
        XCTAssertEqual(w.rowByteCount, 18 * 20)
        XCTAssertEqual(w.byteCount, 18 * 20 * 192)
        XCTAssertEqual(w.description, "w Q4_1 [576, 192]")
        let c = try XCTUnwrap(file.tensor(named: "cube"))
        XCTAssertEqual([c.rowLength, c.rowCount, c.elementCount, c.byteCount], [32, 6, 192, 204])
        let s = try XCTUnwrap(file.tensor(named: "scalar"))
        XCTAssertEqual([s.rowLength, s.rowCount, s.elementCount, s.byteCount], [1, 1, 1, 4])
        XCTAssertEqual(try file.dequantize(s), [9])
        let e = try XCTUnwrap(file.tensor(named: "empty"))
        XCTAssertEqual([e.rowLength, e.rowCount, e.elementCount, e.byteCount], [0, 5, 0, 0])
        XCTAssertEqual(try file.dequantize(e), [])
        XCTAssertEqual(file.tensors.map(\.name), ["w", "cube", "scalar", "empty"], "file order")
        XCTAssertNil(file.tensor(named: "missing"))
    }

    func testMetadataAccessorsReturnNilWhenAbsentAndConvert() throws {
        let file = try GGUFFile(bytes: makeGGUF(metadata: Self.everyValue))
        let m = file.metadata
        XCTAssertNil(try m.string("absent"))
        XCTAssertNil(try m.integer("absent"))
        XCTAssertNil(try m.float("absent"))
        XCTAssertNil(try m.bool("absent"))
        XCTAssertNil(try m.strings("absent"))
        XCTAssertNil(try m.integers("absent"))
        XCTAssertNil(try m.floats("absent"))
        XCTAssertNil(m["absent"])
        XCTAssertEqual(try m.string("general.architecture"), "llama")
        XCTAssertEqual(try m.integer("u8"), 255)
        XCTAssertEqual(try m.integer("i8"), -128)
        XCTAssertEqual(try m.integer("u16"), 65535)
        XCTAssertEqual(try m.integer("i16"), -32768)
        XCTAssertEqual(try m.integer("u32"), 4_294_967_295)
        XCTAssertEqual(try m.integer("i32"), -2_147_483_648)
        XCTAssertEqual(try m.integer("i64"), Int(Int64.min))
        XCTAssertEqual(try m.float("f32"), Double(Float(-1.5e-7)))
        XCTAssertEqual(try m.float("f64"), -2.2250738585072014e-308)
        XCTAssertEqual(try m.bool("bool.true"), true)
        XCTAssertEqual(try m.bool("bool.false"), false)
        XCTAssertEqual(try m.strings("a.string"), ["Ġthe", "", "<|im_end|>"])
        XCTAssertEqual(try m.strings("a.empty.string"), [])
        XCTAssertEqual(try m.integers("a.u8"), [0, 1, 255])
        XCTAssertEqual(try m.integers("a.i16"), [-7, 8])
        XCTAssertEqual(try m.integers("a.i64"), [Int(Int64.min)])
        XCTAssertEqual(try m.integers("a.empty.u32"), [])
        XCTAssertEqual(try m.floats("a.f32"), [0.25, -.infinity])
        XCTAssertEqual(try m.floats("a.f64"), [1e300])
        XCTAssertEqual(m["a.nested"]?.arrayValue?[1], .array(.string(["x", "y"])))
        XCTAssertEqual(m.count, Self.everyValue.count)
    }

    func testMetadataAccessorsThrowOnTheWrongType() throws {
        let file = try GGUFFile(bytes: makeGGUF(metadata: Self.everyValue))
        let m = file.metadata
        assertGGUFError(
            try m.string("u32"), code: .typeMismatch, mentions: ["key 'u32'", "expected string", "uint32 4294967295"])
        assertGGUFError(try m.integer("text"), code: .typeMismatch, mentions: ["key 'text'", "expected an integer"])
        assertGGUFError(try m.integer("u64"), code: .typeMismatch, mentions: ["18446744073709551615", "fits in Int"])
        assertGGUFError(try m.integer("f32"), code: .typeMismatch, mentions: ["float32"])
        assertGGUFError(try m.float("u32"), code: .typeMismatch, mentions: ["expected float32 or float64"])
        assertGGUFError(try m.bool("u8"), code: .typeMismatch, mentions: ["expected bool", "uint8 255"])
        assertGGUFError(
            try m.strings("a.u32"), code: .typeMismatch, mentions: ["array of string", "array of 3 uint32"])
        assertGGUFError(try m.strings("text"), code: .typeMismatch, mentions: ["array of string"])
        assertGGUFError(try m.integers("a.string"), code: .typeMismatch, mentions: ["key 'a.string'"])
        assertGGUFError(try m.integers("a.u64"), code: .typeMismatch, mentions: ["fit in Int"])
        assertGGUFError(try m.floats("a.i32"), code: .typeMismatch, mentions: ["array of float32 or float64"])
        let error = assertGGUFError(try m.string("u32"), code: .typeMismatch)
        XCTAssertEqual(error?.path, "<memory>")
        XCTAssertEqual(error?.offset, m.entries.first { $0.key == "u32" }?.offset)
        XCTAssertEqual(error?.subject, "key 'u32'")
    }

    func testPythonWrittenFileReads() throws {
        let file = try GGUFFile(contentsOf: TestFixtures.folder.appendingPathComponent("gguf/types.gguf"))
        let m = file.metadata
        XCTAssertEqual(file.version, 3)
        XCTAssertEqual(file.alignment, 64)
        XCTAssertEqual(try m.string("general.architecture"), "test")
        XCTAssertEqual(m["test.uint8"], .uint8(200))
        XCTAssertEqual(m["test.int8"], .int8(-100))
        XCTAssertEqual(m["test.uint16"], .uint16(60000))
        XCTAssertEqual(m["test.int16"], .int16(-30000))
        XCTAssertEqual(m["test.uint32"], .uint32(4_000_000_000))
        XCTAssertEqual(m["test.int32"], .int32(-2_000_000_000))
        XCTAssertEqual(m["test.float32"], .float32(3.5))
        XCTAssertEqual(m["test.bool"], .bool(true))
        XCTAssertEqual(m["test.string"], .string("h\u{e9}llo \u{2713}"))
        XCTAssertEqual(m["test.uint64"], .uint64(1 << 63 + 5))
        XCTAssertEqual(m["test.int64"], .int64(-(1 << 62)))
        XCTAssertEqual(m["test.float64"], .float64(3.141592653589793))
        XCTAssertEqual(m["test.strings"], .array(.string(["a", "", "\u{fc}\u{df}"])))
        XCTAssertEqual(m["test.int32s"], .array(.int32([1, -2, 3])))
        XCTAssertEqual(m["test.float32s"], .array(.float32([0.5, -1.25])))
        XCTAssertEqual(m["test.nested"], .array(.array([.int32([1, 2]), .int32([3])])))
        XCTAssertEqual(
            file.tensors.map(\.name),
            [
                "f32", "f16", "bf16", "q4_0", "q4_1", "q8_0", "q4_k", "q5_k", "q6_k", "q5_0", "q5_1", "q2_k", "q3_k",
                "iq4_nl", "iq4_xs",
            ])
        XCTAssertTrue(file.tensors.allSatisfy { $0.offset % 64 == 0 })
    }

    func testContentsOfURLReadsTheSameAsBytes() throws {
        let tensors = [
            TestTensor(name: "x", dimensions: [4, 2], type: .f32, data: f32Bytes([1, 2, 3, 4, 5, 6, 7, 8]))
        ]
        let bytes = makeGGUF(metadata: Self.everyValue, tensors: tensors)
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("gguf-\(UUID().uuidString).gguf")
        try Data(bytes).write(to: url)
        defer { try? FileManager.default.removeItem(at: url) }
        let mapped = try GGUFFile(contentsOf: url)
        let copied = try GGUFFile(bytes: bytes)
        XCTAssertEqual(mapped.path, url.path)
        XCTAssertEqual(mapped.byteCount, bytes.count)
        XCTAssertEqual(mapped.metadata.entries, copied.metadata.entries)
        XCTAssertEqual(mapped.tensors, copied.tensors)
        XCTAssertEqual(try mapped.dequantize(mapped.tensors[0], rows: 1..<2), [5, 6, 7, 8])
    }

    func testFilesThatCannotBeMappedAreIOErrors() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("gguf-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        assertGGUFError(
            try GGUFFile(contentsOf: folder.appendingPathComponent("missing.gguf")), code: .io,
            mentions: ["missing.gguf", "cannot open"])
        assertGGUFError(try GGUFFile(contentsOf: folder), code: .io, mentions: ["not a regular file"])
        // A FIFO without a writer: refused at once rather than waiting for one.
        let fifo = folder.appendingPathComponent("fifo")
        XCTAssertEqual(mkfifo(fifo.path, 0o600), 0)
        assertGGUFError(try GGUFFile(contentsOf: fifo), code: .io, mentions: ["not a regular file"])
        let empty = folder.appendingPathComponent("empty.gguf")
        XCTAssertTrue(FileManager.default.createFile(atPath: empty.path, contents: Data()))
        assertGGUFError(try GGUFFile(contentsOf: empty), code: .truncated, mentions: ["empty.gguf", "byte 0"])
    }
}
