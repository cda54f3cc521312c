import TestSupport
import VectorIndex
import XCTest

final class TopKTests: XCTestCase {
    func testEmptyInput() {
        XCTAssertEqual(TopK.select(from: [], k: 3), [])
    }

    func testKZeroAndNegative() {
        XCTAssertEqual(TopK.select(from: [1, 2, 3], k: 0), [])
        XCTAssertEqual(TopK.select(from: [1, 2, 3], k: -5), [])
    }

    func testKLargerThanCount() {
        XCTAssertEqual(TopK.select(from: [0.1, 0.9, 0.5], k: 10).map(\.index), [1, 2, 0])
        XCTAssertEqual(TopK.select(from: [0.1, 0.9], k: Int.max).map(\.index), [1, 0])
    }

    func testTiesKeepEarlierIndexFirst() {
        XCTAssertEqual(TopK.select(from: [0.5, 0.7, 0.5, 0.7, 0.5], k: 3).map(\.index), [1, 3, 0])
    }

    func testNaNScoresAreSkipped() {
        XCTAssertEqual(TopK.select(from: [.nan, 0.2, .nan, 0.1], k: 3).map(\.index), [1, 3])
    }

    func testFilter() {
        XCTAssertEqual(
            TopK.select(from: [0.9, 0.8, 0.7, 0.6], k: 2, isIncluded: { $0 % 2 == 1 }).map(\.index), [1, 3])
    }

    /// Property: heap selection equals a full stable sort, with many ties.
    func testMatchesFullSortOnRandomScoresWithTies() {
        var rng = SeededGenerator(seed: 11)
        for trial in 0..<200 {
            let n = Int.random(in: 0...500, using: &rng)
            // Few distinct values so ties are common.
            let scores = (0..<n).map { _ in Float(Int.random(in: -5...5, using: &rng)) / 5 }
            let k = Int.random(in: -1...(n + 3), using: &rng)
            XCTAssertEqual(TopK.select(from: scores, k: k), ReferenceTopK.select(from: scores, k: k), "trial \(trial)")
        }
    }
}
