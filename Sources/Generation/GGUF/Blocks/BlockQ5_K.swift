/// Q5_K: like Q4_K with a fifth bit per weight: x = (d · sc) · (q + 16 · h) − (dmin · m).
///
///     offset  size  field
///     0       2     d       f16 scale of the sub-block scales
///     2       2     dmin    f16 scale of the sub-block minimums
///     4       12    scales  packed as in Q4_K
///     16      32    qh      fifth bits: bit s of byte l belongs to weight l of sub-block s
///     48      128   qs      low 4 bits, laid out as Q4_K's
enum BlockQ5_K: BlockFormat {
    static let type = GGMLType.q5_K

    static func nonFiniteScale(in block: UnsafeRawPointer) -> String? {
        block.halfIsNonFinite(at: 0) ? "d" : block.halfIsNonFinite(at: 2) ? "dmin" : nil
    }

    static func referenceDequantize(_ block: UnsafeRawPointer, into output: UnsafeMutablePointer<Float>) {
        let d = block.half(at: 0)
        let dmin = block.half(at: 2)
        let scales = block + 4
        let qh = block + 16
        let qs = block + 48
        for c in 0..<4 {
            let (sc1, m1) = BlockQ4_K.scaleAndMinimum(scales, 2 * c)
            let (sc2, m2) = BlockQ4_K.scaleAndMinimum(scales, 2 * c + 1)
            let d1 = d * sc1
            let min1 = dmin * m1
            let d2 = d * sc2
            let min2 = dmin * m2
            let low = UInt8(1) << (2 * c)
            let high = UInt8(1) << (2 * c + 1)
            for l in 0..<32 {
                let q = (qs.byte(at: 32 * c + l) & 0x0F) + (qh.byte(at: l) & low != 0 ? 16 : 0)
                output[64 * c + l] = d1 * Float(q) - min1
            }
            for l in 0..<32 {
                let q = (qs.byte(at: 32 * c + l) >> 4) + (qh.byte(at: l) & high != 0 ? 16 : 0)
                output[64 * c + 32 + l] = d2 * Float(q) - min2
            }
        }
    }

    static func dequantize(_ blocks: UnsafeRawPointer, count: Int, into output: UnsafeMutablePointer<Float>) {
        for b in 0..<count {
            let block = blocks + 176 * b
            let out = output + 256 * b
            let d = block.half(at: 0)
            let dmin = block.half(at: 2)
            let scales = block + 4
            let fifth = (block.bytes16(at: 16), block.bytes16(at: 32))
            for c in 0..<4 {
                let (sc1, m1) = BlockQ4_K.scaleAndMinimum(scales, 2 * c)
                let (sc2, m2) = BlockQ4_K.scaleAndMinimum(scales, 2 * c + 1)
                let d1 = SIMD16(repeating: d * sc1)
                let min1 = SIMD16(repeating: dmin * m1)
                let d2 = SIMD16(repeating: d * sc2)
                let min2 = SIMD16(repeating: dmin * m2)
                let shift = SIMD16<UInt8>(repeating: UInt8(2 * c))
                for half in 0..<2 {
                    let codes = block.bytes16(at: 48 + 32 * c + 16 * half)
                    let h = half == 0 ? fifth.0 : fifth.1
                    let lowBit = ((h &>> shift) & 1) &<< 4
                    let highBit = ((h &>> (shift &+ 1)) & 1) &<< 4
                    out.store(d1 * floats((codes & 0x0F) | lowBit) - min1, at: 64 * c + 16 * half)
                    out.store(d2 * floats((codes &>> 4) | highBit) - min2, at: 64 * c + 32 + 16 * half)
                }
            }
        }
    }
}
