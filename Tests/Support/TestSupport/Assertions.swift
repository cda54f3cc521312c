import XCTest

/// The largest absolute difference between two equal-length vectors, and where it is.
package func largestDifference<A: BinaryFloatingPoint, B: BinaryFloatingPoint>(_ a: [A], _ b: [B]) -> (
    index: Int, difference: Double
) {
    precondition(a.count == b.count)
    var worst = (index: -1, difference: 0.0)
    for i in a.indices {
        let d = abs(Double(a[i]) - Double(b[i]))
        if d > worst.difference || d.isNaN { worst = (i, d) }
    }
    return worst
}

/// Fails when any component differs by more than `absolute + relative · |expected|`, reporting the
/// first mismatch and the largest difference.
package func assertClose<A: BinaryFloatingPoint, B: BinaryFloatingPoint>(
    _ actual: [A], _ expected: [B], relative: Double = 1e-5, absolute: Double = 1e-6,
    _ message: @autoclosure () -> String = "", file: StaticString = #filePath, line: UInt = #line
) {
    guard actual.count == expected.count else {
        XCTFail("\(message()): lengths \(actual.count) and \(expected.count) differ", file: file, line: line)
        return
    }
    for i in actual.indices {
        let a = Double(actual[i])
        let e = Double(expected[i])
        if !(abs(a - e) <= absolute + relative * abs(e)) {
            let worst = largestDifference(actual, expected)
            XCTFail(
                "\(message()): first mismatch at \(i): \(a) vs \(e); largest difference \(worst.difference) at \(worst.index)",
                file: file, line: line)
            return
        }
    }
}

/// The cosine similarity of two vectors in `Double`.
package func cosine<A: BinaryFloatingPoint, B: BinaryFloatingPoint>(_ a: [A], _ b: [B]) -> Double {
    var dot = 0.0
    var na = 0.0
    var nb = 0.0
    for i in a.indices {
        dot += Double(a[i]) * Double(b[i])
        na += Double(a[i]) * Double(a[i])
        nb += Double(b[i]) * Double(b[i])
    }
    return na > 0 && nb > 0 ? dot / (na.squareRoot() * nb.squareRoot()) : 0
}
