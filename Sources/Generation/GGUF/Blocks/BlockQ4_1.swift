/// Q4_1: 32 weights as 4-bit codes with a scale and a minimum: x = d · q + m.
///
///     offset  size  field
///     0       2     d    f16 scale
///     2       2     m    f16 minimum
///     4       16    qs   byte j holds weight j (low nibble) and weight j + 16 (high nibble)
enum BlockQ4_1: BlockFormat {
    static let type = GGMLType.q4_1

    static func nonFiniteScale(in block: UnsafeRawPointer) -> String? {
        block.halfIsNonFinite(at: 0) ? "d" : block.halfIsNonFinite(at: 2) ? "m" : nil
    }

    static func referenceDequantize(_ block: UnsafeRawPointer, into output: UnsafeMutablePointer<Float>) {
        let d = block.half(at: 0)
        let m = block.half(at: 2)
        for j in 0..<16 {
            let byte = block.byte(at: 4 + j)
            output[j] = Float(byte & 0x0F) * d + m
            output[j + 16] = Float(byte >> 4) * d + m
        }
    }

    static func dequantize(_ blocks: UnsafeRawPointer, count: Int, into output: UnsafeMutablePointer<Float>) {
        for b in 0..<count {
            let block = blocks + 20 * b
            let out = output + 32 * b
            let d = SIMD16<Float>(repeating: block.half(at: 0))
            let m = SIMD16<Float>(repeating: block.half(at: 2))
            let codes = block.bytes16(at: 4)
            out.store(floats(codes & 0x0F) * d + m, at: 0)
            out.store(floats(codes &>> 4) * d + m, at: 16)
        }
    }
}
