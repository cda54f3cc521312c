/// Q4_0: 32 weights as 4-bit codes around 8, with one scale: x = d · (q − 8).
///
///     offset  size  field
///     0       2     d    f16 scale
///     2       16    qs   byte j holds weight j (low nibble) and weight j + 16 (high nibble)
enum BlockQ4_0: BlockFormat {
    static let type = GGMLType.q4_0

    static func nonFiniteScale(in block: UnsafeRawPointer) -> String? {
        block.halfIsNonFinite(at: 0) ? "d" : nil
    }

    static func referenceDequantize(_ block: UnsafeRawPointer, into output: UnsafeMutablePointer<Float>) {
        let d = block.half(at: 0)
        for j in 0..<16 {
            let byte = block.byte(at: 2 + j)
            output[j] = Float(Int(byte & 0x0F) - 8) * d
            output[j + 16] = Float(Int(byte >> 4) - 8) * d
        }
    }

    static func dequantize(_ blocks: UnsafeRawPointer, count: Int, into output: UnsafeMutablePointer<Float>) {
        let eight = SIMD16<Float>(repeating: 8)
        for b in 0..<count {
            let block = blocks + 18 * b
            let out = output + 32 * b
            let d = SIMD16<Float>(repeating: block.half(at: 0))
            let codes = block.bytes16(at: 2)
            // q − 8 is exact in Float, so subtracting after the conversion matches the reference.
            out.store((floats(codes & 0x0F) - eight) * d, at: 0)
            out.store((floats(codes &>> 4) - eight) * d, at: 16)
        }
    }
}
