import GGUF
import TestSupport
import XCTest

/// Asserts that `expression` throws a `GGUFError` with `code` whose description contains each of
/// `mentions`; returns the error for further checks.
@discardableResult
func assertGGUFError<T>(
    _ expression: @autoclosure () throws(GGUFError) -> T, code: GGUFError.Code, mentions: [String] = [],
    file: StaticString = #filePath, line: UInt = #line
) -> GGUFError? {
    do {
        let result = try expression()
        XCTFail("expected a \(code) error, got \(result)", file: file, line: line)
        return nil
    } catch {
        XCTAssertEqual(error.code, code, "\(error)", file: file, line: line)
        for mention in mentions {
            XCTAssertTrue(
                error.description.contains(mention), "'\(error)' does not mention '\(mention)'", file: file, line: line)
        }
        return error
    }
}

/// The byte offsets of the f16 scale and minimum fields of each supported block type.
func scaleFields(of type: GGMLType) -> [Int] {
    switch type {
    case .q4_0, .q5_0, .q8_0, .iq4_nl, .iq4_xs: return [0]
    case .q4_1, .q5_1, .q4_K, .q5_K: return [0, 2]
    case .q2_K: return [80, 82]
    case .q3_K: return [108]
    case .q6_K: return [208]
    default: return []
    }
}

/// `count` blocks of random bytes whose scale fields hold finite halves of either sign.
func randomBlocks(_ type: GGMLType, count: Int, using generator: inout SeededGenerator) -> [UInt8] {
    var bytes = (0..<(count * type.blockByteCount)).map { _ in UInt8.random(in: 0...255, using: &generator) }
    for b in 0..<count {
        for field in scaleFields(of: type) {
            let magnitude = Float.random(in: 1e-4...0.5, using: &generator) * (Bool.random(using: &generator) ? 1 : -1)
            let half = halfBytes(magnitude)
            bytes[b * type.blockByteCount + field] = half[0]
            bytes[b * type.blockByteCount + field + 1] = half[1]
        }
    }
    return bytes
}

/// The bit patterns of `values`, for exact comparisons that include NaN.
func bitPatterns(_ values: [Float]) -> [UInt32] { values.map(\.bitPattern) }

/// Fails at the first value whose bits differ, naming it and both patterns.
func assertSameBits(
    _ actual: [Float], _ expected: [UInt32], _ what: String, file: StaticString = #filePath, line: UInt = #line
) {
    guard actual.count == expected.count else {
        XCTFail("\(what): \(actual.count) values, expected \(expected.count)", file: file, line: line)
        return
    }
    if let i = firstDifference(bitPatterns(actual), expected) {
        let worst = largestDifference(actual, expected.map(Float.init(bitPattern:)))
        let found = "\(actual[i]) (0x\(String(actual[i].bitPattern, radix: 16)))"
        let wanted = "\(Float(bitPattern: expected[i])) (0x\(String(expected[i], radix: 16)))"
        XCTFail(
            "\(what): first mismatch at \(i): \(found) vs \(wanted); "
                + "largest difference \(worst.difference) at \(worst.index)",
            file: file, line: line)
    }
}
