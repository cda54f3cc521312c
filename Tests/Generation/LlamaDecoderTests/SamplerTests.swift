import LlamaDecoder
import XCTest

final class SamplerTests: XCTestCase {
    let logits: [Float] = [1.0, 3.0, 2.5, 3.0, -1.0, 0.5]

    func sample(_ parameters: SamplingParameters, count: Int = 200) -> [Int] {
        var sampler = Sampler(parameters)
        return (0..<count).map { _ in logits.withUnsafeBufferPointer { sampler.next($0) } }
    }

    /// Greedy takes the largest logit, the lowest id among equals; so does top-k 1.
    func testGreedy() throws {
        XCTAssertEqual(Set(sample(.greedy)), [1])
        XCTAssertEqual(Set(sample(try SamplingParameters(temperature: 1, topK: 1, seed: 3))), [1])
        XCTAssertEqual([Float.nan, 2, 5].withUnsafeBufferPointer(Sampler.argmax), 2)
    }

    /// The same seed gives the same choices; another seed other choices.
    func testSeeds() throws {
        let a = sample(try SamplingParameters(temperature: 1, seed: 42))
        XCTAssertEqual(a, sample(try SamplingParameters(temperature: 1, seed: 42)))
        XCTAssertNotEqual(a, sample(try SamplingParameters(temperature: 1, seed: 43)))
        XCTAssertGreaterThan(Set(a).count, 3)
    }

    /// Top-k keeps the k best, top-p the fewest best whose mass reaches p.
    func testTopKAndTopP() throws {
        XCTAssertEqual(Set(sample(try SamplingParameters(temperature: 5, topK: 2, seed: 1))), [1, 3])
        XCTAssertEqual(Set(sample(try SamplingParameters(temperature: 5, topK: 3, seed: 1))), [1, 2, 3])
        // p(1) = p(3) ≈ 0.352 at T = 1, p(2) ≈ 0.213: 0.7 needs ids 1 and 3 (0.704), 0.75 adds 2.
        XCTAssertEqual(Set(sample(try SamplingParameters(temperature: 1, topP: 0.5, seed: 1))), [1, 3])
        XCTAssertEqual(Set(sample(try SamplingParameters(temperature: 1, topP: 0.7, seed: 1))), [1, 3])
        XCTAssertEqual(Set(sample(try SamplingParameters(temperature: 1, topP: 0.75, seed: 1))), [1, 2, 3])
        // A low temperature concentrates the mass on the two best.
        XCTAssertEqual(Set(sample(try SamplingParameters(temperature: 0.05, seed: 1))), [1, 3])
    }

    /// Frequencies follow softmax(logits / T).
    func testFrequenciesFollowTheDistribution() throws {
        let draws = sample(try SamplingParameters(temperature: 1, seed: 9), count: 20_000)
        let weights = logits.map { exp(Double($0)) }
        let total = weights.reduce(0, +)
        for id in logits.indices {
            let observed = Double(draws.filter { $0 == id }.count) / Double(draws.count)
            XCTAssertEqual(observed, weights[id] / total, accuracy: 0.015, "id \(id)")
        }
    }

    func testInvalidParameters() {
        XCTAssertThrowsError(try SamplingParameters(temperature: -0.1))
        XCTAssertThrowsError(try SamplingParameters(temperature: .nan))
        XCTAssertThrowsError(try SamplingParameters(temperature: .infinity))
        XCTAssertThrowsError(try SamplingParameters(temperature: 1, topK: 0))
        XCTAssertThrowsError(try SamplingParameters(temperature: 1, topP: 0))
        XCTAssertThrowsError(try SamplingParameters(temperature: 1, topP: 1.5))
        XCTAssertNoThrow(try SamplingParameters(temperature: 0, topK: 1, topP: 1))
    }
}
