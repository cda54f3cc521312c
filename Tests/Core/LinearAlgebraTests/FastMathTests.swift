import Foundation
import LinearAlgebra
import TestSupport
import XCTest

/// Accuracy of the vectorized exponential and GELU against libm in Double.
final class FastMathTests: XCTestCase {
    func testExpMatchesLibmWithinTwoTenthsOfAMillionth() {
        var x = Array(stride(from: Float(-87), to: 88, by: 0.0013))
        let input = x
        x.withUnsafeMutableBufferPointer { Kernels.expFinite($0.baseAddress!, count: $0.count) }
        var worst = 0.0
        for (v, e) in zip(input, x) {
            let exact = Foundation.exp(Double(v))
            worst = max(worst, abs(Double(e) - exact) / exact)
        }
        XCTAssertLessThan(worst, 3e-7, "largest relative error \(worst)")
    }

    func testExpOfVeryNegativeInputsIsTinyNotNaN() {
        var x: [Float] = [-1000, -100, -87.4, 0]
        x.withUnsafeMutableBufferPointer { Kernels.expFinite($0.baseAddress!, count: $0.count) }
        XCTAssertLessThan(x[0], 1e-37)
        XCTAssertLessThan(x[1], 1e-37)
        XCTAssertFalse(x.contains { $0.isNaN })
        XCTAssertEqual(x[3], 1)
    }

    /// GELU against libm's erfc in Double: within 2e-6 relative for x > −5; further out the
    /// float32 rounding of x/√2 (shared by every float32 GELU) dominates, so 3e-5 there.
    func testGeluMatchesLibmErf() {
        var x = Array(stride(from: Float(-20), to: 20, by: 0.0007))
        let input = x
        x.withUnsafeMutableBufferPointer { Kernels.gelu($0.baseAddress!, count: $0.count) }
        var worstRelative = 0.0
        var worstFarTail = 0.0
        var worstAbsolute = 0.0
        for (v, g) in zip(input, x) {
            let d = Double(v)
            // erfc(−u) = 1 + erf(u) without cancellation for negative arguments.
            let exact = 0.5 * d * Foundation.erfc(-d / 2.0.squareRoot())
            let error = abs(Double(g) - exact)
            worstAbsolute = max(worstAbsolute, error)
            if d > -5, exact != 0 { worstRelative = max(worstRelative, error / abs(exact)) }
            if d <= -5, d > -12 { worstFarTail = max(worstFarTail, error / abs(exact)) }
        }
        XCTAssertLessThan(worstRelative, 2e-6, "largest relative error \(worstRelative)")
        XCTAssertLessThan(worstFarTail, 3e-5, "largest relative error beyond x = -5: \(worstFarTail)")
        XCTAssertLessThan(worstAbsolute, 2e-6, "largest absolute error \(worstAbsolute)")
    }

    func testGeluSpecialValues() {
        var x: [Float] = [0, .nan, 30, -30, 1]
        x.withUnsafeMutableBufferPointer { Kernels.gelu($0.baseAddress!, count: $0.count) }
        XCTAssertEqual(x[0], 0)
        XCTAssertTrue(x[1].isNaN)
        XCTAssertEqual(x[2], 30)
        XCTAssertEqual(x[3], 0, accuracy: 1e-30)
        XCTAssertEqual(Double(x[4]), 0.5 * (1 + Foundation.erf(1 / 2.0.squareRoot())), accuracy: 1e-6)
    }
}
