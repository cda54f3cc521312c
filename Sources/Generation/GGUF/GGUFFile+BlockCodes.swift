extension GGUFFile {
    /// A weight matrix in blocks of 32 as the block products read them (LinearAlgebra's
    /// `BlockQuantizedMatrix`, which the decoder makes from it: this module stays a leaf).
    package struct BlockCodes: Sendable {
        /// Rows (outputs) and columns (inputs, a multiple of 32).
        package let rows: Int
        package let columns: Int
        /// 4, 5 or 8.
        package let bits: Int
        /// The zero point z of every block: w = d·(u − z) + m.
        package let zeroPoint: Int
        /// The codes: 4-bit (two per byte, GGML's Q4_0 order), the low four bits of 5-bit codes, or bytes.
        package let codes: [UInt8]
        /// 5-bit codes' fifth bits, 4 bytes per block (GGML's Q5_0 `qh` order), else nil.
        package let highBits: [UInt8]?
        /// float16 scales d and minimums m (nil: none), one per 32.
        package let scales: [UInt16]
        package let mins: [UInt16]?
    }

    /// The tensor's blocks as `BlockCodes` (read by the block products as they are), for the
    /// types that map onto them without requantizing, or nil for the others (which callers
    /// dequantize and requantize to 8-bit blocks: F32, F16, BF16, Q2_K, Q3_K, Q6_K, whose
    /// per-16 scales do not fit one scale per 32):
    ///
    /// | type | bits | code | zero point | scale, minimum per 32 |
    /// |---|---|---|---|---|
    /// | Q4_0 | 4 | q | 8 | d |
    /// | Q4_1 | 4 | q | 0 | d, m |
    /// | Q4_K | 4 (repacked per 32) | q | 0 | d·sc, −dmin·m (rounded to float16) |
    /// | Q5_0 | 5 | q | 16 | d |
    /// | Q5_1 | 5 | q | 0 | d, m |
    /// | Q5_K | 5 (repacked per 32) | q | 0 | d·sc, −dmin·m (rounded to float16) |
    /// | Q8_0 | 8 | q + 128 | 128 | d |
    /// | IQ4_NL | 8 | grid[q] + 128 | 128 | d |
    /// | IQ4_XS | 8 | grid[q] + 128 | 128 | d·(sc − 32) (rounded to float16) |
    ///
    /// Every 8-bit form has zero point 128, so that fused projections can stack parts of different
    /// types (LinearAlgebra's `BlockQuantizedMatrix(stacking:)`, which widens 4- and 5-bit parts
    /// beside 8-bit ones).
    ///
    /// Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 and IQ4_NL give exactly the file's values; Q4_K's, Q5_K's and
    /// IQ4_XS's per-32 scale (and minimum) products are rounded to float16 (a relative error up
    /// to 2⁻¹¹ of a block's scale).
    /// - Throws: `GGUFError` with `nonFiniteScale` for a block whose scale or minimum is infinite or
    ///   NaN, `invalidTensorLayout` for a tensor that is not two-dimensional.
    /// - Complexity: O(elements).
    package func blockCodes(_ tensor: GGUFTensorInfo) throws(GGUFError) -> BlockCodes? {
        let type = tensor.type
        guard let layout = NativeLayout(type) else { return nil }
        guard tensor.dimensions.count <= 2 else {
            throw GGUFError(
                .invalidTensorLayout, path: path, subject: GGUFError.tensor(tensor.name),
                detail: "\(tensor.dimensions.count) dimensions, expected a matrix")
        }
        let rows = tensor.rowCount
        let columns = tensor.rowLength
        let blocks = rows * columns / type.blockSize
        let parts = withTensorBytes(tensor) { bytes -> (block: Int, field: String)? in
            Dequantization.firstNonFiniteScale(type, bytes.baseAddress!, count: blocks)
        }
        if let bad = parts {
            throw GGUFError(
                .nonFiniteScale, path: path, offset: dataOffset + tensor.offset + bad.block * type.blockByteCount,
                subject: GGUFError.tensor(tensor.name), detail: "block \(bad.block): \(bad.field) is not finite")
        }
        let count32 = rows * columns / 32
        var codes = [UInt8](repeating: 0, count: rows * columns * (layout.bits == 8 ? 8 : 4) / 8)
        var high = layout.bits == 5 ? [UInt8](repeating: 0, count: rows * columns / 8) : nil
        var scales = [UInt16](repeating: 0, count: count32)
        var mins = layout.hasMinimums ? [UInt16](repeating: 0, count: count32) : nil
        withTensorBytes(tensor) { bytes in
            let base = bytes.baseAddress!
            codes.withUnsafeMutableBufferPointer { out in
                scales.withUnsafeMutableBufferPointer { d in
                    for b in 0..<blocks {
                        let block = base + b * type.blockByteCount
                        let first = b * type.blockSize / 32
                        let blockCodes = out.baseAddress! + b * type.blockSize * (layout.bits == 8 ? 8 : 4) / 8
                        layout.convert(
                            block, codes: blockCodes, scales: d.baseAddress! + first,
                            high: { i, byte in high?[b * type.blockSize / 8 + i] = byte }
                        ) { s, m in
                            mins?[first + s] = m
                        }
                    }
                }
            }
        }
        return BlockCodes(
            rows: rows, columns: columns, bits: layout.bits, zeroPoint: layout.zeroPoint, codes: codes,
            highBits: high, scales: scales, mins: mins)
    }
}

/// How one GGUF type's blocks become `BlockCodes`.
private struct NativeLayout {
    let type: GGMLType
    let bits: Int
    let zeroPoint: Int
    let hasMinimums: Bool

    init?(_ type: GGMLType) {
        switch type {
        case .q4_0: (bits, zeroPoint, hasMinimums) = (4, 8, false)
        case .q4_1, .q4_K: (bits, zeroPoint, hasMinimums) = (4, 0, true)
        case .q5_0: (bits, zeroPoint, hasMinimums) = (5, 16, false)
        case .q5_1, .q5_K: (bits, zeroPoint, hasMinimums) = (5, 0, true)
        case .q8_0, .iq4_nl, .iq4_xs: (bits, zeroPoint, hasMinimums) = (8, 128, false)
        default: return nil
        }
        self.type = type
    }

    /// Writes one GGUF block's codes (`type.blockSize` elements, in our layout), through
    /// `high(index, byte)` the bytes of its fifth bits (5-bit types: 4 per 32 elements), its
    /// per-32 scales and, through `minimum(subBlock, bits)`, its per-32 minimums.
    func convert(
        _ block: UnsafeRawPointer, codes out: UnsafeMutablePointer<UInt8>, scales: UnsafeMutablePointer<UInt16>,
        high: (Int, UInt8) -> Void, minimum: (Int, UInt16) -> Void
    ) {
        let halfBits = { (offset: Int) in
            UInt16(littleEndian: block.loadUnaligned(fromByteOffset: offset, as: UInt16.self))
        }
        switch type {
        case .q4_0:
            // d, 16 bytes of nibbles in the same order as ours.
            scales[0] = halfBits(0)
            for i in 0..<16 { out[i] = block.byte(at: 2 + i) }
        case .q4_1:
            scales[0] = halfBits(0)
            minimum(0, halfBits(2))
            for i in 0..<16 { out[i] = block.byte(at: 4 + i) }
        case .q8_0:
            scales[0] = halfBits(0)
            for i in 0..<32 { out[i] = block.byte(at: 2 + i) ^ 0x80 }
        case .iq4_nl:
            scales[0] = halfBits(0)
            for j in 0..<16 {
                let byte = block.byte(at: 2 + j)
                out[j] = UInt8(Int(iq4Grid[Int(byte & 0x0F)]) + 128)
                out[j + 16] = UInt8(Int(iq4Grid[Int(byte >> 4)]) + 128)
            }
        case .q5_0, .q5_1:
            // d, (m,) qh, then nibbles in Q4_0's order: d·(q − 16) for Q5_0, d·q + m for Q5_1.
            let start = type == .q5_0 ? 2 : 4
            scales[0] = halfBits(0)
            if type == .q5_1 { minimum(0, halfBits(2)) }
            for i in 0..<4 { high(i, block.byte(at: start + i)) }
            for j in 0..<16 { out[j] = block.byte(at: start + 4 + j) }
        case .q4_K:
            // 8 sub-blocks of 32; sub-block 2c + h holds nibble h of bytes 32c…32c+31.
            let d = block.half(at: 0)
            let dmin = block.half(at: 2)
            let qs = block + 16
            for s in 0..<8 {
                let (sc, m) = BlockQ4_K.scaleAndMinimum(block + 4, s)
                scales[s] = HalfPrecision.half(d * sc)
                minimum(s, HalfPrecision.half(-(dmin * m)))
                let c = s / 2
                let shift = UInt8(4 * (s % 2))
                for i in 0..<16 {
                    let low = (qs.byte(at: 32 * c + i) >> shift) & 0x0F
                    let high = (qs.byte(at: 32 * c + 16 + i) >> shift) & 0x0F
                    out[16 * s + i] = low | high << 4
                }
            }
        case .q5_K:
            // As Q4_K, each code with its fifth bit (bit s of byte l of qh for weight l of sub-block s).
            let d = block.half(at: 0)
            let dmin = block.half(at: 2)
            for s in 0..<8 {
                let (sc, m) = BlockQ4_K.scaleAndMinimum(block + 4, s)
                scales[s] = HalfPrecision.half(d * sc)
                minimum(s, HalfPrecision.half(-(dmin * m)))
                let shift = UInt8(4 * (s % 2))
                let low = { (l: Int) in (block.byte(at: 48 + 32 * (s / 2) + l) >> shift) & 0x0F }
                for i in 0..<16 { out[16 * s + i] = low(i) | low(i + 16) << 4 }
                for i in 0..<4 {
                    var byte: UInt8 = 0
                    for bit in 0..<8 { byte |= ((block.byte(at: 16 + 8 * i + bit) >> UInt8(s)) & 1) << UInt8(bit) }
                    high(4 * s + i, byte)
                }
            }
        default:
            // IQ4_XS: 8 sub-blocks of 32 with 6-bit scales around 32, nibbles as IQ4_NL's.
            let d = block.half(at: 0)
            for s in 0..<8 {
                scales[s] = HalfPrecision.half(d * BlockIQ4_XS.scale(block, s))
                for j in 0..<16 {
                    let byte = block.byte(at: 8 + 16 * s + j)
                    out[32 * s + j] = UInt8(Int(iq4Grid[Int(byte & 0x0F)]) + 128)
                    out[32 * s + j + 16] = UInt8(Int(iq4Grid[Int(byte >> 4)]) + 128)
                }
            }
        }
    }
}
