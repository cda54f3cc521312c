import Embeddings
import Foundation
import ModelTestSupport
import TestSupport
import XCTest

/// Parity with sentence-transformers on texts written for the project (Fixtures/golden).
final class GoldenParityTests: XCTestCase {
    // Fields named as the generator script writes the JSON keys (Decodable reads them by name).
    // swift-format-ignore: AlwaysUseLowerCamelCase
    struct Reference: Decodable {
        struct Case: Decodable {
            var name: String
            var text: String
            var ids: [Int]
            var offsets: [[Int]]
            var vector: [Double]
            var token_vectors: [[Double]]?
        }
        var max_seq_length: Int
        var cases: [Case]
    }

    static let reference = Result { try TestFixtures.decode(Reference.self, from: "golden/reference.json") }

    func reference() throws -> Reference { try Self.reference.get() }

    func testThereAreAtLeast150Cases() throws {
        XCTAssertGreaterThanOrEqual(try reference().cases.count, 150)
    }

    func testTokenIDsAndOffsetsAreIdentical() throws {
        let tokenizer = try TestModel.shared().tokenizer()
        var failures = 0
        for c in try reference().cases {
            let tokens = tokenizer.tokenize(c.text)
            if tokens.ids != c.ids {
                let first = firstDifference(tokens.ids, c.ids) ?? 0
                XCTFail(
                    "\(c.name): ids differ first at token \(first): ours \(Array(tokens.ids.dropFirst(first).prefix(5))) vs \(Array(c.ids.dropFirst(first).prefix(5))) (counts \(tokens.ids.count)/\(c.ids.count))"
                )
                failures += 1
                continue
            }
            let offsets = tokens.scalarOffsets.map { [$0.start, $0.end] }
            if offsets != c.offsets {
                let first = firstDifference(offsets, c.offsets) ?? 0
                XCTFail(
                    "\(c.name): offsets differ first at token \(first): ours \(offsets[first]) vs \(c.offsets[first])")
                failures += 1
            }
        }
        XCTAssertEqual(failures, 0)
    }

    func testSentenceVectorsMatch() throws {
        let model = try TestModel.shared()
        let cases = try reference().cases
        let vectors = try model.sentenceVectors(for: cases.map(\.text))
        var worstCosine = 1.0
        var worstDelta = 0.0
        for (c, ours) in zip(cases, vectors) {
            let cos = cosine(ours, c.vector)
            let delta = largestDifference(ours, c.vector).difference
            worstCosine = min(worstCosine, cos)
            worstDelta = max(worstDelta, delta)
            XCTAssertGreaterThanOrEqual(cos, 0.99999, "\(c.name): cosine \(cos)")
            XCTAssertLessThanOrEqual(delta, 1e-4, "\(c.name): max |Δ| \(delta)")
        }
        print("golden parity: \(cases.count) texts, worst cosine \(worstCosine), worst max |Δ| \(worstDelta)")
    }

    func testTokenVectorsMatch() throws {
        let model = try TestModel.shared()
        let withMatrices = try reference().cases.filter { $0.token_vectors != nil }
        XCTAssertGreaterThanOrEqual(withMatrices.count, 3)
        for c in withMatrices {
            let result = try model.embeddingResult(for: c.text, language: "en")
            let expected = c.token_vectors!
            XCTAssertEqual(result.sequenceLength, expected.count, c.name)
            for (t, row) in expected.enumerated() where t < result.sequenceLength {
                let ours = result.tokenVectors.row(t)
                let delta = largestDifference(ours, row)
                XCTAssertLessThanOrEqual(
                    delta.difference, 2e-4, "\(c.name) token \(t): max |Δ| \(delta.difference) at \(delta.index)")
                XCTAssertGreaterThanOrEqual(cosine(ours, row), 0.99999, "\(c.name) token \(t)")
            }
        }
    }

    func testBatchEqualsOneByOne() throws {
        let model = try TestModel.shared()
        let texts = try reference().cases.prefix(12).map(\.text)
        let batch = try model.embeddingResults(for: texts, language: nil)
        for (text, result) in zip(texts, batch) {
            let single = try model.embeddingResult(for: text, language: nil)
            XCTAssertEqual(single.tokenIDs, result.tokenIDs)
            assertClose(result.meanPooled(), single.meanPooled(), relative: 1e-4, absolute: 1e-5, text)
        }
    }

    /// Sentence vectors keep their order and values whatever the batch size and thread count
    /// (each thread tokenizes, encodes and pools the groups it takes).
    func testSentenceVectorsIndependentOfBatchingAndThreads() throws {
        let model = try TestModel.shared()
        let texts = try reference().cases.prefix(23).map(\.text)
        let expected = try texts.map {
            try model.embeddingResult(for: $0, language: nil).meanPooled().normalizedToUnitLength
        }
        let three = try XCTUnwrap(ContextualEmbedding(modelIdentifier: model.modelIdentifier, parallelism: 3))
        for (embedding, batchSize) in [(model, 1), (model, 4), (model, 16), (model, 100), (three, 5), (three, 16)] {
            let vectors = try embedding.sentenceVectors(for: texts, batchSize: batchSize)
            XCTAssertEqual(vectors.count, texts.count)
            for (i, (vector, reference)) in zip(vectors, expected).enumerated() {
                assertClose(
                    vector, reference, relative: 1e-4, absolute: 1e-5,
                    "text \(i), batch \(batchSize), threads \(embedding.parallelism)")
            }
        }
        XCTAssertEqual(try model.sentenceVectors(for: []).count, 0)
        XCTAssertEqual(
            try three.embeddingResults(for: texts, language: nil).map(\.tokenIDs),
            try texts.map { try model.embeddingResult(for: $0, language: nil).tokenIDs })
    }
}
