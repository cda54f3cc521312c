/// Q3_K: a super-block of 256 weights in 16 sub-blocks of 16, each with a signed 6-bit scale:
/// x = (d · (sc − 32)) · q, q a 3-bit code in −4…3 (two low bits, and a high bit that, when clear,
/// subtracts 4).
///
///     offset  size  field
///     0       32    hmask   high bits: weight 32i + l is bit i of byte l
///     32      64    qs      two low bits, laid out as Q2_K's codes
///     96      12    scales  sub-block s: low 4 bits in byte s % 8 (low nibble for s < 8, high for
///                           s ≥ 8), top 2 bits in byte 8 + s % 4 at bit 2·(s / 4)
///     108     2     d       f16 scale of the scales
enum BlockQ3_K: BlockFormat {
    static let type = GGMLType.q3_K

    static func nonFiniteScale(in block: UnsafeRawPointer) -> String? {
        block.halfIsNonFinite(at: 108) ? "d" : nil
    }

    /// Sub-block `s`'s scale, `sc − 32`.
    @inline(__always)
    static func scale(_ block: UnsafeRawPointer, _ s: Int) -> Float {
        let low = (block.byte(at: 96 + s % 8) >> (4 * UInt8(s / 8))) & 0x0F
        let high = (block.byte(at: 104 + s % 4) >> (2 * UInt8(s / 4))) & 3
        return Float(Int(low | high << 4) - 32)
    }

    static func referenceDequantize(_ block: UnsafeRawPointer, into output: UnsafeMutablePointer<Float>) {
        let d = block.half(at: 108)
        for e in 0..<256 {
            let (h, k, l) = (e / 128, (e % 128) / 32, e % 32)
            let low = Int((block.byte(at: 32 + 32 * h + l) >> (2 * k)) & 3)
            let set = (block.byte(at: e % 32) >> (e / 32)) & 1 == 1
            output[e] = d * scale(block, e / 16) * Float(low - (set ? 0 : 4))
        }
    }

    static func dequantize(_ blocks: UnsafeRawPointer, count: Int, into output: UnsafeMutablePointer<Float>) {
        let four = SIMD16<Float>(repeating: 4)
        for b in 0..<count {
            let block = blocks + 110 * b
            let out = output + 256 * b
            let d = block.half(at: 108)
            let masks = (block.bytes16(at: 0), block.bytes16(at: 16))
            for h in 0..<2 {
                let codes = (block.bytes16(at: 32 + 32 * h), block.bytes16(at: 48 + 32 * h))
                for k in 0..<4 {
                    let shift = SIMD16<UInt8>(repeating: UInt8(2 * k))
                    let bit = SIMD16<UInt8>(repeating: UInt8(4 * h + k))
                    for half in 0..<2 {
                        let e = 128 * h + 32 * k + 16 * half
                        let scale = SIMD16<Float>(repeating: d * scale(block, e / 16))
                        let low = floats(((half == 0 ? codes.0 : codes.1) &>> shift) & 3)
                        let clear = floats(~((half == 0 ? masks.0 : masks.1) &>> bit) & 1)
                        // low − 4·clear is exact in Float, so this matches the reference.
                        let q = low - four * clear
                        out.store(scale * q, at: e)
                    }
                }
            }
        }
    }
}
