import LinearAlgebra
import XCTest

@testable import BertEncoder

/// Quantizing a layer's projections: what is kept, what is dropped, and the errors.
final class Int8LayerTests: XCTestCase {
    func linear(out: Int, in inputs: Int, seed: Int) -> LinearWeights {
        LinearWeights(
            weight: (0..<(out * inputs)).map { Float(sin(Double($0 * 7 + seed))) },
            bias: (0..<out).map { Float($0) / 10 },
            inputSize: inputs, outputSize: out)
    }

    func layer(h: Int = 8, i: Int = 16) -> BertLayerWeights {
        let norm = LayerNormWeights(gamma: [Float](repeating: 1, count: h), beta: [Float](repeating: 0, count: h))
        return BertLayerWeights(
            queryKeyValue: linear(out: 3 * h, in: h, seed: 1), attentionOutput: linear(out: h, in: h, seed: 2),
            attentionLayerNorm: norm, intermediate: linear(out: i, in: h, seed: 3),
            output: linear(out: h, in: i, seed: 4),
            outputLayerNorm: norm)
    }

    func testInt8ReplacesTheFloatWeightsAndKeepsTheBias() throws {
        let float = layer()
        let int8 = try float.with(.int8, path: "test")
        for (a, b) in [
            (float.queryKeyValue, int8.queryKeyValue), (float.attentionOutput, int8.attentionOutput),
            (float.intermediate, int8.intermediate), (float.output, int8.output),
        ] {
            XCTAssertTrue(b.weight.isEmpty)
            XCTAssertEqual(b.bias, a.bias)
            let q = try XCTUnwrap(b.int8Weight)
            XCTAssertEqual(q.outputSize, a.outputSize)
            XCTAssertEqual(q.inputSize, a.inputSize)
            XCTAssertLessThan(b.byteCount, a.byteCount)
        }
        // Quantizing twice changes nothing; float32 keeps a float layer as it is.
        XCTAssertEqual(
            try int8.with(.int8, path: "test").queryKeyValue.int8Weight?.columnSums,
            int8.queryKeyValue.int8Weight?.columnSums)
        XCTAssertEqual(try float.with(.float32, path: "test").output.weight, float.output.weight)
    }

    func testANonFiniteWeightIsATypedError() {
        var bad = layer()
        bad.intermediate.weight[5] = .nan
        XCTAssertThrowsError(try bad.with(.int8, path: "model.safetensors layer 3")) { error in
            guard case EncoderError.invalidConfiguration(let path, let reason) = error else {
                return XCTFail("\(error)")
            }
            XCTAssertEqual(path, "model.safetensors layer 3")
            XCTAssertTrue(reason.contains("intermediate") && reason.contains("not finite"), reason)
        }
    }

    func testInt8WeightsCannotBeUsedAsFloat32() throws {
        let int8 = try layer().with(.int8, path: "test")
        XCTAssertThrowsError(try int8.with(.float32, path: "test")) { error in
            XCTAssertTrue("\(error)".contains("cannot be used as float32"), "\(error)")
        }
    }
}
