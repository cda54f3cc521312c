import CKernels

/// IEEE binary16 (float16) bit patterns and `Float`, the package's one pair of conversions: the
/// block products' scales, the GGUF reader's float16 fields, the encoder's float16 files.
package enum HalfFloat {
    /// The float32 value of a binary16 bit pattern, exactly (subnormals become normal floats;
    /// infinities and NaNs stay so): CKernels' `ce_float_from_half`, the conversion the C kernels
    /// use too.
    /// - Complexity: O(1).
    @inline(__always)
    package static func float(fromHalf bits: UInt16) -> Float { ce_float_from_half(bits) }

    /// `value` rounded to the nearest binary16 (ties to even), as a bit pattern: ±infinity from
    /// 65,520 up, a quiet NaN for NaN (CKernels' `ce_half_from_float`).
    /// - Complexity: O(1).
    @inline(__always)
    package static func half(_ value: Float) -> UInt16 { ce_half_from_float(value) }
}
