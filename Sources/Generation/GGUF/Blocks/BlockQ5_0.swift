/// Q5_0: 32 weights as 5-bit codes around 16, with one scale: x = d · (q − 16).
///
///     offset  size  field
///     0       2     d    f16 scale
///     2       4     qh   fifth bits, little-endian: bit j belongs to weight j
///     6       16    qs   low 4 bits: byte j holds weight j (low nibble) and weight j + 16 (high nibble)
enum BlockQ5_0: BlockFormat {
    static let type = GGMLType.q5_0

    static func nonFiniteScale(in block: UnsafeRawPointer) -> String? {
        block.halfIsNonFinite(at: 0) ? "d" : nil
    }

    static func referenceDequantize(_ block: UnsafeRawPointer, into output: UnsafeMutablePointer<Float>) {
        let d = block.half(at: 0)
        let qh = block.word(at: 2)
        for j in 0..<16 {
            let byte = block.byte(at: 6 + j)
            let q0 = Int(byte & 0x0F) | Int((qh >> j) & 1) << 4
            let q1 = Int(byte >> 4) | Int((qh >> (j + 16)) & 1) << 4
            output[j] = Float(q0 - 16) * d
            output[j + 16] = Float(q1 - 16) * d
        }
    }

    static func dequantize(_ blocks: UnsafeRawPointer, count: Int, into output: UnsafeMutablePointer<Float>) {
        let sixteen = SIMD16<Float>(repeating: 16)
        for b in 0..<count {
            let block = blocks + 22 * b
            let out = output + 32 * b
            let d = SIMD16<Float>(repeating: block.half(at: 0))
            let (low, high) = fifthBits(block.word(at: 2))
            let codes = block.bytes16(at: 6)
            // q − 16 is exact in Float, so subtracting after the conversion matches the reference.
            out.store((floats((codes & 0x0F) | low) - sixteen) * d, at: 0)
            out.store((floats((codes &>> 4) | high) - sixteen) * d, at: 16)
        }
    }
}

/// The fifth bits of a Q5_0 or Q5_1 block as 16 (weights 0–15) and 16 (weights 16–31) bytes of
/// 0 or 16, to OR into the low nibbles.
@inline(__always)
func fifthBits(_ qh: UInt32) -> (low: SIMD16<UInt8>, high: SIMD16<UInt8>) {
    let shifts = SIMD16<UInt32>(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15)
    let low = (SIMD16<UInt32>(repeating: qh) &>> shifts) & 1
    let high = (SIMD16<UInt32>(repeating: qh >> 16) &>> shifts) & 1
    return (SIMD16<UInt8>(truncatingIfNeeded: low &<< 4), SIMD16<UInt8>(truncatingIfNeeded: high &<< 4))
}
