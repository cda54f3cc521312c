/// Vectorized elementary functions for the encoder's hot loops.
///
/// Scalar `expf` and `erff` from libm cost 3–18 ns per element, more than the matrix products
/// they sit between. These SIMD versions are accurate to a few units in 1e-7 relative
/// (checked against libm in `FastMathTests`) and run 8 lanes at a time.
public enum FastMath {
    public typealias Vector = SIMD8<Float>

    /// `e^x` for each lane. Inputs below about −87.3 give 0; above 88.7 give +∞; NaN stays NaN.
    ///
    /// Range reduction `x = n·ln2 + r` with `|r| ≤ ln2/2`, a degree-7 Taylor polynomial for
    /// `e^r` (truncation error below 1e-8), and `2^n` built from the exponent bits.
    @inlinable
    public static func exp(_ x: Vector) -> Vector {
        let clamped = x.clamped(lowerBound: Vector(repeating: -87.3), upperBound: Vector(repeating: 88.7))
        let n = (clamped * 1.442_695_04).rounded(.toNearestOrEven)
        // ln2 split in two so that n·ln2 is exact in the high part.
        var r = clamped - n * 0.693_145_75
        r = r - n * 1.428_606_8e-6
        var p = Vector(repeating: 1.0 / 5040)
        p = p * r + 1.0 / 720
        p = p * r + 1.0 / 120
        p = p * r + 1.0 / 24
        p = p * r + 1.0 / 6
        p = p * r + 0.5
        p = p * r + 1
        p = p * r + 1
        // 2^n for n in [-126, 128): n + 127 in the exponent field. n = 128 only when clamped = 88.7;
        // split the scale in two so that case gives the right finite-or-infinite answer.
        let ni = SIMD8<Int32>(n)
        let half = ni &>> 1
        let scale1 = unsafeBitCast((half &+ 127) &<< 23, to: Vector.self)
        let scale2 = unsafeBitCast(((ni &- half) &+ 127) &<< 23, to: Vector.self)
        var result = p * scale1 * scale2
        result.replace(with: Vector(repeating: 0), where: x .< -87.3)
        result.replace(with: Vector(repeating: .infinity), where: x .> 88.7)
        result.replace(with: x, where: x .!= x)
        return result
    }

    /// `1 + erf(u)` for each lane, accurate in relative terms even where it is tiny (u ≪ 0).
    ///
    /// |u| < 2: `erf(u) = u·P(u²)` (degree-9 fit on [0, 2]). For negative u, where `1 + erf(u)`
    /// would cancel, `erfc(|u|) = e^(−u²)·M(|u| − 1.35)` on [0.7, 2) (degree-9 fit) and
    /// `e^(−u²)·G(1/|u|)` on [2, 10] (degree-7 fit of `erfc(x)·e^(x²)`). Beyond |u| = 10 the
    /// result saturates. The fits are this project's own (Chebyshev least squares, float32 Horner
    /// error checked below 3e-7 relative).
    @inlinable
    public static func onePlusErf(_ u: Vector) -> Vector {
        let a = unsafeBitCast(unsafeBitCast(u, to: SIMD8<UInt32>.self) & 0x7FFF_FFFF, to: Vector.self)
        // Small-argument branch.
        let z = a * a
        var p = Vector(repeating: -3.079_816_2e-08)
        p = p * z + 8.590_368_5e-07
        p = p * z - 1.190_794_3e-05
        p = p * z + 1.130_678_3e-04
        p = p * z - 8.429_419_8e-04
        p = p * z + 5.212_265_5e-03
        p = p * z - 2.685_947_7e-02
        p = p * z + 1.128_359_7e-01
        p = p * z - 3.761_261_7e-01
        p = p * z + 1.128_379_1
        let erfSmall = u * p
        // Large-argument branch: erfc(a) for a ≥ 2.
        let t = 1 / a.clamped(lowerBound: Vector(repeating: 2), upperBound: Vector(repeating: 10))
        var g = Vector(repeating: 0.282_823_15)
        g = g * t - 0.671_474_87
        g = g * t + 0.543_751_24
        g = g * t + 7.673_562_5e-03
        g = g * t - 0.289_307_09
        g = g * t + 1.292_165e-03
        g = g * t + 0.564_086_6
        g = g * t + 3.161_836_5e-06
        // Middle branch: erfc(a)·e^(a²) for 0.7 ≤ a < 2, centred at 1.35 to avoid cancellation.
        let s = a.clamped(lowerBound: Vector(repeating: 0.7), upperBound: Vector(repeating: 2)) - 1.35
        var m = Vector(repeating: -1.315_341_7e-04)
        m = m * s + 3.897_199e-04
        m = m * s - 9.935_216_5e-04
        m = m * s + 2.730_674_3e-03
        m = m * s - 7.204_578_3e-03
        m = m * s + 1.796_229_7e-02
        m = m * s - 4.225_514_5e-02
        m = m * s + 9.296_491_7e-02
        m = m * s - 0.188_885_6
        m = m * s + 0.347_960_59
        let gaussian = exp(-(z.clamped(lowerBound: Vector(repeating: 0.49), upperBound: Vector(repeating: 100))))
        let erfcLarge = gaussian * g
        var result = 1 + erfSmall
        result.replace(with: gaussian * m, where: (u .< -0.7) .& (u .> -2))
        let large = a .>= 2
        let positiveLarge = Vector(repeating: 2) - erfcLarge
        result.replace(with: positiveLarge, where: large .& (u .> 0))
        result.replace(with: erfcLarge, where: large .& (u .< 0))
        result.replace(with: Vector(repeating: 0), where: u .< -10)
        result.replace(with: Vector(repeating: 2), where: u .> 10)
        result.replace(with: u, where: u .!= u)
        return result
    }

    /// The exact (erf-based) GELU: `x · (1 + erf(x/√2)) / 2`.
    @inlinable
    public static func gelu(_ x: Vector) -> Vector {
        0.5 * x * onePlusErf(x * 0.707_106_78)
    }
}
