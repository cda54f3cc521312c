import LinearAlgebra
import TestSupport
import VectorIndex
import XCTest

final class FlatIndexTests: XCTestCase {
    func makeIndex(count: Int, dimension: Int, seed: UInt64) throws -> (FlatIndex, [[Float]]) {
        var rng = SeededGenerator(seed: seed)
        var index = FlatIndex(dimension: dimension)
        let vectors = (0..<count).map { _ in rng.floats(dimension) }
        try index.add(contentsOf: vectors.enumerated().map { ("v\($0.offset)", $0.element) })
        return (index, vectors)
    }

    func testSearchFindsNearest() throws {
        var index = FlatIndex(dimension: 3)
        try index.add(id: "x", vector: [1, 0, 0])
        try index.add(id: "y", vector: [0, 2, 0])
        try index.add(id: "z", vector: [0, 0, 3])
        let hits = try index.search([0.1, 5, 0.2], k: 2)
        XCTAssertEqual(hits.map(\.id), ["y", "z"])
        XCTAssertEqual(hits[0].score, VectorMath.cosineSimilarity([0.1, 5, 0.2], [0, 1, 0]), accuracy: 1e-6)
    }

    func testVectorsAreNormalizedOnInsert() throws {
        var index = FlatIndex(dimension: 2)
        try index.add(id: "a", vector: [3, 4])
        try index.add(id: "zero", vector: [0, 0])
        XCTAssertEqual(index.vector(for: "a"), [0.6, 0.8])
        XCTAssertEqual(index.vector(for: "zero"), [0, 0])
        let hits = try index.search([1, 0], k: 5)
        XCTAssertEqual(hits.map(\.id), ["a", "zero"])
        XCTAssertEqual(hits[1].score, 0)
    }

    func testKZeroNegativeAndHuge() throws {
        let (index, _) = try makeIndex(count: 5, dimension: 4, seed: 1)
        XCTAssertEqual(try index.search([1, 0, 0, 0], k: 0), [])
        XCTAssertEqual(try index.search([1, 0, 0, 0], k: -1), [])
        XCTAssertEqual(try index.search([1, 0, 0, 0], k: Int.max).count, 5)
        XCTAssertEqual(try index.search([1, 0, 0, 0], k: 6).count, 5)
    }

    func testEmptyIndex() throws {
        let index = FlatIndex(dimension: 4)
        XCTAssertEqual(try index.search([1, 0, 0, 0], k: 3), [])
        XCTAssertEqual(try index.search(batch: [[1, 0, 0, 0]], k: 3), [[]])
    }

    func testTiesRankEarlierInsertionFirst() throws {
        var index = FlatIndex(dimension: 2)
        try index.add(contentsOf: [("first", [1, 1]), ("other", [0, 1]), ("second", [2, 2]), ("third", [4, 4])])
        XCTAssertEqual(try index.search([1, 1], k: 3).map(\.id), ["first", "second", "third"])
    }

    func testWrongDimensionAndNonFiniteAreTypedErrorsAndChangeNothing() throws {
        var index = FlatIndex(dimension: 3)
        try index.add(id: "a", vector: [1, 2, 3])
        XCTAssertThrowsError(try index.add(id: "b", vector: [1, 2])) {
            XCTAssertEqual($0 as? VectorIndexError, .dimensionMismatch(expected: 3, actual: 2))
        }
        XCTAssertThrowsError(try index.add(contentsOf: [("c", [1, 2, 3]), ("d", [1, .nan, 3])])) {
            XCTAssertEqual($0 as? VectorIndexError, .nonFiniteValue(id: "d", component: 1))
        }
        XCTAssertThrowsError(try index.search([1, .infinity, 0], k: 1))
        XCTAssertThrowsError(try index.search([1, 0], k: 1))
        XCTAssertThrowsError(try index.add(id: "a", vector: [1, 1, 1])) {
            XCTAssertEqual($0 as? VectorIndexError, .duplicateID("a"))
        }
        XCTAssertThrowsError(try index.update(id: "nope", vector: [1, 1, 1])) {
            XCTAssertEqual($0 as? VectorIndexError, .unknownID("nope"))
        }
        XCTAssertEqual(index.ids, ["a"], "failed calls leave the index unchanged")
    }

    func testUpdateAndRemove() throws {
        var index = FlatIndex(dimension: 2)
        try index.add(contentsOf: [("a", [1, 0]), ("b", [0, 1]), ("c", [1, 1])])
        try index.update(id: "a", vector: [0, 3])
        XCTAssertEqual(index.vector(for: "a"), [0, 1])
        XCTAssertEqual(
            try index.search([0, 1], k: 2).map(\.id), ["a", "b"], "update keeps the row, so ties keep order")
        XCTAssertTrue(index.remove(id: "a"))
        XCTAssertFalse(index.remove(id: "a"))
        XCTAssertEqual(index.ids, ["b", "c"])
        XCTAssertEqual(try index.search([0, 1], k: 1).first?.id, "b")
        XCTAssertEqual(try index.search([0, 1], k: 1).first?.row, 0)
    }

    func testFilterByID() throws {
        let (index, vectors) = try makeIndex(count: 50, dimension: 8, seed: 2)
        let hits = try index.search(vectors[7], k: 5, isIncluded: { $0.hasSuffix("7") })
        XCTAssertEqual(hits.first?.id, "v7")
        XCTAssertTrue(hits.allSatisfy { $0.id.hasSuffix("7") })
        XCTAssertEqual(hits.count, 5)
    }

    /// Property: search equals a full sort of brute-force cosine scores, including duplicate vectors.
    func testSearchMatchesBruteForceWithDuplicates() throws {
        var rng = SeededGenerator(seed: 3)
        for trial in 0..<20 {
            let dimension = [2, 16, 384].randomElement(using: &rng)!
            var vectors = (0..<Int.random(in: 1...300, using: &rng)).map { _ in rng.floats(dimension) }
            vectors += vectors.prefix(20)  // exact duplicates: tied scores
            var index = FlatIndex(dimension: dimension)
            try index.add(contentsOf: vectors.enumerated().map { ("v\($0.offset)", $0.element) })
            let query = rng.floats(dimension)
            let k = Int.random(in: 1...40, using: &rng)
            let hits = try index.search(query, k: k)
            // Brute force in Double, then the same stable order.
            let scores = vectors.map { Float(ReferenceVectorMath.cosineSimilarity($0, query)) }
            let expected = ReferenceTopK.select(from: scores, k: k)
            XCTAssertEqual(hits.count, expected.count)
            for (hit, e) in zip(hits, expected) {
                XCTAssertEqual(hit.score, e.score, accuracy: 1e-5, "trial \(trial)")
                if abs(hit.score - scores[hit.row]) > 1e-5 { XCTFail("hit \(hit.id) score mismatch") }
            }
            // Duplicates must come out with the earlier row first.
            for pair in zip(hits, hits.dropFirst()) where pair.0.score == pair.1.score {
                XCTAssertLessThan(pair.0.row, pair.1.row)
            }
        }
    }

    func testBatchSearchEqualsOneByOne() throws {
        let (index, _) = try makeIndex(count: 1000, dimension: 32, seed: 4)
        var rng = SeededGenerator(seed: 5)
        let queries = (0..<9).map { _ in rng.floats(32) }
        let batch = try index.search(batch: queries, k: 7, isIncluded: { !$0.hasSuffix("3") })
        for (query, hits) in zip(queries, batch) {
            let single = try index.search(query, k: 7, isIncluded: { !$0.hasSuffix("3") })
            XCTAssertEqual(hits.map(\.id), single.map(\.id))
            for (a, b) in zip(hits, single) { XCTAssertEqual(a.score, b.score, accuracy: 1e-5) }
        }
    }
}
