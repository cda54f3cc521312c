import CKernels

/// Activations `x: [R, K]` quantized per row to unsigned 8 bits with a zero point
/// (`x[i][k] ≈ scales[i] · (codes[i][k] − zeroPoints[i])`), as `Int8GEMM.quantize` writes them.
///
/// A buffer meant to be reused: quantizing into it keeps its storage, so an encoder quantizes
/// every layer's input into the same one.
/// ```swift
/// var rows = QuantizedRows()
/// Int8GEMM.quantize(x, rows: t, columns: h, into: &rows)
/// ```
package struct QuantizedRows: Sendable {
    /// `R`: rows quantized.
    package private(set) var rows = 0
    /// `K`: values per row.
    package private(set) var columns = 0
    /// Bytes from one row's codes to the next: `K` rounded up to a multiple of 4 (the kernels read
    /// four bytes at a time; the bytes past `K` are 0).
    package private(set) var stride = 0
    /// At least `R × stride` codes, row after row.
    package internal(set) var codes: [UInt8] = []
    /// At least `R` scales.
    package internal(set) var scales: [Float] = []
    /// At least `R` zero points, each in 0 … 255.
    package internal(set) var zeroPoints: [Int32] = []

    /// An empty buffer.
    package init() {}

    /// Rows that hold given codes (`codes: [R, columns]`, unpadded), scales and zero points: for
    /// tests of the products at chosen values.
    package init(codes: [UInt8], scales: [Float], zeroPoints: [Int32], columns: Int) {
        let rows = scales.count
        precondition(
            codes.count == rows * columns && zeroPoints.count == rows,
            "QuantizedRows: \(codes.count) codes for \(rows)×\(columns)")
        reshape(rows: rows, columns: columns)
        for i in 0..<rows {
            self.codes.replaceSubrange(
                (i * stride)..<(i * stride + columns), with: codes[(i * columns)..<((i + 1) * columns)])
        }
        self.scales.replaceSubrange(0..<rows, with: scales)
        self.zeroPoints.replaceSubrange(0..<rows, with: zeroPoints)
    }

    /// Makes room for `rows × columns` values; storage only grows.
    mutating func reshape(rows: Int, columns: Int) {
        precondition(rows >= 0 && columns >= 0, "QuantizedRows: negative shape")
        self.rows = rows
        self.columns = columns
        stride = ce_gemm_activation_stride(columns)
        // Never empty, so that the kernels always get a real address.
        if codes.count < max(1, rows * stride) { codes = [UInt8](repeating: 0, count: max(1, rows * stride)) }
        if scales.count < max(1, rows) { scales = [Float](repeating: 0, count: max(1, rows)) }
        if zeroPoints.count < max(1, rows) { zeroPoints = [Int32](repeating: 0, count: max(1, rows)) }
    }

    /// Row `i`'s `K` codes (for tests and references).
    package func codes(ofRow i: Int) -> [UInt8] {
        precondition(i >= 0 && i < rows, "QuantizedRows: row \(i) out of range")
        return Array(codes[(i * stride)..<(i * stride + columns)])
    }
}
