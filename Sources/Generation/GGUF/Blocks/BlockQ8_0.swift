/// Q8_0: 32 weights as signed bytes with one scale: x = d · q.
///
///     offset  size  field
///     0       2     d    f16 scale
///     2       32    qs   int8 codes, weight j in byte j
enum BlockQ8_0: BlockFormat {
    static let type = GGMLType.q8_0

    static func nonFiniteScale(in block: UnsafeRawPointer) -> String? {
        block.halfIsNonFinite(at: 0) ? "d" : nil
    }

    static func referenceDequantize(_ block: UnsafeRawPointer, into output: UnsafeMutablePointer<Float>) {
        let d = block.half(at: 0)
        for j in 0..<32 {
            output[j] = Float(Int8(bitPattern: block.byte(at: 2 + j))) * d
        }
    }

    static func dequantize(_ blocks: UnsafeRawPointer, count: Int, into output: UnsafeMutablePointer<Float>) {
        for b in 0..<count {
            let block = blocks + 34 * b
            let out = output + 32 * b
            let d = SIMD16<Float>(repeating: block.half(at: 0))
            out.store(floats(SIMD16<Int8>(truncatingIfNeeded: block.bytes16(at: 2))) * d, at: 0)
            out.store(floats(SIMD16<Int8>(truncatingIfNeeded: block.bytes16(at: 18))) * d, at: 16)
        }
    }
}
