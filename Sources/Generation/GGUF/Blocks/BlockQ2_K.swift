/// Q2_K: a super-block of 256 weights in 16 sub-blocks of 16, each with a 4-bit scale and a 4-bit
/// minimum, both scaled by the super-block's d and dmin: x = (d · sc) · q − (dmin · m), q 2 bits.
///
///     offset  size  field
///     0       16    scales  sub-block s: scale in the low nibble of byte s, minimum in the high
///     16      64    qs      2-bit codes: weight 128h + 32k + l is bits 2k…2k+1 of byte 32h + l
///                           (h in 0..<2, k in 0..<4, l in 0..<32)
///     80      2     d       f16 scale of the scales
///     82      2     dmin    f16 scale of the minimums
enum BlockQ2_K: BlockFormat {
    static let type = GGMLType.q2_K

    static func nonFiniteScale(in block: UnsafeRawPointer) -> String? {
        block.halfIsNonFinite(at: 80) ? "d" : block.halfIsNonFinite(at: 82) ? "dmin" : nil
    }

    static func referenceDequantize(_ block: UnsafeRawPointer, into output: UnsafeMutablePointer<Float>) {
        let d = block.half(at: 80)
        let dmin = block.half(at: 82)
        for e in 0..<256 {
            let s = block.byte(at: e / 16)
            let scale = d * Float(s & 0x0F)
            let minimum = dmin * Float(s >> 4)
            let (h, k, l) = (e / 128, (e % 128) / 32, e % 32)
            let q = (block.byte(at: 16 + 32 * h + l) >> (2 * k)) & 3
            output[e] = scale * Float(q) - minimum
        }
    }

    static func dequantize(_ blocks: UnsafeRawPointer, count: Int, into output: UnsafeMutablePointer<Float>) {
        for b in 0..<count {
            let block = blocks + 84 * b
            let out = output + 256 * b
            let d = block.half(at: 80)
            let dmin = block.half(at: 82)
            for h in 0..<2 {
                let codes = (block.bytes16(at: 16 + 32 * h), block.bytes16(at: 32 + 32 * h))
                for k in 0..<4 {
                    let shift = SIMD16<UInt8>(repeating: UInt8(2 * k))
                    for half in 0..<2 {
                        let s = block.byte(at: 8 * h + 2 * k + half)
                        let scale = SIMD16<Float>(repeating: d * Float(s & 0x0F))
                        let minimum = SIMD16<Float>(repeating: dmin * Float(s >> 4))
                        let q = ((half == 0 ? codes.0 : codes.1) &>> shift) & 3
                        out.store(scale * floats(q) - minimum, at: 128 * h + 32 * k + 16 * half)
                    }
                }
            }
        }
    }
}
