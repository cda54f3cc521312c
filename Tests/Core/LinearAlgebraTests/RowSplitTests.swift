import XCTest

@testable import LinearAlgebra

final class RowSplitTests: XCTestCase {
    func testMatricesBelowTheThresholdAreNotSplit() {
        XCTAssertEqual(RowSplit.parts(rows: 0, dimension: 384), 1)
        XCTAssertEqual(RowSplit.parts(rows: (RowSplit.threshold - 1) / 384, dimension: 384), 1)
        XCTAssertEqual(RowSplit.parts(rows: 1, dimension: RowSplit.threshold - 1), 1)
    }

    func testLargeMatricesGetOnePartPerCoreButNoMoreThanRows() {
        let cores = ProcessInfo.processInfo.activeProcessorCount
        XCTAssertEqual(RowSplit.parts(rows: RowSplit.threshold / 384 + 1, dimension: 384), cores)
        XCTAssertEqual(RowSplit.parts(rows: 1, dimension: RowSplit.threshold), 1, "one row cannot be split")
    }

    func testThePartsCoverEveryRowOnceInOrder() {
        for (rows, parts) in [(0, 1), (1, 1), (7, 3), (10, 10), (6_000, 2), (6_001, 4)] {
            let ranges = RowSplit.map(rows: rows, parts: parts) { $0 }
            XCTAssertEqual(ranges.count, parts, "\(rows) rows in \(parts)")
            XCTAssertEqual(ranges.first?.lowerBound, 0)
            XCTAssertEqual(ranges.last?.upperBound, rows)
            for (a, b) in zip(ranges, ranges.dropFirst()) {
                XCTAssertEqual(a.upperBound, b.lowerBound, "\(rows) rows in \(parts)")
            }
            XCTAssertLessThanOrEqual(ranges.map(\.count).max()! - ranges.map(\.count).min()!, 1, "near-equal parts")
        }
    }

    func testTheObserverRecordsEachSplitOnlyWhileSet() {
        let observer = RowSplit.Observer()
        RowSplit.$observer.withValue(observer) {
            _ = RowSplit.map(rows: 10, parts: 3) { $0.count }
            _ = RowSplit.map(rows: 10, parts: 1) { $0.count }
        }
        _ = RowSplit.map(rows: 10, parts: 2) { $0.count }
        XCTAssertEqual(observer.partCounts, [3, 1])
    }
}
