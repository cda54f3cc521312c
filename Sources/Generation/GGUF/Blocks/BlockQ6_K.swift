/// Q6_K: a super-block of 256 weights in 16 sub-blocks of 16, each with a signed 8-bit scale:
/// x = (d · sc) · (q − 32), q a 6-bit code.
///
///     offset  size  field
///     0       128   ql      low 4 bits; for half h (weights 128h..<128h+128), byte 64h + l holds
///                           weight l (low nibble) and l + 64 (high nibble), byte 64h + 32 + l
///                           weights l + 32 and l + 96, for l in 0..<32
///     128     64    qh      top 2 bits; byte 32h + l holds weights l, l + 32, l + 64, l + 96 of
///                           half h in bits 0–1, 2–3, 4–5, 6–7
///     192     16    scales  int8 scale of each 16 weights
///     208     2     d       f16 scale of the scales
enum BlockQ6_K: BlockFormat {
    static let type = GGMLType.q6_K

    static func nonFiniteScale(in block: UnsafeRawPointer) -> String? {
        block.halfIsNonFinite(at: 208) ? "d" : nil
    }

    static func referenceDequantize(_ block: UnsafeRawPointer, into output: UnsafeMutablePointer<Float>) {
        let d = block.half(at: 208)
        for h in 0..<2 {
            let ql = block + 64 * h
            let qh = block + 128 + 32 * h
            let scales = block + 192 + 8 * h
            let y = output + 128 * h
            for l in 0..<32 {
                let s = l / 16
                let high = Int(qh.byte(at: l))
                let q1 = Int(ql.byte(at: l) & 0x0F) | ((high & 3) << 4)
                let q2 = Int(ql.byte(at: l + 32) & 0x0F) | (((high >> 2) & 3) << 4)
                let q3 = Int(ql.byte(at: l) >> 4) | (((high >> 4) & 3) << 4)
                let q4 = Int(ql.byte(at: l + 32) >> 4) | (((high >> 6) & 3) << 4)
                y[l] = d * scale(scales, s) * Float(q1 - 32)
                y[l + 32] = d * scale(scales, s + 2) * Float(q2 - 32)
                y[l + 64] = d * scale(scales, s + 4) * Float(q3 - 32)
                y[l + 96] = d * scale(scales, s + 6) * Float(q4 - 32)
            }
        }
    }

    @inline(__always)
    private static func scale(_ scales: UnsafeRawPointer, _ i: Int) -> Float {
        Float(Int8(bitPattern: scales.byte(at: i)))
    }

    static func dequantize(_ blocks: UnsafeRawPointer, count: Int, into output: UnsafeMutablePointer<Float>) {
        let bias = SIMD16<Float>(repeating: 32)
        for b in 0..<count {
            let block = blocks + 210 * b
            let d = block.half(at: 208)
            for h in 0..<2 {
                let scales = block + 192 + 8 * h
                let y = output + 256 * b + 128 * h
                for s in 0..<2 {
                    let a = block.bytes16(at: 64 * h + 16 * s)
                    let c = block.bytes16(at: 64 * h + 32 + 16 * s)
                    let top = block.bytes16(at: 128 + 32 * h + 16 * s)
                    // q − 32 is exact in Float, so subtracting after the conversion matches the reference.
                    let q1 = floats((a & 0x0F) | ((top & 3) &<< 4)) - bias
                    let q2 = floats((c & 0x0F) | (((top &>> 2) & 3) &<< 4)) - bias
                    let q3 = floats((a &>> 4) | (((top &>> 4) & 3) &<< 4)) - bias
                    let q4 = floats((c &>> 4) | (((top &>> 6) & 3) &<< 4)) - bias
                    y.store(SIMD16(repeating: d * scale(scales, s)) * q1, at: 16 * s)
                    y.store(SIMD16(repeating: d * scale(scales, s + 2)) * q2, at: 32 + 16 * s)
                    y.store(SIMD16(repeating: d * scale(scales, s + 4)) * q3, at: 64 + 16 * s)
                    y.store(SIMD16(repeating: d * scale(scales, s + 6)) * q4, at: 96 + 16 * s)
                }
            }
        }
    }
}
