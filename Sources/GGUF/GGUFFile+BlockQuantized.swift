import LinearAlgebra

extension GGUFFile {
    /// The tensor's blocks as `BlockQuantizedMatrix` (codes read by `BlockGEMM` as they are), for
    /// the types that map onto it without requantizing, or nil for the others (which callers
    /// dequantize and requantize to 8-bit blocks):
    ///
    /// | type | bits | zero point | scale, minimum |
    /// |---|---|---|---|
    /// | Q4_0 | 4 | 8 | d |
    /// | Q4_1 | 4 | 0 | d, m |
    /// | Q8_0 | 8 (q + 128) | 128 | d |
    /// | Q4_K | 4 (repacked per 32) | 0 | d·sc, −dmin·m (rounded to float16) |
    ///
    /// Q4_0, Q4_1 and Q8_0 give exactly the file's values; Q4_K's per-32 scale and minimum
    /// products are rounded to float16 (a relative error up to 2⁻¹¹ of a block's scale).
    /// - Throws: `GGUFError` with `nonFiniteScale` for a block whose scale or minimum is infinite or
    ///   NaN, `invalidTensorLayout` for a tensor that is not two-dimensional.
    /// - Complexity: O(elements).
    package func blockQuantized(_ tensor: GGUFTensorInfo) throws(GGUFError) -> BlockQuantizedMatrix? {
        let type = tensor.type
        guard [.q4_0, .q4_1, .q8_0, .q4_K].contains(type) else { return nil }
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
        var codes = [UInt8](repeating: 0, count: type == .q8_0 ? rows * columns : rows * columns / 2)
        var scales = [UInt16](repeating: 0, count: count32)
        var mins: [UInt16]? = type == .q4_1 || type == .q4_K ? [UInt16](repeating: 0, count: count32) : nil
        withTensorBytes(tensor) { bytes in
            let base = bytes.baseAddress!
            codes.withUnsafeMutableBufferPointer { out in
                for b in 0..<blocks {
                    let block = base + b * type.blockByteCount
                    switch type {
                    case .q4_0:
                        // d, 16 bytes of nibbles in the same order as ours.
                        scales[b] = block.loadUnaligned(as: UInt16.self).littleEndian
                        for i in 0..<16 { out[16 * b + i] = block.byte(at: 2 + i) }
                    case .q4_1:
                        scales[b] = block.loadUnaligned(as: UInt16.self).littleEndian
                        mins?[b] = block.loadUnaligned(fromByteOffset: 2, as: UInt16.self).littleEndian
                        for i in 0..<16 { out[16 * b + i] = block.byte(at: 4 + i) }
                    case .q8_0:
                        scales[b] = block.loadUnaligned(as: UInt16.self).littleEndian
                        for i in 0..<32 { out[32 * b + i] = block.byte(at: 2 + i) ^ 0x80 }
                    default:
                        // Q4_K: 8 sub-blocks of 32; sub-block 2c + h holds nibble h of bytes 32c…32c+31.
                        let d = block.half(at: 0)
                        let dmin = block.half(at: 2)
                        let qs = block + 16
                        for s in 0..<8 {
                            let (sc, m) = BlockQ4_K.scaleAndMinimum(block + 4, s)
                            let target = 8 * b + s
                            scales[target] = BlockQuantizedMatrix.half(d * sc)
                            mins?[target] = BlockQuantizedMatrix.half(-(dmin * m))
                            let c = s / 2
                            let shift = UInt8(4 * (s % 2))
                            for i in 0..<16 {
                                let low = (qs.byte(at: 32 * c + i) >> shift) & 0x0F
                                let high = (qs.byte(at: 32 * c + 16 + i) >> shift) & 0x0F
                                out[16 * target + i] = low | high << 4
                            }
                        }
                    }
                }
            }
        }
        return BlockQuantizedMatrix(
            outputSize: rows, inputSize: columns, bits: type == .q8_0 ? 8 : 4,
            zeroPoint: type == .q4_0 ? 8 : type == .q8_0 ? 128 : 0, codes: codes, scales: scales, mins: mins)
    }
}
