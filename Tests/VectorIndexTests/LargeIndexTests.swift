import LinearAlgebra
import TestSupport
@testable import VectorIndex
import XCTest

/// An index large enough (6,000 × 384, past the 2²¹-value threshold) that the exact scan is split
/// across the cores and the code scans merge one heap per core: both against brute force.
final class LargeIndexTests: XCTestCase {
    static let rows = 6_000, dimension = 384

    func makeIndex() throws -> (FlatIndex, [[Float]]) {
        var rng = SeededGenerator(seed: 77)
        var vectors = [[Float]]()
        var index = FlatIndex(dimension: Self.dimension)
        var items = [(id: String, vector: [Float])]()
        for row in 0..<Self.rows {
            let v = rng.floats(Self.dimension)
            vectors.append(VectorMath.normalized(v))
            items.append((id: "v\(row)", vector: v))
        }
        try index.add(contentsOf: items)
        return (index, vectors)
    }

    /// Brute-force top-k by Double dot products of unit vectors; ties by row.
    func bruteForce(_ query: [Float], _ vectors: [[Float]], k: Int, isIncluded: (Int) -> Bool = { _ in true }) -> [Int] {
        let unit = VectorMath.normalized(query)
        let scored = vectors.indices.filter(isIncluded).map { ($0, ReferenceVectorMath.dot(vectors[$0], unit)) }
        return scored.sorted { $0.1 != $1.1 ? $0.1 > $1.1 : $0.0 < $1.0 }.prefix(k).map(\.0)
    }

    func testTheScanIsSplitAcrossCores() {
        XCTAssertGreaterThanOrEqual(Self.rows * Self.dimension, 1 << 21, "past the parallel threshold")
        XCTAssertGreaterThan(ProcessInfo.processInfo.activeProcessorCount, 1, "a machine with one core cannot run the split")
    }

    func testExactSingleAndBatchSearchEqualBruteForce() throws {
        let (index, vectors) = try makeIndex()
        var rng = SeededGenerator(seed: 78)
        let queries = (0..<8).map { _ in rng.floats(Self.dimension) }
        let batch = try index.search(batch: queries, k: 10)
        for (q, query) in queries.enumerated() {
            let expected = bruteForce(query, vectors, k: 10)
            let single = try index.search(query, k: 10)
            XCTAssertEqual(single.map(\.row), expected, "query \(q)")
            XCTAssertEqual(batch[q].map(\.row), expected, "batch query \(q)")
            let scores = try index.scores(for: query)
            XCTAssertEqual(scores.count, Self.rows)
            for hit in single { XCTAssertEqual(hit.score, scores[hit.row]) }
        }
        // A filter that keeps every third row.
        let filtered = try index.search(queries[0], k: 10, isIncluded: { Int($0.dropFirst())! % 3 == 0 })
        XCTAssertEqual(filtered.map(\.row), bruteForce(queries[0], vectors, k: 10) { $0 % 3 == 0 })
    }

    func testCodeScansMergeOneHeapPerCore() throws {
        var (index, vectors) = try makeIndex()
        index.buildCodes([.int8, .binary])
        var rng = SeededGenerator(seed: 79)
        for q in 0..<6 {
            let query = rng.floats(Self.dimension)
            let exact = bruteForce(query, vectors, k: 10)
            // Rescoring every row must give exactly the exact order: the merged candidates are all rows.
            for precision in [SearchPrecision.int8, .binary] {
                let all = try index.search(query, k: 10, precision: precision, rescore: Self.rows / 10)
                XCTAssertEqual(all.map(\.row), exact, "\(precision) query \(q), full rescoring")
                // The candidate set is the union of the per-core heaps: its size is what was asked.
                let unit = VectorMath.normalized(query)
                let candidates = index.candidates(unit: unit, count: 500, precision: precision, filter: nil, int8Path: nil, hammingPath: nil)
                XCTAssertEqual(candidates.count, 500, "\(precision)")
                XCTAssertEqual(Set(candidates).count, 500, "\(precision): no row twice")
            }
        }
    }
}
