import Embeddings
import LinearAlgebra
import TestSupport
import XCTest

final class PoolingTests: XCTestCase {
    // Vectors: [1,0,2] [3,4,-2] [5,2,0] [-1,6,4] [2,8,1]; first and last are special.
    func testMeanOverAllTokensByHand() throws {
        XCTAssertEqual(try handMadeResult().meanPooled(), [2, 4, 1])
    }

    func testMeanExcludingSpecialTokensByHand() throws {
        assertClose(try handMadeResult().meanPooled(excludingSpecialTokens: true), [7.0 / 3, 4, 2.0 / 3])
    }

    func testWeightedMeanByHand() throws {
        let result = try handMadeResult()
        XCTAssertEqual(try result.meanPooled(weights: [0, 1, 1, 0, 0]), [4, 3, -1])
        assertClose(try result.meanPooled(weights: [0, 3, 1, 0, 0]), [3.5, 3.5, -1.5])
        XCTAssertEqual(try result.meanPooled(weights: [0, 0, 0, 0, 0]), [0, 0, 0], "all-zero weights give zero")
    }

    func testWeightedMeanRejectsBadWeights() throws {
        let result = try handMadeResult()
        XCTAssertThrowsError(try result.meanPooled(weights: [1, 1]))
        XCTAssertThrowsError(try result.meanPooled(weights: [1, 1, -1, 1, 1]))
        XCTAssertThrowsError(try result.meanPooled(weights: [1, 1, .nan, 1, 1]))
    }

    func testMaxAndCLSByHand() throws {
        let result = try handMadeResult()
        XCTAssertEqual(result.maxPooled(), [5, 8, 4])
        XCTAssertEqual(result.clsPooled(), [1, 0, 2])
        XCTAssertEqual(result.pooled(.max), result.maxPooled())
        XCTAssertEqual(result.pooled(.cls), [1, 0, 2])
        XCTAssertEqual(result.pooled(.mean), [2, 4, 1])
    }

    func testMeanOverSubRangeUsesOnlyItsTokens() throws {
        let result = try handMadeResult()
        let s = result.string
        let there = s.index(s.startIndex, offsetBy: 3)..<s.index(s.startIndex, offsetBy: 12)
        XCTAssertEqual(result.meanPooled(over: there), [2, 4, 2], "mean of 'there' and 'you'")
        let whole = s.startIndex..<s.endIndex
        assertClose(result.meanPooled(over: whole), result.meanPooled(excludingSpecialTokens: true))
        let space = s.index(s.startIndex, offsetBy: 2)..<s.index(s.startIndex, offsetBy: 3)
        XCTAssertEqual(result.meanPooled(over: space), [0, 0, 0], "no token in the range gives zero")
    }

    func testNaiveMeanIsTheSeedAlgorithm() throws {
        XCTAssertEqual(try handMadeResult().meanVectorNaive(), [2, 4, 1])
    }

    /// Property: the BLAS mean equals the naive reference within 1e-5 relative, on random shapes.
    func testFastMeanMatchesNaiveOnRandomMatrices() throws {
        var rng = SeededGenerator(seed: 42)
        for trial in 0..<40 {
            let tokens = Int.random(in: 1...200, using: &rng)
            let dimension = [1, 3, 8, 384, 385].randomElement(using: &rng)!
            let text = String(repeating: "x", count: tokens)
            var ranges: [Range<String.Index>] = []
            var index = text.startIndex
            for _ in 0..<tokens {
                let next = text.index(after: index)
                ranges.append(index..<next)
                index = next
            }
            let vectors = (0..<tokens).map { _ in rng.floats(dimension, in: -3...3).map(Double.init) }
            let result = try ContextualEmbeddingResult(string: text, tokenRanges: ranges, tokenVectors: vectors)
            let naive = try XCTUnwrap(result.meanVectorNaive())
            assertClose(result.meanPooled(), naive, relative: 1e-5, absolute: 1e-6, "trial \(trial)")
        }
    }

    func testNormalizationGivesUnitNormAndKeepsZero() {
        var rng = SeededGenerator(seed: 7)
        for _ in 0..<100 {
            let v = rng.floats(384, in: -10...10)
            XCTAssertEqual(Double(VectorMath.norm(v.normalizedToUnitLength)), 1, accuracy: 1e-6)
        }
        let zero = [Float](repeating: 0, count: 384)
        XCTAssertEqual(zero.normalizedToUnitLength, zero)
        XCTAssertFalse(zero.normalizedToUnitLength.contains { $0.isNaN })
        let tiny: [Float] = [1e-30, 0, 0]
        XCTAssertEqual(tiny.normalizedToUnitLength, [1, 0, 0])
    }
}
