import GGUF
import TestSupport
import XCTest

/// Truncated, corrupted and hostile files are typed errors naming what is wrong and where, never
/// a crash or a large allocation.
final class GGUFHostileFileTests: XCTestCase {
    /// A small valid file with strings, arrays, nested arrays, an alignment and two tensors.
    static var small: [UInt8] {
        var generator = SeededGenerator(seed: 7)
        return makeGGUF(
            metadata: [
                ("general.architecture", .string("llama")), ("general.alignment", .uint32(16)),
                ("tokens", .array(.string(["a", "bé", "<s>"]))),
                ("nested", .array(.array([.int32([1, 2]), .bool([true])]))),
                ("eps", .float32(1e-5)),
            ],
            tensors: [
                TestTensor(
                    name: "q", dimensions: [64], type: .q4_0, data: randomBlocks(.q4_0, count: 2, using: &generator)),
                TestTensor(name: "norm", dimensions: [3], type: .f32, data: f32Bytes([1, 2, 3])),
            ])
    }

    func testTruncationAtEveryOffsetIsAnError() throws {
        let bytes = Self.small
        let whole = try GGUFFile(bytes: bytes)
        XCTAssertEqual(try whole.dequantize(whole.tensors[1]), [1, 2, 3])
        for length in 0..<bytes.count {
            do {
                let file = try GGUFFile(bytes: Array(bytes.prefix(length)))
                XCTFail("a file cut to \(length) of \(bytes.count) bytes parsed: \(file.tensors)")
            } catch {
                XCTAssertTrue([.truncated, .invalidTensorLayout].contains(error.code), "cut to \(length): \(error)")
                XCTAssertTrue(error.description.hasPrefix("<memory>: byte "), "cut to \(length): \(error)")
            }
        }
    }

    func testTruncatedFieldsNameTheFieldAndTheShortfall() {
        let bytes = Self.small
        assertGGUFError(
            try GGUFFile(bytes: Array(bytes.prefix(6))), code: .truncated,
            mentions: ["byte 4", "version needs 4 bytes, 2 remain"])
        let key = makeGGUF(metadata: [("general.architecture", .string("llama"))])
        assertGGUFError(
            try GGUFFile(bytes: Array(key.prefix(40))), code: .truncated,
            mentions: ["byte 24", "key of metadata entry 0 length 20 needs at least 20 bytes, 8 remain"])
        assertGGUFError(
            try GGUFFile(bytes: Array(bytes.prefix(30))), code: .truncated,
            mentions: ["tensor count 2 needs at least 48 bytes"])
        assertGGUFError(
            try GGUFFile(bytes: Array(bytes.prefix(bytes.count - 1))), code: .invalidTensorLayout,
            mentions: ["tensor 'norm'", "past the end of the file"])
    }

    // MARK: - Huge declared sizes

    func testHugeCountsAndLengthsFailBeforeAllocating() {
        for count: UInt64 in [1 << 60, .max, UInt64(Int.max)] {
            var tensors = GGUFBuilder()
            tensors.appendHeader(tensors: count, entries: 0)
            assertGGUFError(
                try GGUFFile(bytes: tensors.bytes), code: .truncated,
                mentions: ["byte 8", "tensor count \(count)", "needs at least", "8 remain"])
            var entries = GGUFBuilder()
            entries.appendHeader(tensors: 0, entries: count)
            assertGGUFError(
                try GGUFFile(bytes: entries.bytes), code: .truncated, mentions: ["metadata entry count \(count)"])
        }
        var key = GGUFBuilder()
        key.appendHeader(tensors: 0, entries: 1)
        key.append(UInt64(1) << 60)
        key.append(bytes: Array("general".utf8))
        assertGGUFError(
            try GGUFFile(bytes: key.bytes), code: .truncated,
            mentions: ["key of metadata entry 0 length 1152921504606846976", "7 remain"])
        for type in GGUFValueType.allCases {
            var array = GGUFBuilder()
            array.appendHeader(tensors: 0, entries: 1)
            array.append(string: "huge")
            array.append(GGUFValueType.array.rawValue)
            array.append(type.rawValue)
            array.append(UInt64(1) << 60)
            array.append(bytes: [UInt8](repeating: 0, count: 40))
            assertGGUFError(
                try GGUFFile(bytes: array.bytes), code: .truncated,
                mentions: ["key 'huge'", "array length 1152921504606846976", "40 remain"])
        }
        var value = GGUFBuilder()
        value.appendHeader(tensors: 0, entries: 1)
        value.append(string: "name")
        value.append(GGUFValueType.string.rawValue)
        value.append(UInt64.max)
        assertGGUFError(
            try GGUFFile(bytes: value.bytes), code: .truncated,
            mentions: ["key 'name'", "string value length 18446744073709551615"])
        var name = GGUFBuilder()
        name.appendHeader(tensors: 1, entries: 0)
        name.append(UInt64(1) << 62)
        name.append(bytes: [UInt8](repeating: 0, count: 24))
        assertGGUFError(try GGUFFile(bytes: name.bytes), code: .truncated, mentions: ["name of tensor 0 length"])
    }

    func testNestedArraysOfHugeCountsFailFast() {
        // 12 bytes per inner array header: a count above remaining / 12 is refused at once.
        var builder = GGUFBuilder()
        builder.appendHeader(tensors: 0, entries: 1)
        builder.append(string: "outer")
        builder.append(GGUFValueType.array.rawValue)
        builder.append(GGUFValueType.array.rawValue)
        builder.append(UInt64(3))
        builder.append(bytes: [UInt8](repeating: 0, count: 35))
        assertGGUFError(
            try GGUFFile(bytes: builder.bytes), code: .truncated,
            mentions: ["array length 3", "needs at least 36 bytes, 35 remain"])
    }

    func testArraysNestedTooDeep() {
        var value = GGUFArray.uint8([])
        for _ in 0..<GGUFFile.maximumArrayDepth { value = .array([value]) }
        assertGGUFError(
            try GGUFFile(bytes: makeGGUF(metadata: [("deep", .array(value))])), code: .invalidMetadata,
            mentions: ["key 'deep'", "nested 17 deep", "16 allowed"])
    }

    // MARK: - Header

    func testWrongMagic() {
        var ggml = Self.small
        ggml.replaceSubrange(0..<4, with: Array("GGML".utf8))
        assertGGUFError(
            try GGUFFile(bytes: ggml), code: .notGGUF,
            mentions: ["byte 0", "expected the magic \"GGUF\", found \"GGML\""])
        assertGGUFError(
            try GGUFFile(bytes: [0x50, 0x4B, 0x03, 0x04, 0, 0]), code: .notGGUF, mentions: ["found \"PK\\x03\\x04\""])
        assertGGUFError(try GGUFFile(bytes: [0x47, 0x00]), code: .notGGUF, mentions: ["found \"G\\x00\""])
        assertGGUFError(try GGUFFile(bytes: [0x47, 0x47]), code: .truncated, mentions: ["magic"])
    }

    func testUnsupportedVersionsNameTheVersion() {
        for version: UInt32 in [0, 1, 4, 7, .max] {
            assertGGUFError(
                try GGUFFile(bytes: makeGGUF(version: version)), code: .unsupportedVersion,
                mentions: ["byte 4", "version \(version) is not supported; supported: 2, 3"])
        }
    }

    func testBigEndianFilesAreRefusedAsSuch() {
        for version: UInt32 in [2, 3] {
            assertGGUFError(
                try GGUFFile(bytes: makeGGUF(version: version.byteSwapped)), code: .bigEndian,
                mentions: ["big-endian", "\(version) byte-swapped", "only little-endian"])
        }
    }

    // MARK: - Metadata

    func testUnknownValueTypes() {
        var scalar = GGUFBuilder()
        scalar.appendHeader(tensors: 0, entries: 1)
        scalar.append(string: "odd")
        scalar.append(UInt32(13))
        scalar.append(UInt64(0))
        assertGGUFError(
            try GGUFFile(bytes: scalar.bytes), code: .invalidMetadata,
            mentions: ["byte 35", "key 'odd'", "unknown value type 13"])
        var element = GGUFBuilder()
        element.appendHeader(tensors: 0, entries: 1)
        element.append(string: "odd")
        element.append(GGUFValueType.array.rawValue)
        element.append(UInt32.max)
        element.append(UInt64(0))
        assertGGUFError(
            try GGUFFile(bytes: element.bytes), code: .invalidMetadata,
            mentions: ["unknown array element type 4294967295"])
    }

    func testBoolsOtherThanZeroOrOne() {
        var scalar = GGUFBuilder()
        scalar.appendHeader(tensors: 0, entries: 1)
        scalar.append(string: "flag")
        scalar.append(GGUFValueType.bool.rawValue)
        scalar.append(UInt8(2))
        assertGGUFError(
            try GGUFFile(bytes: scalar.bytes), code: .invalidMetadata,
            mentions: ["key 'flag'", "bool value is 2, expected 0 or 1"])
        var array = GGUFBuilder()
        array.appendHeader(tensors: 0, entries: 1)
        array.append(string: "flags")
        array.append(GGUFValueType.array.rawValue)
        array.append(GGUFValueType.bool.rawValue)
        array.append(UInt64(3))
        array.append(bytes: [1, 0, 255])
        assertGGUFError(try GGUFFile(bytes: array.bytes), code: .invalidMetadata, mentions: ["array element 2 is 255"])
    }

    func testTextThatIsNotUTF8() {
        let invalid: [UInt8] = [0x61, 0xC3, 0x28]
        var key = GGUFBuilder()
        key.appendHeader(tensors: 0, entries: 1)
        key.append(stringBytes: invalid)
        key.append(GGUFValueType.uint8.rawValue)
        key.append(UInt8(0))
        assertGGUFError(
            try GGUFFile(bytes: key.bytes), code: .invalidMetadata,
            mentions: ["byte 24", "key of metadata entry 0 is not valid UTF-8"])
        var value = GGUFBuilder()
        value.appendHeader(tensors: 0, entries: 1)
        value.append(string: "tokens")
        value.append(GGUFValueType.array.rawValue)
        value.append(GGUFValueType.string.rawValue)
        value.append(UInt64(2))
        value.append(string: "ok")
        value.append(stringBytes: invalid)
        assertGGUFError(
            try GGUFFile(bytes: value.bytes), code: .invalidMetadata,
            mentions: ["key 'tokens'", "array element 1 is not valid UTF-8"])
        var name = GGUFBuilder()
        name.appendHeader(tensors: 1, entries: 0)
        name.appendTensorInfo(name: "x", dimensions: [1], type: 0, offset: 0)
        var bytes = name.bytes
        bytes[32] = 0xFF  // the name's one byte
        assertGGUFError(
            try GGUFFile(bytes: bytes), code: .invalidMetadata, mentions: ["name of tensor 0 is not valid UTF-8"])
    }

    func testDuplicateKeys() {
        let bytes = makeGGUF(metadata: [("a", .uint8(1)), ("b", .uint8(2)), ("a", .string("again"))])
        assertGGUFError(
            try GGUFFile(bytes: bytes), code: .invalidMetadata,
            mentions: ["byte 52", "key 'a'", "duplicate key (first at byte 24)"])
    }

    func testBadAlignments() {
        let tensor = TestTensor(name: "x", dimensions: [1], type: .f32, data: f32Bytes([1]))
        for value: GGUFValue in [
            .uint32(0), .uint32(3), .uint32(48), .int32(-32), .uint64(1 << 63), .float32(32), .string("32"),
            .bool(true),
        ] {
            var builder = GGUFBuilder()
            builder.appendHeader(tensors: 1, entries: 1)
            builder.append(key: "general.alignment", value)
            builder.appendTensorInfo(name: "x", dimensions: [1], type: 0, offset: 0)
            builder.pad(to: 32)
            builder.append(bytes: tensor.data)
            assertGGUFError(
                try GGUFFile(bytes: builder.bytes), code: .invalidMetadata,
                mentions: [
                    "byte 24", "key 'general.alignment'", "expected a power of two above zero, found \(value.type)",
                ])
        }
    }

    // MARK: - Tensor infos

    /// A file with one tensor info as given, followed by `dataBytes` zero bytes of data.
    func file(dimensions: [UInt64], type: UInt32, offset: UInt64 = 0, dataBytes: Int = 64, name: String = "t")
        -> [UInt8]
    {
        var builder = GGUFBuilder()
        builder.appendHeader(tensors: 1, entries: 0)
        builder.appendTensorInfo(name: name, dimensions: dimensions, type: type, offset: offset)
        builder.pad(to: 32)
        builder.append(bytes: [UInt8](repeating: 0, count: dataBytes))
        return builder.bytes
    }

    func testUnknownTensorTypesNameTheNumber() {
        for id: UInt32 in [4, 5, 31, 33, 36, 38, 42, 1000, .max] {
            assertGGUFError(
                try GGUFFile(bytes: file(dimensions: [1], type: id)), code: .unknownTensorType,
                mentions: ["tensor 't'", "type id \(id) is not a ggml type"])
        }
    }

    func testTooManyDimensions() {
        assertGGUFError(
            try GGUFFile(bytes: file(dimensions: [1, 1, 1, 1, 1], type: 0)), code: .invalidTensorInfo,
            mentions: ["byte 33", "tensor 't'", "5 dimensions, at most 4 allowed"])
    }

    func testDimensionsThatOverflow() {
        assertGGUFError(
            try GGUFFile(bytes: file(dimensions: [.max], type: 0)), code: .invalidTensorInfo,
            mentions: ["dimension 0 is 18446744073709551615, more than 2^63 - 1"])
        assertGGUFError(
            try GGUFFile(bytes: file(dimensions: [32, 1 << 62, 4], type: 8)), code: .invalidTensorInfo,
            mentions: ["overflow", "more than 2^63 rows"])
        assertGGUFError(
            try GGUFFile(bytes: file(dimensions: [1 << 40, 1 << 40], type: 0)), code: .invalidTensorInfo,
            mentions: ["dimensions [1099511627776, 1099511627776] of F32 overflow"])
        // 2^62 elements fit; their 2^64 bytes do not.
        assertGGUFError(
            try GGUFFile(bytes: file(dimensions: [1 << 62], type: 0)), code: .invalidTensorInfo,
            mentions: ["of F32 overflow"])
        // A zero dimension does not hide an overflow in the others.
        assertGGUFError(
            try GGUFFile(bytes: file(dimensions: [0, 1 << 40, 1 << 40], type: 0)), code: .invalidTensorInfo,
            mentions: ["more than 2^63 rows"])
        // Large but representable: refused because the data is not in the file.
        assertGGUFError(
            try GGUFFile(bytes: file(dimensions: [1 << 20, 1 << 20], type: 0)), code: .invalidTensorLayout,
            mentions: ["4398046511104 bytes of F32", "past the end of the file"])
    }

    func testRowLengthNotAMultipleOfTheBlockSize() {
        assertGGUFError(
            try GGUFFile(bytes: file(dimensions: [48, 2], type: GGMLType.q4_0.rawValue)), code: .invalidTensorInfo,
            mentions: ["tensor 't'", "row length 48 is not a multiple of Q4_0's block size 32"])
        assertGGUFError(
            try GGUFFile(bytes: file(dimensions: [], type: GGMLType.q6_K.rawValue)), code: .invalidTensorInfo,
            mentions: ["row length 1 is not a multiple of Q6_K's block size 256"])
    }

    func testMisalignedOffsets() {
        assertGGUFError(
            try GGUFFile(bytes: file(dimensions: [4], type: 0, offset: 16)), code: .invalidTensorLayout,
            mentions: ["byte 24", "tensor 't'", "data offset 16 is not a multiple of the alignment 32"])
    }

    func testOffsetsOutOfRange() {
        assertGGUFError(
            try GGUFFile(bytes: file(dimensions: [4], type: 0, offset: .max)), code: .invalidTensorLayout,
            mentions: ["data offset 18446744073709551615 is more than 2^63 - 1"])
        assertGGUFError(
            try GGUFFile(bytes: file(dimensions: [4], type: 0, offset: UInt64(Int.max) - 31)),
            code: .invalidTensorLayout,
            mentions: ["beyond 2^63", "past the end"])
        assertGGUFError(
            try GGUFFile(bytes: file(dimensions: [17], type: 0, dataBytes: 64)), code: .invalidTensorLayout,
            mentions: ["68 bytes of F32 data at file offset 64 + 0 end at 132, past the end of the file at 128"])
        assertGGUFError(
            try GGUFFile(bytes: file(dimensions: [1], type: 0, offset: 64, dataBytes: 64)), code: .invalidTensorLayout,
            mentions: ["past the end"])
    }

    func testOverlappingTensors() {
        var builder = GGUFBuilder()
        builder.appendHeader(tensors: 3, entries: 0)
        builder.appendTensorInfo(name: "a", dimensions: [16], type: 0, offset: 0)
        builder.appendTensorInfo(name: "empty", dimensions: [0], type: 0, offset: 32)
        builder.appendTensorInfo(name: "b", dimensions: [8], type: 0, offset: 32)
        builder.pad(to: 32)
        builder.append(bytes: [UInt8](repeating: 0, count: 96))
        assertGGUFError(
            try GGUFFile(bytes: builder.bytes), code: .invalidTensorLayout,
            mentions: ["tensor 'b'", "overlaps tensor 'a'"])
    }

    func testDuplicateTensorNames() {
        let tensor = TestTensor(name: "w", dimensions: [1], type: .f32, data: f32Bytes([1]))
        assertGGUFError(
            try GGUFFile(bytes: makeGGUF(tensors: [tensor, tensor])), code: .invalidTensorInfo,
            mentions: ["byte 57", "tensor 'w'", "duplicate tensor name (first described at byte 24)"])
    }

    func testErrorDescriptionLayout() {
        let error = GGUFError(.truncated, path: "m.gguf", offset: 12, subject: "key 'k'", detail: "what")
        XCTAssertEqual(error.description, "m.gguf: byte 12: key 'k': what (truncated)")
        XCTAssertEqual(error.localizedDescription, "m.gguf: byte 12: key 'k': what (truncated)")
        XCTAssertEqual(GGUFError(.io, path: "m.gguf", detail: "cannot open").description, "m.gguf: cannot open (io)")
        XCTAssertEqual(GGUFError.Code.nonFiniteScale.description, "nonFiniteScale")
        XCTAssertNotEqual(GGUFError.Code.truncated, GGUFError.Code.io)
    }
}
