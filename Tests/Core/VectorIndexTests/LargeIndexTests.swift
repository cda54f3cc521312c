import LinearAlgebra
import TestSupport
import XCTest

@testable import VectorIndex

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
    func bruteForce(_ query: [Float], _ vectors: [[Float]], k: Int, isIncluded: (Int) -> Bool = { _ in true }) -> [Int]
    {
        let unit = VectorMath.normalized(query)
        let scored = vectors.indices.filter(isIncluded).map { ($0, ReferenceVectorMath.dot(vectors[$0], unit)) }
        return scored.sorted { $0.1 != $1.1 ? $0.1 > $1.1 : $0.0 < $1.0 }.prefix(k).map(\.0)
    }

    /// The part counts of the row splits that `body` runs.
    func splits(_ body: () throws -> Void) rethrows -> [Int] {
        let observer = RowSplit.Observer()
        try RowSplit.$observer.withValue(observer) { try body() }
        return observer.partCounts
    }

    func testEveryScanAndEncoderIsSplitAcrossTheCores() throws {
        let cores = ProcessInfo.processInfo.activeProcessorCount
        XCTAssertGreaterThan(cores, 1, "a machine with one core cannot run the split")
        var (index, _) = try makeIndex()
        var rng = SeededGenerator(seed: 80)
        let query = rng.floats(Self.dimension)
        XCTAssertEqual(try splits { _ = try index.scores(for: query) }, [cores])
        XCTAssertEqual(try splits { _ = try index.search(query, k: 10) }, [cores])
        // The batch path splits only when BLAS runs on one thread (else BLAS uses the cores).
        XCTAssertEqual(
            try splits { _ = try index.search(batch: [query, query], k: 10) }, [BLAS.threadCount == 1 ? cores : 1])
        XCTAssertEqual(splits { index.buildCodes([.int8, .binary]) }, [cores, cores], "int8 and binary encoders")
        for precision in [SearchPrecision.int8, .binary] {
            XCTAssertEqual(
                try splits { _ = try index.search(query, k: 10, precision: precision) }, [cores], "\(precision)")
        }
    }

    func testASmallIndexIsScannedInOnePart() throws {
        var index = FlatIndex(dimension: 4)
        try index.add(contentsOf: (0..<100).map { (id: "s\($0)", vector: [1, Float($0), 0, 1]) })
        XCTAssertEqual(try splits { _ = try index.search([1, 0, 0, 0], k: 3) }, [1])
        XCTAssertEqual(splits { index.buildCodes([.binary]) }, [1])
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
                let candidates = index.candidates(
                    unit: unit, count: 500, precision: precision, filter: nil, int8Path: nil, hammingPath: nil)
                XCTAssertEqual(candidates.count, 500, "\(precision)")
                XCTAssertEqual(Set(candidates).count, 500, "\(precision): no row twice")
            }
        }
    }
}
