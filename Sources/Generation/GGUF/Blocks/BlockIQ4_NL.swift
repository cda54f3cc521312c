/// The 16 values IQ4_NL and IQ4_XS codes index (ggml's `kvalues_iq4nl`): a non-linear grid, denser
/// near zero.
let iq4Grid: [Int8] = [-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113]

/// IQ4_NL: 32 weights as 4-bit indices into a fixed grid, with one scale: x = d · grid[q].
///
///     offset  size  field
///     0       2     d    f16 scale
///     2       16    qs   byte j holds weight j (low nibble) and weight j + 16 (high nibble)
enum BlockIQ4_NL: BlockFormat {
    static let type = GGMLType.iq4_nl

    static func nonFiniteScale(in block: UnsafeRawPointer) -> String? {
        block.halfIsNonFinite(at: 0) ? "d" : nil
    }

    static func referenceDequantize(_ block: UnsafeRawPointer, into output: UnsafeMutablePointer<Float>) {
        let d = block.half(at: 0)
        for j in 0..<16 {
            let byte = block.byte(at: 2 + j)
            output[j] = d * Float(iq4Grid[Int(byte & 0x0F)])
            output[j + 16] = d * Float(iq4Grid[Int(byte >> 4)])
        }
    }

    static func dequantize(_ blocks: UnsafeRawPointer, count: Int, into output: UnsafeMutablePointer<Float>) {
        let grid = iq4GridFloats
        for b in 0..<count {
            let block = blocks + 18 * b
            let out = output + 32 * b
            let d = SIMD16<Float>(repeating: block.half(at: 0))
            let codes = block.bytes16(at: 2)
            out.store(d * lookUp(grid, codes & 0x0F), at: 0)
            out.store(d * lookUp(grid, codes &>> 4), at: 16)
        }
    }
}

/// The grid as floats, for the fast paths.
let iq4GridFloats = SIMD16<Float>(iq4Grid.map { Float($0) })

/// `grid[i]` for each of sixteen indices below 16.
@inline(__always)
func lookUp(_ grid: SIMD16<Float>, _ indices: SIMD16<UInt8>) -> SIMD16<Float> {
    var values = SIMD16<Float>()
    for i in 0..<16 { values[i] = grid[Int(indices[i])] }
    return values
}
