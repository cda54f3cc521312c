import CKernels

/// A linear layer's weight matrix `W: [out, in]` in blocks of 32 along `in`, as GGUF stores its
/// quantized tensors, for `BlockGEMM`: unsigned codes `u` of 4, 5 or 8 bits, one integer zero point
/// `z` per matrix, and per block a float16 scale `d` and an optional float16 minimum `m`:
///
///     W[j][32b + i] = d[j][b] · (u[j][32b + i] − z) + m[j][b]        (no minimums: m = 0)
///
/// - 4 bits: each row holds `in / 2` bytes; a block is 16 bytes, byte `i` holding element `i` in
///   its low nibble and element `i + 16` in its high nibble (GGML's Q4_0 and Q4_1 order).
/// - 5 bits: `codes` as for 4 bits (each code's low four bits), and `highBits` `[out, in / 8]`
///   bytes: a block's fifth bits as a little-endian 32-bit word whose bit `i` is bit 4 of
///   element `i`'s code (GGML's Q5_0 and Q5_1 `qh`).
/// - 8 bits: each row holds `in` bytes, a block being its 32 codes in element order.
/// - `scales` and `mins`: `[out, in / 32]` IEEE binary16 bit patterns.
///
/// GGUF's Q4_0 is 4-bit with `z = 8` and no minimums, Q4_1 and Q4_K 4-bit with `z = 0` and
/// minimums (Q4_K's per-32 scale and minimum products rounded to float16); Q5_0 5-bit with
/// `z = 16`, Q5_1 and Q5_K 5-bit with `z = 0` and minimums; Q8_0, IQ4_NL and IQ4_XS 8-bit with
/// `z = 128` (`GGUFFile.blockQuantized` lists each). Any other
/// tensor (F32, F16, BF16, Q2_K, Q3_K, Q6_K) becomes 8-bit blocks with `init(weights:outputSize:inputSize:)`.
///
/// ```swift
/// let w = BlockQuantizedMatrix(outputSize: 960, inputSize: 576, bits: 4, zeroPoint: 0,
///                              codes: codes, scales: d, mins: m)
/// BlockGEMM.matmul(activations: x, rows: t, weights: w, bias: nil, into: y, buffer: &rows)
/// ```
/// - Complexity: O(1) to wrap raw parts (their arrays are shared, not copied); O(out·in) to
///   quantize floats. `byteCount` is `out·in/2`, `5·out·in/8` or `out·in` plus 2 or 4 bytes per block.
package struct BlockQuantizedMatrix: Sendable {
    /// Elements per block (32), along `in`.
    package static let blockSize = Int(CE_BLOCK_SIZE)

    /// `out`: rows of `W`, columns of the product.
    package let outputSize: Int
    /// `in`: columns of `W`, the depth of the product, a multiple of `blockSize`.
    package let inputSize: Int
    /// Bits per code: 4, 5 or 8.
    package let bits: Int
    /// `z`, 0 … 255.
    package let zeroPoint: Int
    /// `[out, in / 2]` (4 and 5 bits) or `[out, in]` (8 bits) codes in the layout above.
    package let codes: [UInt8]
    /// `[out, in / 8]` fifth bits (5 bits), else nil.
    package let highBits: [UInt8]?
    /// `[out, in / 32]` float16 bit patterns of `d`.
    package let scales: [UInt16]
    /// `[out, in / 32]` float16 bit patterns of `m`, or nil when the format has none.
    package let mins: [UInt16]?

    /// Blocks per row: `in / 32`.
    package var blocksPerRow: Int { inputSize / Self.blockSize }

    /// Wraps codes, scales and minimums already in this layout (another component converts
    /// GGUF's blocks). Sizes must match the shape: a mismatch is a programmer error. Scales that
    /// are infinite or NaN make the outputs that use them infinite or NaN.
    /// - Complexity: O(1).
    package init(
        outputSize: Int, inputSize: Int, bits: Int, zeroPoint: Int, codes: [UInt8], highBits: [UInt8]? = nil,
        scales: [UInt16], mins: [UInt16]?
    ) {
        precondition(
            outputSize >= 0 && inputSize >= 0 && inputSize % Self.blockSize == 0,
            "BlockQuantizedMatrix: depth \(inputSize) is not a multiple of \(Self.blockSize)")
        precondition(bits == 4 || bits == 5 || bits == 8, "BlockQuantizedMatrix: \(bits) bits (4, 5 or 8)")
        precondition((0...255).contains(zeroPoint), "BlockQuantizedMatrix: zero point \(zeroPoint) outside 0 … 255")
        let blocks = outputSize * (inputSize / Self.blockSize)
        precondition(
            codes.count == outputSize * inputSize * (bits == 8 ? 8 : 4) / 8,
            "BlockQuantizedMatrix: \(codes.count) code bytes for \(outputSize)×\(inputSize) at \(bits) bits")
        precondition(
            (bits == 5) == (highBits != nil)
                && (highBits?.count ?? outputSize * inputSize / 8) == outputSize * inputSize / 8,
            "BlockQuantizedMatrix: \(highBits?.count ?? 0) bytes of fifth bits at \(bits) bits")
        precondition(
            scales.count == blocks && (mins?.count ?? blocks) == blocks,
            "BlockQuantizedMatrix: \(scales.count) scales, \(mins?.count ?? 0) minimums for \(blocks) blocks")
        self.outputSize = outputSize
        self.inputSize = inputSize
        self.bits = bits
        self.zeroPoint = zeroPoint
        self.codes = codes
        self.highBits = highBits
        self.scales = scales
        self.mins = mins
    }

    /// Quantizes a float matrix (`[out, in]`, row-major, Hugging Face's layout; from an F32, F16
    /// or BF16 tensor) to 8-bit blocks, symmetric: per block `d = max|w| / 127` rounded to
    /// float16, `code = clamp(round(w / d), −127, 127) + 128` (to nearest even, `d` as stored),
    /// zero point 128, no minimums. A block of zeros (or one whose `d` rounds to 0) gets `d = 0`
    /// and codes 128. `in` must be a multiple of 32.
    /// - Throws: `QuantizedMatrix.InvalidWeight` for the first weight that is NaN or infinite, or
    ///   so large (|w| ≥ 127 · 65,520) that its block's scale overflows float16.
    /// - Complexity: O(out·in).
    package init(weights: [Float], outputSize: Int, inputSize: Int) throws(QuantizedMatrix.InvalidWeight) {
        precondition(
            outputSize >= 0 && inputSize >= 0 && weights.count == outputSize * inputSize,
            "BlockQuantizedMatrix: \(weights.count) weights for \(outputSize)×\(inputSize)")
        precondition(
            inputSize % Self.blockSize == 0,
            "BlockQuantizedMatrix: depth \(inputSize) is not a multiple of \(Self.blockSize)")
        let blocksPerRow = inputSize / Self.blockSize
        var codes = [UInt8](repeating: 128, count: weights.count)
        var scales = [UInt16](repeating: 0, count: outputSize * blocksPerRow)
        for j in 0..<outputSize {
            for b in 0..<blocksPerRow {
                let start = j * inputSize + b * Self.blockSize
                let block = weights[start..<(start + Self.blockSize)]
                var largest: Float = 0
                for (index, w) in zip(block.indices, block) {
                    guard w.isFinite else { throw QuantizedMatrix.InvalidWeight(row: j, column: index - j * inputSize) }
                    largest = max(largest, abs(w))
                }
                let half = HalfFloat.half(largest / 127)
                if half == 0x7C00 {
                    let column = block.firstIndex { abs($0) == largest } ?? start
                    throw QuantizedMatrix.InvalidWeight(row: j, column: column - j * inputSize)
                }
                scales[j * blocksPerRow + b] = half
                let d = HalfFloat.float(fromHalf: half)
                guard d > 0 else { continue }
                for (index, w) in zip(block.indices, block) {
                    codes[index] = UInt8(Int(max(-127, min(127, (w / d).rounded(.toNearestOrEven)))) + 128)
                }
            }
        }
        self.init(
            outputSize: outputSize, inputSize: inputSize, bits: 8, zeroPoint: 128, codes: codes, scales: scales,
            mins: nil)
    }

    /// Bytes held: codes, scales and minimums (the float32 matrix takes `4·out·in`).
    package var byteCount: Int { codes.count + (highBits?.count ?? 0) + 2 * scales.count + 2 * (mins?.count ?? 0) }

    /// Weight `W[row][column]` as the formula above gives it, in `Double` (for tests and references).
    /// - Complexity: O(1).
    package func value(row j: Int, column k: Int) -> Double {
        precondition(
            j >= 0 && j < outputSize && k >= 0 && k < inputSize, "BlockQuantizedMatrix: [\(j), \(k)] out of range")
        let b = j * blocksPerRow + k / Self.blockSize
        let m = mins.map { Double(HalfFloat.float(fromHalf: $0[b])) } ?? 0
        return Double(HalfFloat.float(fromHalf: scales[b])) * Double(code(row: j, column: k) - zeroPoint) + m
    }

    /// The unsigned code of `W[row][column]`, unpacked from its nibble (and fifth bit) or byte.
    /// - Complexity: O(1).
    package func code(row j: Int, column k: Int) -> Int {
        precondition(
            j >= 0 && j < outputSize && k >= 0 && k < inputSize, "BlockQuantizedMatrix: [\(j), \(k)] out of range")
        if bits == 8 { return Int(codes[j * inputSize + k]) }
        let i = k % Self.blockSize
        let byte = codes[j * inputSize / 2 + (k / Self.blockSize) * 16 + i % 16]
        let low = Int(i < 16 ? byte & 0x0F : byte >> 4)
        guard let highBits else { return low }
        let word = j * inputSize / 8 + (k / Self.blockSize) * 4
        return low | Int((highBits[word + i / 8] >> UInt8(i % 8)) & 1) << 4
    }

    /// Calls `body` with the C description of the matrix. The pointers in it must not escape `body`.
    func withMatrix<R>(_ body: (UnsafePointer<ce_block_matrix>) throws -> R) rethrows -> R {
        try codes.withUnsafeBufferPointer { c in
            try scales.withUnsafeBufferPointer { d in
                try withMins { m in
                    try withHighBits { h in
                        // An empty array may have no address: the kernels then read nothing from it.
                        var matrix = ce_block_matrix(
                            rows: outputSize, columns: inputSize, bits: Int32(bits), zero_point: Int32(zeroPoint),
                            codes: c.baseAddress, high: h, scales: d.baseAddress, mins: m)
                        return try body(&matrix)
                    }
                }
            }
        }
    }

    private func withHighBits<R>(_ body: (UnsafePointer<UInt8>?) throws -> R) rethrows -> R {
        guard let highBits else { return try body(nil) }
        return try highBits.withUnsafeBufferPointer { try body($0.baseAddress) }
    }

    private func withMins<R>(_ body: (UnsafePointer<UInt16>?) throws -> R) rethrows -> R {
        guard let mins else { return try body(nil) }
        // Empty (no blocks) may mean no address: the kernels then read no minimum anyway.
        return try mins.withUnsafeBufferPointer { try body($0.baseAddress) }
    }
}
