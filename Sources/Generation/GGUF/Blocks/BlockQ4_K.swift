/// Q4_K: a super-block of 256 weights in 8 sub-blocks of 32, each with a 6-bit scale and a 6-bit
/// minimum, both scaled by the super-block's d and dmin: x = (d · sc) · q − (dmin · m).
///
///     offset  size  field
///     0       2     d       f16 scale of the sub-block scales
///     2       2     dmin    f16 scale of the sub-block minimums
///     4       12    scales  eight 6-bit scales and eight 6-bit minimums, packed (see `scaleAndMinimum`)
///     16      128   qs      4-bit codes: bytes 32c..<32c+32 hold sub-block 2c (low nibbles)
///                           and sub-block 2c + 1 (high nibbles)
package enum BlockQ4_K: BlockFormat {
    static let type = GGMLType.q4_K

    static func nonFiniteScale(in block: UnsafeRawPointer) -> String? {
        block.halfIsNonFinite(at: 0) ? "d" : block.halfIsNonFinite(at: 2) ? "dmin" : nil
    }

    /// Sub-block `j`'s scale and minimum from the 12 bytes at `scales` (shared with Q5_K).
    /// Sub-blocks 0–3 use the low 6 bits of bytes j and j + 4; sub-blocks 4–7 put their low 4
    /// bits in byte j + 4 (scale low nibble, minimum high nibble) and their top 2 bits in the
    /// spare top bits of bytes j − 4 (scale) and j (minimum).
    @inline(__always)
    package static func scaleAndMinimum(_ scales: UnsafeRawPointer, _ j: Int) -> (scale: Float, minimum: Float) {
        if j < 4 {
            return (Float(scales.byte(at: j) & 63), Float(scales.byte(at: j + 4) & 63))
        }
        let scale = (scales.byte(at: j + 4) & 0x0F) | ((scales.byte(at: j - 4) >> 6) << 4)
        let minimum = (scales.byte(at: j + 4) >> 4) | ((scales.byte(at: j) >> 6) << 4)
        return (Float(scale), Float(minimum))
    }

    static func referenceDequantize(_ block: UnsafeRawPointer, into output: UnsafeMutablePointer<Float>) {
        let d = block.half(at: 0)
        let dmin = block.half(at: 2)
        let scales = block + 4
        let qs = block + 16
        for c in 0..<4 {
            let (sc1, m1) = scaleAndMinimum(scales, 2 * c)
            let (sc2, m2) = scaleAndMinimum(scales, 2 * c + 1)
            let d1 = d * sc1
            let min1 = dmin * m1
            let d2 = d * sc2
            let min2 = dmin * m2
            for l in 0..<32 {
                output[64 * c + l] = d1 * Float(qs.byte(at: 32 * c + l) & 0x0F) - min1
            }
            for l in 0..<32 {
                output[64 * c + 32 + l] = d2 * Float(qs.byte(at: 32 * c + l) >> 4) - min2
            }
        }
    }

    static func dequantize(_ blocks: UnsafeRawPointer, count: Int, into output: UnsafeMutablePointer<Float>) {
        for b in 0..<count {
            let block = blocks + 144 * b
            let out = output + 256 * b
            let d = block.half(at: 0)
            let dmin = block.half(at: 2)
            let scales = block + 4
            for c in 0..<4 {
                let (sc1, m1) = scaleAndMinimum(scales, 2 * c)
                let (sc2, m2) = scaleAndMinimum(scales, 2 * c + 1)
                let d1 = SIMD16(repeating: d * sc1)
                let min1 = SIMD16(repeating: dmin * m1)
                let d2 = SIMD16(repeating: d * sc2)
                let min2 = SIMD16(repeating: dmin * m2)
                for half in 0..<2 {
                    let codes = block.bytes16(at: 16 + 32 * c + 16 * half)
                    out.store(d1 * floats(codes & 0x0F) - min1, at: 64 * c + 16 * half)
                    out.store(d2 * floats(codes &>> 4) - min2, at: 64 * c + 32 + 16 * half)
                }
            }
        }
    }
}
