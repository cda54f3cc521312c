import Foundation
import LinearAlgebra
import LlamaDecoder
import ModelTestSupport
import TestSupport
import XCTest

/// Teacher-forced scores of real English text (the project's Swift lessons, 3,911 tokens in
/// windows of 512) against transformers on the same GGUF in float32
/// (Fixtures/generation/perplexity.json).
final class PerplexityTests: XCTestCase {
    struct Fixture: Decodable {
        let text: String
        let ids: [Int]
        let nll: [Double?]
        let argmax: [Int]
        let perplexity: Double
        let window: Int
    }

    static let fixture = Result { try TestFixtures.decode(Fixture.self, from: "generation/perplexity.json") }

    /// The tokenizer gives transformers' ids for the text; the float32 path gives its negative
    /// log-likelihoods within 2e-3 each, its perplexity within 0.01%, and its top-1 choices.
    func testFloat32MatchesTransformers() throws {
        let fixture = try Self.fixture.get()
        let model = try TestLanguageModel.shared(.float32)
        XCTAssertEqual(model.tokenizer.tokenizeWithoutSpecialTokens(fixture.text).map(\.id), fixture.ids)
        XCTAssertGreaterThanOrEqual(fixture.ids.count, 2_000)
        let scores = try model.score(fixture.ids, window: fixture.window)
        XCTAssertEqual(scores.scoredCount, fixture.nll.compactMap { $0 }.count)
        var worst = 0.0
        var agree = 0
        var scored = 0
        for i in fixture.ids.indices {
            XCTAssertEqual(scores.negativeLogLikelihoods[i] == nil, fixture.nll[i] == nil, "position \(i)")
            guard let ours = scores.negativeLogLikelihoods[i], let theirs = fixture.nll[i],
                let prediction = scores.predictions[i]
            else { continue }
            worst = max(worst, abs(ours - theirs))
            scored += 1
            if prediction == fixture.argmax[i] { agree += 1 }
        }
        XCTAssertLessThan(worst, 2e-3, "largest negative log-likelihood difference")
        XCTAssertEqual(scores.perplexity, fixture.perplexity, accuracy: fixture.perplexity * 1e-4)
        // Exact ties between the two best logits may break either way in another summation order.
        XCTAssertGreaterThanOrEqual(Double(agree) / Double(scored), 0.999)
        print(
            "float32 perplexity \(scores.perplexity) (transformers \(fixture.perplexity)); largest NLL difference \(worst)"
        )
    }

    /// The default (fast) path against the float32 reference: perplexity within 1% and top-1
    /// agreement under teacher forcing at least 0.98 (the targets). Measured with two-part
    /// activations (`TwoPartBlockRows`): 1.0000 and a ratio of 1.00001 (AMD EPYC, AVX2); with the
    /// single 8-bit part it replaced, 0.965 (AVX2) to 0.971 (AVX-512 VNNI), ratio 1.001-1.003.
    func testFastPathAgreesWithReference() throws {
        let fixture = try Self.fixture.get()
        let model = try TestLanguageModel.shared()
        let scores = try model.score(fixture.ids, window: fixture.window)
        var agree = 0
        var scored = 0
        for (i, prediction) in scores.predictions.enumerated() {
            guard let prediction, fixture.nll[i] != nil else { continue }
            scored += 1
            if prediction == fixture.argmax[i] { agree += 1 }
        }
        let agreement = Double(agree) / Double(scored)
        let ratio = scores.perplexity / fixture.perplexity
        print("\(model.precision) path: top-1 agreement \(agreement), perplexity \(scores.perplexity) (ratio \(ratio))")
        XCTAssertGreaterThanOrEqual(agreement, 0.98)
        XCTAssertEqual(ratio, 1, accuracy: 0.01)
    }
}
