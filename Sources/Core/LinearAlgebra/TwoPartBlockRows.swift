import CKernels

/// Activations quantized in two 8-bit parts per block of 32, for block products that need more
/// than 8 bits: `coarse` as `BlockGEMM.quantize` writes it (`x ≈ d_a · a`), and `residual`, what
/// `coarse` leaves out (`r = x − d_a · a`, at most `d_a / 2` per element), quantized the same way
/// (`r ≈ d_r · a_r`, `d_r ≤ d_a / 254`). `BlockGEMM.multiply` adds the products of both, which
/// is the product of `x` with an error per element of at most `d_r / 2 ≤ max|x| / 64,516`, about
/// what 16-bit codes give, on the same 8-bit kernels.
///
/// Why: the decoder's top-1 agreement with its float32 reference is 0.971 with 8-bit activations
/// and 0.999 with two parts (SmolLM2-135M, Docs/Generation.md), for twice the integer work. Both
/// parts go through one pass over the weights: each weight block is read and unpacked once and
/// multiplied with both parts' codes (`ce_block_gemm_two_part_f32`).
///
/// A buffer meant to be reused, like `BlockQuantizedRows`.
package struct TwoPartBlockRows: Sendable {
    /// `x ≈ d_a · a`.
    package private(set) var coarse = BlockQuantizedRows()
    /// `x − d_a · a ≈ d_r · a_r`.
    package private(set) var residual = BlockQuantizedRows()
    /// `[T, in]` the residual in float, before it is quantized.
    private var buffer: [Float] = []

    /// An empty buffer.
    package init() {}

    /// `T`: rows quantized.
    package var rows: Int { coarse.rows }

    /// Quantizes each row of `x: [rows, columns]` (row stride `rowStride`, default `columns`;
    /// `columns` a multiple of 32; finite values) into both parts, on `path` (default: the fastest).
    /// - Returns: false (nothing written) when `path` is not available on this CPU.
    /// - Complexity: O(rows·columns).
    @discardableResult
    package mutating func quantize(
        _ x: UnsafePointer<Float>, rows: Int, columns: Int, rowStride: Int? = nil, path: BlockGEMM.Path? = nil
    ) -> Bool {
        let ldx = rowStride ?? columns
        guard BlockGEMM.quantize(x, rows: rows, columns: columns, rowStride: ldx, into: &coarse, path: path) else {
            return false
        }
        // Never empty (as BlockQuantizedRows' storage), so that it always has an address.
        if buffer.count < max(1, rows * columns) { buffer = [Float](repeating: 0, count: max(1, rows * columns)) }
        return buffer.withUnsafeMutableBufferPointer { r in
            coarse.codes.withUnsafeBufferPointer { codes in
                coarse.scales.withUnsafeBufferPointer { scales in
                    ce_block_residual(
                        x, rows, columns, ldx, codes.baseAddress, scales.baseAddress, r.baseAddress!, columns)
                }
            }
            return BlockGEMM.quantize(r.baseAddress!, rows: rows, columns: columns, into: &residual, path: path)
        }
    }
}

extension BlockGEMM {
    /// `c[t][j] = (accumulate ? c[t][j] : 0) + bias[j] + (coarse product) + (residual product)`,
    /// bit for bit what `multiply` on `a.coarse` followed by `multiply` on `a.residual`
    /// (accumulating, no bias) over the same `columns` gives on the same path, in one pass over
    /// the weights: decoding one token (`rows == 1`) reads and unpacks each weight block once for
    /// both parts, and prefill builds each tile of weights once for both.
    /// - Returns: false (nothing written) when `path` is not available on this CPU.
    /// - Complexity: O(rows·columns·in).
    @discardableResult
    package static func multiply(
        _ a: TwoPartBlockRows, _ w: BlockQuantizedMatrix, columns: Range<Int>? = nil, bias: UnsafePointer<Float>?,
        into c: UnsafeMutablePointer<Float>, ldc: Int? = nil, accumulate: Bool = false, path: Path? = nil
    ) -> Bool {
        let columns = checkedColumns(columns, a.coarse, w)
        precondition(
            a.residual.rows == a.coarse.rows && a.residual.columns == a.coarse.columns,
            "BlockGEMM: parts of \(a.coarse.rows)×\(a.coarse.columns) and \(a.residual.rows)×\(a.residual.columns)")
        let ld = ldc ?? w.outputSize
        precondition(ld >= w.outputSize, "BlockGEMM: ldc \(ld) below \(w.outputSize)")
        return a.coarse.withRows { coarse in
            a.residual.withRows { residual in
                w.withMatrix { matrix in
                    ce_block_gemm_two_part_f32(
                        matrix, coarse, residual, columns.lowerBound, columns.upperBound, bias, c, ld,
                        accumulate ? 1 : 0, path?.rawValue ?? best) == 0
                }
            }
        }
    }
}
