import GGUF
import TestSupport
import XCTest

/// The default generation model, SmolLM2-135M-Instruct Q4_1 (see `TestModel`): its facts, and
/// slices of its tensors against the `gguf` Python package's dequantization.
final class GGUFModelFileTests: XCTestCase {
    struct ModelFixture: Decodable {
        struct Model: Decodable { var file: String, bytes: Int, sha256: String }
        struct Tensor: Decodable { var name: String, type: String, ne: [Int], rows: [Int], bits: [UInt32] }
        var model: Model
        var tensors: [Tensor]
    }

    func testDefaultModelFacts() throws {
        let file = try TestModel.file()
        let m = file.metadata
        XCTAssertEqual(file.byteCount, TestModel.byteCount)
        XCTAssertEqual(file.version, 3)
        XCTAssertEqual(file.alignment, 32)
        XCTAssertEqual(try m.string("general.architecture"), "llama")
        XCTAssertEqual(try m.integer("llama.block_count"), 30)
        XCTAssertEqual(try m.integer("llama.embedding_length"), 576)
        XCTAssertEqual(try m.integer("llama.attention.head_count"), 9)
        XCTAssertEqual(try m.integer("llama.attention.head_count_kv"), 3)
        XCTAssertEqual(try m.integer("llama.feed_forward_length"), 1536)
        XCTAssertEqual(try m.float("llama.rope.freq_base"), 100_000)
        XCTAssertEqual(try m.float("llama.attention.layer_norm_rms_epsilon"), Double(Float(1e-5)))
        XCTAssertEqual(try m.string("tokenizer.ggml.model"), "gpt2")
        XCTAssertEqual(try m.string("tokenizer.ggml.pre"), "smollm")
        XCTAssertEqual(try m.strings("tokenizer.ggml.tokens")?.count, 49152)
        XCTAssertEqual(try m.strings("tokenizer.ggml.merges")?.count, 48900)
        XCTAssertEqual(try m.integers("tokenizer.ggml.token_type")?.count, 49152)
        XCTAssertEqual(try m.bool("tokenizer.ggml.add_bos_token"), false)
        XCTAssertEqual(m.keys.first, "general.architecture", "file order")
        XCTAssertEqual(m.count, 33)
        XCTAssertEqual(file.tensors.count, 272)
        let byType = Dictionary(grouping: file.tensors, by: \.type).mapValues(\.count)
        XCTAssertEqual(byType, [.q4_1: 210, .f32: 61, .q8_0: 1])
        let embedding = try XCTUnwrap(file.tensor(named: "token_embd.weight"))
        XCTAssertEqual(embedding.dimensions, [576, 49152], "ne: 49152 rows of 576")
        XCTAssertEqual(embedding.type, .q8_0)
        XCTAssertEqual(embedding.rowCount, 49152)
        XCTAssertEqual(file.tensor(named: "blk.0.ffn_down.weight")?.dimensions, [1536, 576])
        XCTAssertEqual(file.tensor(named: "blk.29.attn_k.weight")?.dimensions, [576, 192])
        XCTAssertTrue(file.tensors.allSatisfy(\.type.isSupported))
    }

    func testDefaultModelSlicesMatchThePythonPackage() throws {
        let file = try TestModel.file()
        let fixture = try TestFixtures.decode(ModelFixture.self, from: "gguf/model.json")
        XCTAssertEqual(fixture.model.bytes, file.byteCount)
        XCTAssertEqual(Set(fixture.tensors.map(\.type)), ["Q8_0", "Q4_1", "F32"])
        for expected in fixture.tensors {
            let tensor = try XCTUnwrap(file.tensor(named: expected.name))
            XCTAssertEqual(tensor.type.name, expected.type)
            XCTAssertEqual(tensor.dimensions, expected.ne)
            var values = [Float]()
            for row in expected.rows { values += try file.dequantize(tensor, rows: row..<(row + 1)) }
            assertSameBits(values, expected.bits, "\(expected.name) rows \(expected.rows)")
        }
    }

    func testDefaultModelTensorsFastMatchesReference() throws {
        let file = try TestModel.file()
        for (name, rows) in [
            ("token_embd.weight", 0..<64), ("blk.0.attn_k.weight", 0..<192), ("output_norm.weight", 0..<1),
        ] {
            let tensor = try XCTUnwrap(file.tensor(named: name))
            var fast = [Float](repeating: 0, count: rows.count * tensor.rowLength)
            var reference = fast
            try fast.withUnsafeMutableBufferPointer {
                try file.dequantizeRows(tensor, rows: rows, into: $0.baseAddress!)
            }
            try reference.withUnsafeMutableBufferPointer {
                try file.dequantizeRows(tensor, rows: rows, into: $0.baseAddress!, kernel: .reference)
            }
            assertSameBits(fast, bitPatterns(reference), tensor.name)
            XCTAssertTrue(fast.allSatisfy(\.isFinite), tensor.name)
        }
    }
}
