import Foundation
import LinearAlgebra
import LlamaDecoder
import ModelTestSupport
import TestSupport
import XCTest

/// The decoder against transformers running the same GGUF dequantized to float32
/// (Fixtures/generation/logits.json and logits.bin, made by Fixtures/generation/generate.py).
final class TransformersParityTests: XCTestCase {
    // Fields named as the generator script writes the JSON keys (Decodable reads them by name).
    // swift-format-ignore: AlwaysUseLowerCamelCase
    struct LogitsFixture: Decodable {
        struct Case: Decodable {
            let index: Int, name: String, prompt: String
            let ids: [Int]
            let greedy: [Int]
        }
        let vocab_size: Int
        let cases: [Case]
    }

    static let fixture = Result { try TestFixtures.decode(LogitsFixture.self, from: "generation/logits.json") }

    /// transformers' last-position logits of case `index`.
    static func referenceLogits(_ index: Int, vocabulary: Int) throws -> [Float] {
        let url = TestFixtures.folder.appendingPathComponent("generation/logits.bin")
        let data = try Data(contentsOf: url, options: .alwaysMapped)
        let start = index * vocabulary * 4
        guard data.count >= start + vocabulary * 4 else {
            throw FixtureError(message: "logits.bin is too short for case \(index)")
        }
        return data[start..<(start + vocabulary * 4)].withUnsafeBytes { raw in
            (0..<vocabulary).map {
                Float(bitPattern: UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: $0 * 4, as: UInt32.self)))
            }
        }
    }

    /// `steps` most-likely tokens after `prompt`, never stopping early (as the fixture's greedy runs).
    static func greedy(_ model: LlamaModel, _ prompt: [Int], steps: Int) throws -> (first: [Float], tokens: [Int]) {
        let sequence = try model.makeSequence()
        var logits = try sequence.append(prompt)
        let first = logits
        var tokens: [Int] = []
        for _ in 0..<steps {
            let next = logits.withUnsafeBufferPointer(Sampler.argmax)
            tokens.append(next)
            if tokens.count == steps { break }
            logits = try sequence.append([next])
        }
        return (first, tokens)
    }

    /// The float32 path: every case's last-position logits within 2e-3 of the largest logit's
    /// magnitude (the bound float32 summation order explains: measured below 5e-4), and the
    /// 32-token greedy continuations identical.
    func testFloat32LogitsAndGreedyContinuationsMatch() throws {
        let fixture = try Self.fixture.get()
        let model = try TestLanguageModel.shared(.float32)
        XCTAssertEqual(fixture.cases.count, 20)
        var worst = 0.0
        for c in fixture.cases {
            let expected = try Self.referenceLogits(c.index, vocabulary: fixture.vocab_size)
            let (logits, tokens) = try Self.greedy(model, c.ids, steps: c.greedy.count)
            let scale = Double(expected.map(abs).max() ?? 1)
            let (at, difference) = largestDifference(logits, expected)
            worst = max(worst, difference / scale)
            XCTAssertLessThan(
                difference / scale, 2e-3, "\(c.name): logit \(at) differs by \(difference) (largest |logit| \(scale))")
            if let i = firstDifference(tokens, c.greedy) {
                XCTFail("\(c.name): greedy token \(i) is \(tokens[i]), transformers \(c.greedy[i])")
            }
        }
        print("float32 parity: largest logit difference \(worst) of the largest logit")
    }

    /// The default (fast) path's first greedy token agrees with transformers' on nearly every
    /// prompt, and its logits stay close (its bounds over real text are in `PerplexityTests`).
    func testFastPathFirstTokensAgree() throws {
        let fixture = try Self.fixture.get()
        let model = try TestLanguageModel.shared()
        var agree = 0
        for c in fixture.cases {
            let expected = try Self.referenceLogits(c.index, vocabulary: fixture.vocab_size)
            let logits = try model.makeSequence().append(c.ids)
            XCTAssertGreaterThan(cosine(logits, expected), 0.99, c.name)
            if logits.withUnsafeBufferPointer(Sampler.argmax) == expected.withUnsafeBufferPointer(Sampler.argmax) {
                agree += 1
            }
        }
        // Measured 20 of 20 with two-part activations, 16 of 20 with one 8-bit part (see
        // PerplexityTests for the rate over real text).
        XCTAssertGreaterThanOrEqual(agree, 19, "top-1 agreement \(agree) of \(fixture.cases.count)")
    }
}
