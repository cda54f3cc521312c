import Foundation
import LinearAlgebra
import TestSupport
import XCTest

final class FastMathTests: XCTestCase {
    /// Relative error of the vectorized exp against libm over the range softmax uses.
    func testExpMatchesLibmWithinTwoTenthsOfAMillionth() {
        var worst = 0.0
        var x: Float = -87
        while x < 88 {
            let lanes = SIMD8<Float>((0..<8).map { x + Float($0) * 0.001 })
            let fast = FastMath.exp(lanes)
            for k in 0..<8 {
                let exact = Foundation.exp(Double(lanes[k]))
                worst = max(worst, abs(Double(fast[k]) - exact) / exact)
            }
            x += 0.0173
        }
        XCTAssertLessThan(worst, 2e-7, "largest relative error \(worst)")
    }

    func testExpEdgeCases() {
        let input = SIMD8<Float>(-.infinity, -100, 0, 1, 100, .infinity, .nan, -87.5)
        let out = FastMath.exp(input)
        XCTAssertEqual(out[0], 0)
        XCTAssertEqual(out[1], 0)
        XCTAssertEqual(out[2], 1)
        XCTAssertEqual(Double(out[3]), M_E, accuracy: 1e-6)
        XCTAssertEqual(out[4], .infinity)
        XCTAssertEqual(out[5], .infinity)
        XCTAssertTrue(out[6].isNaN)
        XCTAssertEqual(out[7], 0)
    }

    /// GELU against libm's erfc in Double: relative error below 2e-6 for x > −5; further out the
    /// float32 rounding of x/√2 (shared by every float32 GELU) dominates, so 3e-5 there.
    func testGeluMatchesLibmErf() {
        var worstRelative = 0.0, worstFarTail = 0.0, worstAbsolute = 0.0
        var x: Float = -20
        while x < 20 {
            let lanes = SIMD8<Float>((0..<8).map { x + Float($0) * 0.0007 })
            let fast = FastMath.gelu(lanes)
            for k in 0..<8 {
                let d = Double(lanes[k])
                // erfc(−u) = 1 + erf(u) without cancellation for negative arguments.
                let exact = 0.5 * d * Foundation.erfc(-d / 2.0.squareRoot())
                let error = abs(Double(fast[k]) - exact)
                worstAbsolute = max(worstAbsolute, error)
                if d > -5, abs(exact) > 0 { worstRelative = max(worstRelative, error / abs(exact)) }
                if d <= -5, d > -12 { worstFarTail = max(worstFarTail, error / abs(exact)) }
            }
            x += 0.0061
        }
        XCTAssertLessThan(worstRelative, 2e-6, "largest relative error \(worstRelative)")
        XCTAssertLessThan(worstFarTail, 3e-5, "largest relative error beyond x = -5: \(worstFarTail)")
        XCTAssertLessThan(worstAbsolute, 2e-6, "largest absolute error \(worstAbsolute)")
    }

    func testOnePlusErfAtSaturationAndNaN() {
        let out = FastMath.onePlusErf(SIMD8<Float>(-30, -10.5, 0, 10.5, 30, .nan, 2, -2))
        XCTAssertEqual(out[0], 0)
        XCTAssertEqual(out[1], 0)
        XCTAssertEqual(out[2], 1)
        XCTAssertEqual(out[3], 2)
        XCTAssertEqual(out[4], 2)
        XCTAssertTrue(out[5].isNaN)
        XCTAssertEqual(Double(out[6]), 1 + Foundation.erf(2.0), accuracy: 1e-6)
        XCTAssertEqual(Double(out[7]), Foundation.erfc(2.0), accuracy: 1e-9)
    }
}
