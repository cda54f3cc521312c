import BertEncoder
import Foundation
import ModelTestSupport
import TestSupport
import XCTest

/// Every malformed safetensors file is a typed error; valid ones read back exactly.
final class SafetensorsTests: XCTestCase {
    var folder: URL!

    override func setUpWithError() throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("safetensors-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws { try? FileManager.default.removeItem(at: folder) }

    /// A file with the given header JSON and data bytes.
    func file(header: String, data: [UInt8] = [], declaredLength: UInt64? = nil) throws -> URL {
        var bytes = [UInt8]()
        let json = Array(header.utf8)
        withUnsafeBytes(of: (declaredLength ?? UInt64(json.count)).littleEndian) { bytes.append(contentsOf: $0) }
        bytes += json + data
        let url = folder.appendingPathComponent("\(UUID()).safetensors")
        try Data(bytes).write(to: url)
        return url
    }

    func floatBytes(_ values: [Float]) -> [UInt8] {
        values.flatMap { v in withUnsafeBytes(of: v.bitPattern.littleEndian) { Array($0) } }
    }

    func assertInvalid(_ url: URL, _ fragment: String, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertThrowsError(try SafetensorsFile(contentsOf: url), file: file, line: line) { error in
            guard case EncoderError.invalidSafetensors(_, let reason) = error else {
                return XCTFail("unexpected error \(error)", file: file, line: line)
            }
            XCTAssertTrue(
                reason.contains(fragment), "'\(reason)' does not mention '\(fragment)'", file: file, line: line)
        }
    }

    func testReadsF32F16AndBF16() throws {
        let f32 = floatBytes([1, -2.5, 3])
        let f16: [UInt8] = [0x00, 0x3C, 0x00, 0xC0, 0x00, 0x7C]  // 1, -2, +inf
        let bf16: [UInt8] = [0x80, 0x3F, 0x20, 0xC0]  // 1, -2.5
        let header =
            #"{"a":{"dtype":"F32","shape":[3],"data_offsets":[0,12]},"h":{"dtype":"F16","shape":[3],"data_offsets":[12,18]},"b":{"dtype":"BF16","shape":[2],"data_offsets":[18,22]},"__metadata__":{"format":"pt"}}"#
        let st = try SafetensorsFile(contentsOf: file(header: header, data: f32 + f16 + bf16))
        XCTAssertEqual(try st.floats("a", shape: [3]), [1, -2.5, 3])
        XCTAssertEqual(try st.floats("h", shape: [3]), [1, -2, .infinity])
        XCTAssertEqual(try st.floats("b", shape: [2]), [1, -2.5])
        XCTAssertEqual(st.metadata["format"], "pt")
        XCTAssertThrowsError(try st.floats("a", shape: [1, 3])) {
            guard case EncoderError.shapeMismatch = $0 else { return XCTFail("\($0)") }
        }
        XCTAssertThrowsError(try st.floats("missing", shape: [3])) {
            guard case EncoderError.missingTensor = $0 else { return XCTFail("\($0)") }
        }
    }

    func testTooShortForTheLengthField() throws {
        let url = folder.appendingPathComponent("tiny.safetensors")
        try Data([1, 2, 3]).write(to: url)
        assertInvalid(url, "fewer than the 8-byte")
    }

    func testHeaderLongerThanTheFile() throws {
        assertInvalid(try file(header: "{}", declaredLength: 1000), "exceeds the")
    }

    func testHeaderOverOneHundredMegabytes() throws {
        assertInvalid(try file(header: "{}", declaredLength: 200_000_000), "100 MB")
        assertInvalid(try file(header: "{}", declaredLength: UInt64.max), "100 MB")
    }

    func testHeaderNotJSONOrNotAnObject() throws {
        assertInvalid(try file(header: "not json"), "not valid JSON")
        assertInvalid(try file(header: "[1,2]"), "not a JSON object")
    }

    func testUnknownDtype() throws {
        assertInvalid(
            try file(header: #"{"x":{"dtype":"F8_E4M3","shape":[1],"data_offsets":[0,1]}}"#, data: [0]), "unknown dtype"
        )
    }

    func testOffsetsOutOfRange() throws {
        assertInvalid(
            try file(header: #"{"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}"#, data: [0, 0, 0, 0]), "outside")
        assertInvalid(
            try file(
                header: #"{"x":{"dtype":"F32","shape":[1],"data_offsets":[8,4]}}"#,
                data: [UInt8](repeating: 0, count: 8)), "outside")
        assertInvalid(
            try file(header: #"{"x":{"dtype":"F32","shape":[1],"data_offsets":[-4,0]}}"#, data: [0, 0, 0, 0]), "outside"
        )
    }

    func testOverlappingTensors() throws {
        let header =
            #"{"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"y":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}}"#
        assertInvalid(try file(header: header, data: [UInt8](repeating: 0, count: 12)), "overlap")
    }

    func testShapeDisagreesWithByteCount() throws {
        assertInvalid(
            try file(
                header: #"{"x":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}"#,
                data: [UInt8](repeating: 0, count: 8)), "needs 12")
        assertInvalid(
            try file(header: #"{"x":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}}"#, data: [0, 0, 0, 0]), "shape")
        assertInvalid(
            try file(
                header: #"{"x":{"dtype":"F32","shape":[4611686018427387904,4],"data_offsets":[0,4]}}"#,
                data: [0, 0, 0, 0]), "larger than the file")
    }

    func testMissingFields() throws {
        assertInvalid(try file(header: #"{"x":{"shape":[1],"data_offsets":[0,4]}}"#, data: [0, 0, 0, 0]), "no dtype")
        assertInvalid(try file(header: #"{"x":{"dtype":"F32","data_offsets":[0,4]}}"#, data: [0, 0, 0, 0]), "no shape")
        assertInvalid(try file(header: #"{"x":{"dtype":"F32","shape":[1]}}"#, data: [0, 0, 0, 0]), "data_offsets")
        assertInvalid(try file(header: #"{"x":5}"#), "not an object")
    }

    func testRealModelTruncatedAtManyPointsIsAlwaysATypedError() throws {
        let model = try TestModel.folder()
        let bytes = try Data(contentsOf: model.appendingPathComponent("model.safetensors"), options: .alwaysMapped)
        let cut = folder.appendingPathComponent("cut.safetensors")
        let config = try BertConfiguration(contentsOf: model.appendingPathComponent("config.json"))
        for length in [0, 7, 8, 100, 5_000, 90_000, 1_000_000, bytes.count - 1] {
            try bytes.prefix(length).write(to: cut)
            XCTAssertThrowsError(
                try BertWeights(file: SafetensorsFile(contentsOf: cut), configuration: config), "length \(length)"
            ) {
                XCTAssertTrue($0 is EncoderError, "length \(length): \($0)")
            }
        }
    }

    func testConfigurationErrors() throws {
        let url = folder.appendingPathComponent("config.json")
        try Data(#"{"vocab_size": 10}"#.utf8).write(to: url)
        XCTAssertThrowsError(try BertConfiguration(contentsOf: url))
        try Data(
            #"{"vocab_size":10,"hidden_size":10,"num_hidden_layers":1,"num_attention_heads":3,"intermediate_size":4,"max_position_embeddings":8,"type_vocab_size":1,"layer_norm_eps":1e-12,"hidden_act":"gelu"}"#
                .utf8
        ).write(to: url)
        XCTAssertThrowsError(try BertConfiguration(contentsOf: url)) { XCTAssertTrue("\($0)".contains("multiple")) }
        try Data(
            #"{"vocab_size":10,"hidden_size":12,"num_hidden_layers":1,"num_attention_heads":3,"intermediate_size":4,"max_position_embeddings":8,"type_vocab_size":1,"layer_norm_eps":1e-12,"hidden_act":"relu"}"#
                .utf8
        ).write(to: url)
        XCTAssertThrowsError(try BertConfiguration(contentsOf: url)) { XCTAssertTrue("\($0)".contains("relu")) }
    }

    func testForwardRejectsBadTokenIDsAndLongSequences() throws {
        let model = try BertModel(folder: TestModel.folder())
        XCTAssertThrowsError(try model.forward(tokenIDs: [[101, 30_522, 102]])) {
            XCTAssertEqual($0 as? EncoderError, .tokenOutOfRange(id: 30_522, vocabularySize: 30_522))
        }
        XCTAssertThrowsError(try model.forward(tokenIDs: [[101, -1]]))
        XCTAssertThrowsError(try model.forward(tokenIDs: [[Int](repeating: 100, count: 513)])) {
            XCTAssertEqual($0 as? EncoderError, .sequenceTooLong(length: 513, maximum: 512))
        }
        XCTAssertEqual(try model.forward(tokenIDs: [[]]).first?.rows, 0)
        XCTAssertEqual(try model.forward(tokenIDs: []).count, 0)
        let full = try model.forward(tokenIDs: [[Int](repeating: 1037, count: 512)])
        XCTAssertEqual(full[0].rows, 512)
        XCTAssertFalse(full[0].values.contains { !$0.isFinite })
    }

    /// `forwardOnCallingThread` (one thread, for callers that spread their own work) gives what
    /// `forward` (sequences spread over threads) gives, to float rounding (the groups stack differently).
    func testForwardOnCallingThreadEqualsForward() throws {
        let model = try BertModel(folder: TestModel.folder(), parallelism: 2)
        var batch = [[101, 102], [101] + Array(2000..<2187) + [102], [101, 7592, 1010, 2088, 102]]
        batch.append([101] + (0..<509).map { 1000 + ($0 * 37) % 20_000 } + [102])
        let spread = try model.forward(tokenIDs: batch)
        let serial = try model.forwardOnCallingThread(tokenIDs: batch)
        XCTAssertEqual(serial.map(\.rows), batch.map(\.count))
        for (i, (x, y)) in zip(serial, spread).enumerated() {
            XCTAssertFalse(x.values.contains { !$0.isFinite })
            assertClose(x.values, y.values, relative: 1e-5, absolute: 1e-5, "sequence \(i)")
        }
        XCTAssertThrowsError(try model.forwardOnCallingThread(tokenIDs: [[101, 30_522, 102]])) {
            XCTAssertEqual($0 as? EncoderError, .tokenOutOfRange(id: 30_522, vocabularySize: 30_522))
        }
    }
}
