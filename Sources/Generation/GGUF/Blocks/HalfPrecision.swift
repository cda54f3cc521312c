import CKernels

/// IEEE 754 half precision and bfloat16 to single precision, exactly: zeros keep their sign,
/// subnormals become normal singles, infinities stay infinite and a NaN keeps its sign and
/// payload (shifted into the single's mantissa), as numpy and ggml convert them.
package enum HalfPrecision {
    /// The single-precision value of the half-precision bit pattern `bits`: CKernels'
    /// `ce_float_from_half`, the one conversion the block products and the encoder use too.
    @inline(__always)
    package static func float(fromHalf bits: UInt16) -> Float { ce_float_from_half(bits) }

    /// `value` rounded to the nearest half (ties to even), as a bit pattern: CKernels'
    /// `ce_half_from_float`.
    @inline(__always)
    package static func half(_ value: Float) -> UInt16 { ce_half_from_float(value) }

    /// The single-precision value of the bfloat16 bit pattern `bits`: its top 16 bits.
    package static func float(fromBFloat16 bits: UInt16) -> Float {
        Float(bitPattern: UInt32(bits) << 16)
    }

    /// The same conversion without branches, in a form the compiler vectorizes: the exponent and
    /// mantissa move into a single's fields with the exponent rebiased; an all-ones exponent
    /// (infinity, NaN) gets the single's all-ones exponent instead; a zero exponent (zero,
    /// subnormal) is renormalized by adding 2^-14's exponent and subtracting 2^-14, which is exact
    /// and involves no subnormal arithmetic. Bit for bit the same as `float(fromHalf:)`.
    @inline(__always)
    static func fastFloat(fromHalf bits: UInt16) -> Float {
        let h = UInt32(bits)
        let body = (h & 0x7FFF) &<< 13
        let exponent = body & 0x0F80_0000
        let normal = body &+ 0x3800_0000
        let special = normal &+ 0x3800_0000
        let subnormal = (Float(bitPattern: normal &+ 0x0080_0000) - 0x1p-14).bitPattern
        let magnitude = exponent == 0x0F80_0000 ? special : exponent == 0 ? subnormal : normal
        return Float(bitPattern: magnitude | (h & 0x8000) &<< 16)
    }
}

extension UnsafeRawPointer {
    /// The little-endian half-precision value at `offset`, as a single.
    @inline(__always)
    func half(at offset: Int) -> Float {
        HalfPrecision.float(fromHalf: UInt16(littleEndian: loadUnaligned(fromByteOffset: offset, as: UInt16.self)))
    }

    /// Whether the little-endian half at `offset` is infinite or NaN (its exponent is all ones).
    @inline(__always)
    func halfIsNonFinite(at offset: Int) -> Bool {
        UInt16(littleEndian: loadUnaligned(fromByteOffset: offset, as: UInt16.self)) & 0x7C00 == 0x7C00
    }

    /// The little-endian 32-bit word at `offset`.
    @inline(__always)
    func word(at offset: Int) -> UInt32 { UInt32(littleEndian: loadUnaligned(fromByteOffset: offset, as: UInt32.self)) }

    /// The byte at `offset`.
    @inline(__always)
    func byte(at offset: Int) -> UInt8 { load(fromByteOffset: offset, as: UInt8.self) }

    /// Sixteen bytes from `offset`.
    @inline(__always)
    func bytes16(at offset: Int) -> SIMD16<UInt8> { loadUnaligned(fromByteOffset: offset, as: SIMD16<UInt8>.self) }
}

extension UnsafeMutablePointer<Float> {
    /// Stores sixteen floats at `self + index`, unaligned.
    @inline(__always)
    func store(_ values: SIMD16<Float>, at index: Int) {
        UnsafeMutableRawPointer(self + index).storeBytes(of: values, as: SIMD16<Float>.self)
    }
}

/// Sixteen small integers as floats.
@inline(__always)
func floats(_ values: SIMD16<UInt8>) -> SIMD16<Float> {
    SIMD16<Float>(SIMD16<Int32>(truncatingIfNeeded: values))
}

/// Sixteen signed bytes as floats.
@inline(__always)
func floats(_ values: SIMD16<Int8>) -> SIMD16<Float> {
    SIMD16<Float>(SIMD16<Int32>(truncatingIfNeeded: values))
}
