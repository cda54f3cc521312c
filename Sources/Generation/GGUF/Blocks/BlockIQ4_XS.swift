/// IQ4_XS: a super-block of 256 weights in 8 sub-blocks of 32, each with a 6-bit scale, indices
/// into IQ4_NL's grid: x = (d · (sc − 32)) · grid[q].
///
///     offset  size  field
///     0       2     d         f16 scale of the scales
///     2       2     scales_h  top 2 bits of sub-block s's scale at bits 2s…2s+1 (little-endian)
///     4       4     scales_l  low 4 bits of sub-block s's scale: byte s / 2, nibble s % 2
///     8       128   qs        sub-block s in bytes 16s…16s+15: byte j holds weight j (low
///                             nibble) and weight j + 16 (high nibble)
enum BlockIQ4_XS: BlockFormat {
    static let type = GGMLType.iq4_xs

    static func nonFiniteScale(in block: UnsafeRawPointer) -> String? {
        block.halfIsNonFinite(at: 0) ? "d" : nil
    }

    /// Sub-block `s`'s scale, `sc − 32`.
    @inline(__always)
    static func scale(_ block: UnsafeRawPointer, _ s: Int) -> Float {
        let high = UInt16(littleEndian: block.loadUnaligned(fromByteOffset: 2, as: UInt16.self))
        let low = (block.byte(at: 4 + s / 2) >> (4 * UInt8(s % 2))) & 0x0F
        return Float((Int(low) | Int((high >> (2 * s)) & 3) << 4) - 32)
    }

    static func referenceDequantize(_ block: UnsafeRawPointer, into output: UnsafeMutablePointer<Float>) {
        let d = block.half(at: 0)
        for s in 0..<8 {
            let dl = d * scale(block, s)
            for j in 0..<16 {
                let byte = block.byte(at: 8 + 16 * s + j)
                output[32 * s + j] = dl * Float(iq4Grid[Int(byte & 0x0F)])
                output[32 * s + j + 16] = dl * Float(iq4Grid[Int(byte >> 4)])
            }
        }
    }

    static func dequantize(_ blocks: UnsafeRawPointer, count: Int, into output: UnsafeMutablePointer<Float>) {
        let grid = iq4GridFloats
        for b in 0..<count {
            let block = blocks + 136 * b
            let out = output + 256 * b
            let d = block.half(at: 0)
            for s in 0..<8 {
                let dl = SIMD16<Float>(repeating: d * scale(block, s))
                let codes = block.bytes16(at: 8 + 16 * s)
                out.store(dl * lookUp(grid, codes & 0x0F), at: 32 * s)
                out.store(dl * lookUp(grid, codes &>> 4), at: 32 * s + 16)
            }
        }
    }
}
