/// Q5_1: 32 weights as 5-bit codes with a scale and a minimum: x = d · q + m.
///
///     offset  size  field
///     0       2     d    f16 scale
///     2       2     m    f16 minimum
///     4       4     qh   fifth bits, as Q5_0's
///     8       16    qs   low 4 bits, as Q5_0's
enum BlockQ5_1: BlockFormat {
    static let type = GGMLType.q5_1

    static func nonFiniteScale(in block: UnsafeRawPointer) -> String? {
        block.halfIsNonFinite(at: 0) ? "d" : block.halfIsNonFinite(at: 2) ? "m" : nil
    }

    static func referenceDequantize(_ block: UnsafeRawPointer, into output: UnsafeMutablePointer<Float>) {
        let d = block.half(at: 0)
        let m = block.half(at: 2)
        let qh = block.word(at: 4)
        for j in 0..<16 {
            let byte = block.byte(at: 8 + j)
            let q0 = Int(byte & 0x0F) | Int((qh >> j) & 1) << 4
            let q1 = Int(byte >> 4) | Int((qh >> (j + 16)) & 1) << 4
            output[j] = Float(q0) * d + m
            output[j + 16] = Float(q1) * d + m
        }
    }

    static func dequantize(_ blocks: UnsafeRawPointer, count: Int, into output: UnsafeMutablePointer<Float>) {
        for b in 0..<count {
            let block = blocks + 24 * b
            let out = output + 32 * b
            let d = SIMD16<Float>(repeating: block.half(at: 0))
            let m = SIMD16<Float>(repeating: block.half(at: 2))
            let (low, high) = fifthBits(block.word(at: 4))
            let codes = block.bytes16(at: 8)
            out.store(floats((codes & 0x0F) | low) * d + m, at: 0)
            out.store(floats((codes &>> 4) | high) * d + m, at: 16)
        }
    }
}
