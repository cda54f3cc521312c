import Embeddings
import LinearAlgebra
import TestSupport
import XCTest

/// A result over "Hi there you" with tokens [CLS] Hi there you [SEP] and hand-picked vectors.
func handMadeResult() throws -> ContextualEmbeddingResult {
    let s = "Hi there you"
    func r(_ a: Int, _ b: Int) -> Range<String.Index> {
        s.index(s.startIndex, offsetBy: a)..<s.index(s.startIndex, offsetBy: b)
    }
    return try ContextualEmbeddingResult(
        string: s, language: "en",
        tokenRanges: [r(0, 0), r(0, 2), r(3, 8), r(9, 12), r(12, 12)],
        tokenVectors: [[1, 0, 2], [3, 4, -2], [5, 2, 0], [-1, 6, 4], [2, 8, 1]],
        tokenIDs: [101, 1, 2, 3, 102], isSpecialToken: [true, false, false, false, true])
}

final class ContextualEmbeddingResultTests: XCTestCase {
    func testBasicProperties() throws {
        let result = try handMadeResult()
        XCTAssertEqual(result.sequenceLength, 5)
        XCTAssertEqual(result.dimension, 3)
        XCTAssertEqual(result.language, "en")
        XCTAssertEqual(result.tokenIDs, [101, 1, 2, 3, 102])
        XCTAssertEqual(
            result.utf8Offsets.map { [$0.start, $0.end] }, [[0, 0], [0, 2], [3, 8], [9, 12], [12, 12]])
    }

    func testEnumerateWholeStringVisitsEveryTokenInOrder() throws {
        let result = try handMadeResult()
        var seen: [String] = []
        result.enumerateTokenVectors(in: result.string.startIndex..<result.string.endIndex) { vector, range in
            seen.append("\(result.string[range]):\(vector[0])")
            return true
        }
        XCTAssertEqual(seen, [":1.0", "Hi:3.0", "there:5.0", "you:-1.0", ":2.0"])
    }

    func testEnumerateSubRangeVisitsOnlyOverlappingTokens() throws {
        let result = try handMadeResult()
        let s = result.string
        // "ere y" overlaps "there" and "you".
        let range = s.index(s.startIndex, offsetBy: 5)..<s.index(s.startIndex, offsetBy: 10)
        var seen: [Substring] = []
        result.enumerateTokenVectors(in: range) { _, r in
            seen.append(s[r])
            return true
        }
        XCTAssertEqual(seen, ["there", "you"])
    }

    func testEnumerateStopsWhenBlockReturnsFalse() throws {
        let result = try handMadeResult()
        var count = 0
        result.enumerateTokenVectors(in: result.string.startIndex..<result.string.endIndex) { _, _ in
            count += 1
            return count < 2
        }
        XCTAssertEqual(count, 2)
    }

    func testTokenVectorAtIndex() throws {
        let result = try handMadeResult()
        let s = result.string
        let found = try XCTUnwrap(result.tokenVector(at: s.index(s.startIndex, offsetBy: 4)))
        XCTAssertEqual(s[found.1], "there")
        XCTAssertEqual(found.0, [5, 2, 0])
        XCTAssertNil(result.tokenVector(at: s.index(s.startIndex, offsetBy: 2)), "the space belongs to no token")
        XCTAssertNil(result.tokenVector(at: s.endIndex))
    }

    func testInitializerRejectsCountMismatch() {
        XCTAssertThrowsError(try ContextualEmbeddingResult(string: "a", tokenRanges: [], tokenVectors: [[1.0]])) {
            XCTAssertEqual($0 as? EmbeddingsError, .countMismatch(ranges: 0, vectors: 1))
        }
    }

    func testInitializerRejectsRangeOutsideString() {
        let other = "a much longer string"
        let range = other.index(other.startIndex, offsetBy: 5)..<other.index(other.startIndex, offsetBy: 9)
        XCTAssertThrowsError(try ContextualEmbeddingResult(string: "abc", tokenRanges: [range], tokenVectors: [[1.0]]))
        {
            XCTAssertEqual($0 as? EmbeddingsError, .rangeOutOfBounds(token: 0))
        }
    }

    func testInitializerRejectsRangeInsideAScalar() {
        let s = "é!"  // é is two UTF-8 bytes
        let inside = s.utf8.index(after: s.utf8.startIndex)
        XCTAssertThrowsError(
            try ContextualEmbeddingResult(string: s, tokenRanges: [s.startIndex..<inside], tokenVectors: [[1.0]])
        ) {
            XCTAssertEqual($0 as? EmbeddingsError, .rangeOutOfBounds(token: 0))
        }
    }

    func testInitializerRejectsNonFiniteValues() {
        let s = "ab"
        let all = s.startIndex..<s.endIndex
        for bad in [Double.nan, .infinity, -.infinity, 1e300] {
            XCTAssertThrowsError(
                try ContextualEmbeddingResult(string: s, tokenRanges: [all, all], tokenVectors: [[1, 2], [3, bad]])
            ) {
                XCTAssertEqual($0 as? EmbeddingsError, .nonFiniteValue(token: 1, component: 1), "\(bad)")
            }
        }
    }

    func testInitializerRejectsRaggedVectors() {
        let s = "ab"
        let all = s.startIndex..<s.endIndex
        XCTAssertThrowsError(
            try ContextualEmbeddingResult(string: s, tokenRanges: [all, all], tokenVectors: [[1, 2], [3]])
        ) {
            XCTAssertEqual($0 as? EmbeddingsError, .inconsistentDimension(token: 1, expected: 2, actual: 1))
        }
    }

    func testEmptyResultIsAllowed() throws {
        let result = try ContextualEmbeddingResult(
            string: "", tokenRanges: [], tokenVectors: Matrix(rows: 0, columns: 4))
        XCTAssertEqual(result.sequenceLength, 0)
        XCTAssertEqual(result.meanPooled(), [0, 0, 0, 0])
        XCTAssertEqual(result.maxPooled(), [0, 0, 0, 0])
        XCTAssertEqual(result.clsPooled(), [0, 0, 0, 0])
        XCTAssertNil(result.meanVectorNaive())
    }

    func testZeroCopyAccessSeesTheMatrix() throws {
        let result = try handMadeResult()
        let sum: Float = result.withUnsafeTokenVectors { $0.reduce(0, +) }
        let expected: Float = 35
        XCTAssertEqual(sum, expected)
    }
}
