import CKernels

/// Activations `x: [T, in]` quantized per row per block of 32 to signed 8 bits, as
/// `BlockGEMM.quantize` writes them: `x[t][32b + i] ≈ scales[t][b] · a[t][32b + i]`, with
/// `d_a = max|x| / 127`, `a = round(x / d_a)` in −127 … 127 and `sums[t][b] = Σᵢ a[t][32b + i]`.
///
/// Layout of a row's codes (what the kernels read; `codes(ofRow:)` gives element order): groups
/// of four blocks, 128 bytes each; group `g` holds elements 0 … 15 of blocks `4g`, `4g + 1`,
/// `4g + 2`, `4g + 3`, then their elements 16 … 31 — the order in which 64 bytes of 4-bit weights
/// (four GGML blocks) split into low and high nibbles. Blocks past `in / 32` in the last group
/// are zero. Scales and sums have `blockStride` entries per row, zero past `in / 32`.
///
/// A buffer meant to be reused: quantizing into it keeps its storage, so a decoder quantizes
/// every layer's input into the same one.
/// ```swift
/// var rows = BlockQuantizedRows()
/// BlockGEMM.quantize(x, rows: t, columns: 576, into: &rows)
/// ```
package struct BlockQuantizedRows: Sendable {
    /// `T`: rows quantized.
    package private(set) var rows = 0
    /// `in`: values per row, a multiple of 32.
    package private(set) var columns = 0
    /// Bytes from one row's codes to the next: `in` rounded up to a multiple of 128.
    package private(set) var codeStride = 0
    /// Entries from one row's scales (and sums) to the next: `in / 32` rounded up to a multiple of 16.
    package private(set) var blockStride = 0
    /// At least `T × codeStride` codes, row after row, in the grouped layout.
    package internal(set) var codes: [Int8] = []
    /// At least `T × blockStride` scales `d_a`.
    package internal(set) var scales: [Float] = []
    /// At least `T × blockStride` sums `s_a`, each `Σ a` over its block.
    package internal(set) var sums: [Int32] = []

    /// An empty buffer.
    package init() {}

    /// Rows that hold given codes (`codes: [T, columns]` in element order, `columns` a positive
    /// multiple of 32, values in −127 … 127 as the quantizer makes them) and scales
    /// (`[T, columns / 32]`), their sums computed: for tests of the products at chosen values.
    /// - Complexity: O(T·columns).
    package init(codes: [Int8], scales: [Float], columns: Int) {
        let blocks = columns / BlockQuantizedMatrix.blockSize
        precondition(
            columns > 0 && columns % BlockQuantizedMatrix.blockSize == 0 && codes.count % columns == 0,
            "BlockQuantizedRows: \(codes.count) codes in rows of \(columns)")
        let rows = codes.count / columns
        precondition(!codes.contains(-128), "BlockQuantizedRows: code −128 (the quantizer's codes are −127 … 127)")
        precondition(
            scales.count == rows * blocks, "BlockQuantizedRows: \(scales.count) scales for \(rows)×\(blocks) blocks")
        reshape(rows: rows, columns: columns)
        for t in 0..<rows {
            for b in 0..<blocks {
                var sum: Int32 = 0
                for i in 0..<BlockQuantizedMatrix.blockSize {
                    let a = codes[t * columns + b * BlockQuantizedMatrix.blockSize + i]
                    self.codes[t * codeStride + Self.offset(block: b, element: i)] = a
                    sum += Int32(a)
                }
                self.scales[t * blockStride + b] = scales[t * blocks + b]
                self.sums[t * blockStride + b] = sum
            }
        }
    }

    /// Where element `i` of block `b` sits in a row of `codes`.
    /// - Complexity: O(1).
    package static func offset(block b: Int, element i: Int) -> Int {
        (b / 4) * 128 + (i / 16) * 64 + (b % 4) * 16 + i % 16
    }

    /// Makes room for `rows × columns` values; storage only grows (new storage is zero, and the
    /// quantizer writes every byte of the rows it fills, padding included).
    /// - Complexity: O(rows·columns) when the storage grows, else O(1).
    mutating func reshape(rows: Int, columns: Int) {
        precondition(
            rows >= 0 && columns >= 0 && columns % BlockQuantizedMatrix.blockSize == 0,
            "BlockQuantizedRows: shape \(rows)×\(columns)")
        self.rows = rows
        self.columns = columns
        codeStride = ce_block_code_stride(columns)
        blockStride = ce_block_block_stride(columns)
        // Never empty, so that the kernels always get a real address.
        let codeCount = max(1, rows * codeStride)
        let blockCount = max(1, rows * blockStride)
        if codes.count < codeCount { codes = [Int8](repeating: 0, count: codeCount) }
        if scales.count < blockCount { scales = [Float](repeating: 0, count: blockCount) }
        if sums.count < blockCount { sums = [Int32](repeating: 0, count: blockCount) }
    }

    /// Row `t`'s `in` codes in element order (for tests and references).
    /// - Complexity: O(in).
    package func codes(ofRow t: Int) -> [Int8] {
        precondition(t >= 0 && t < rows, "BlockQuantizedRows: row \(t) out of range")
        return (0..<columns).map { k in
            codes[
                t * codeStride
                    + Self.offset(
                        block: k / BlockQuantizedMatrix.blockSize, element: k % BlockQuantizedMatrix.blockSize)]
        }
    }

    /// Row `t`'s `in / 32` scales.
    /// - Complexity: O(in / 32).
    package func scales(ofRow t: Int) -> [Float] {
        precondition(t >= 0 && t < rows, "BlockQuantizedRows: row \(t) out of range")
        return Array(scales[(t * blockStride)..<(t * blockStride + columns / BlockQuantizedMatrix.blockSize)])
    }

    /// Row `t`'s `in / 32` sums.
    /// - Complexity: O(in / 32).
    package func sums(ofRow t: Int) -> [Int32] {
        precondition(t >= 0 && t < rows, "BlockQuantizedRows: row \(t) out of range")
        return Array(sums[(t * blockStride)..<(t * blockStride + columns / BlockQuantizedMatrix.blockSize)])
    }

    /// Calls `body` with the C description of the rows. The pointers in it must not escape `body`.
    func withRows<R>(_ body: (UnsafePointer<ce_block_rows>) throws -> R) rethrows -> R {
        try codes.withUnsafeBufferPointer { c in
            try scales.withUnsafeBufferPointer { d in
                try sums.withUnsafeBufferPointer { s in
                    var description = ce_block_rows(
                        rows: rows, columns: columns, codes: c.baseAddress, scales: d.baseAddress, sums: s.baseAddress)
                    return try body(&description)
                }
            }
        }
    }
}
