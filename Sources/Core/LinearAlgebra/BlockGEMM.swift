import CKernels

/// Block-quantized matrix products for the decoder's linear layers: `y[T, out] = x[T, in] · Wᵀ + b`
/// with `W` in GGUF-style blocks (`BlockQuantizedMatrix`: 4- or 8-bit codes, a zero point, float16
/// scales and minimums per block of 32) read as stored, and `x` quantized per row per block of 32
/// to signed 8 bits (`BlockQuantizedRows`). For row `t`, column `j`:
///
///     y[t][j] = (accumulate ? y[t][j] : 0) + bias[j]
///             + Σ_b ( d[j][b]·d_a[t][b]·(Σᵢ u·a − z·s_a[t][b]) + m[j][b]·d_a[t][b]·s_a[t][b] )
///
/// with the integer part exact in `Int32` on every path and the rest in `Float`, summed in an
/// order that differs between paths: each result is within a few `Float` roundings of the sum of
/// the absolute terms (tests allow 1e-5 of it, plus 1e-6), and all paths give the same integers
/// (`accumulators`). Decoding one token (`T = 1`) streams every weight byte once; prefill
/// (`T ≥ 2`) unpacks 16 weight rows at a time into a small buffer that every row reuses.
///
/// The paths are `Int8GEMM`'s, detected and forced the same way (`Int8GEMM.withPath` forces
/// both): generic C; AVX2 (`vpmaddubsw` on 4-bit codes, exact; on 8-bit codes made signed,
/// `|u − 128| · (a · sign)`, exact); AVX-512 VNNI and the 256-bit VNNI forms (`vpdpbusd`).
/// References: `ReferenceKernels.blockQuantizedRow`, `blockIntegers`, `blockMatMul`.
package enum BlockGEMM {
    /// One implementation of the products: the same set, and the same switch, as `Int8GEMM`'s.
    package typealias Path = Int8GEMM.Path

    /// The C code for "the default path".
    static let best = Int32(CE_GEMM_BEST)

    /// The paths this CPU runs, in `Path` order.
    package static var paths: [Path] { Int8GEMM.paths }

    /// The path a call without `path` runs: the fastest here, unless `Int8GEMM.withPath` forced one.
    package static var defaultPath: Path { Int8GEMM.defaultPath }

    /// Quantizes each row of `x: [rows, columns]` (row stride `rowStride`, default `columns`;
    /// `columns` a multiple of 32; finite values) per block of 32 into `quantized`:
    /// `d_a = max|x| / 127`, `a = clamp(round(x / d_a), −127, 127)` to nearest even, `s_a = Σ a`; a
    /// block whose `d_a` is 0 (zeros, or values so small that `max|x| / 127` underflows) gets
    /// `d_a = 0` and codes 0. Every path writes the same bytes.
    /// - Returns: false (nothing written) when `path` is not available on this CPU.
    /// - Complexity: O(rows·columns).
    @discardableResult
    package static func quantize(
        _ x: UnsafePointer<Float>, rows: Int, columns: Int, rowStride: Int? = nil,
        into quantized: inout BlockQuantizedRows, path: Path? = nil
    ) -> Bool {
        let ldx = rowStride ?? columns
        precondition(
            rows >= 0 && columns >= 0 && ldx >= columns && columns % BlockQuantizedMatrix.blockSize == 0,
            "BlockGEMM.quantize: shape \(rows)×\(columns), row stride \(ldx)")
        guard path.map({ paths.contains($0) }) ?? true else { return false }
        quantized.reshape(rows: rows, columns: columns)
        guard rows > 0 else { return true }
        let status = quantized.codes.withUnsafeMutableBufferPointer { q in
            quantized.scales.withUnsafeMutableBufferPointer { d in
                quantized.sums.withUnsafeMutableBufferPointer { s in
                    // reshape keeps every array non-empty, so each has an address.
                    ce_block_quantize(
                        x, rows, columns, ldx, q.baseAddress!, d.baseAddress!, s.baseAddress!, path?.rawValue ?? best)
                }
            }
        }
        return status == 0
    }

    /// `acc[t][j − first][b] = Σᵢ u[j][32b + i] · a[t][32b + i] − z · s_a[t][b]`, exact: the integer
    /// part of every block, as every path computes it, for the output columns `columns` (default
    /// all), into `acc: [rows, columns.count, in / 32]`. For tests.
    /// - Returns: false (nothing written) when `path` is not available on this CPU.
    /// - Complexity: O(rows·columns·in).
    @discardableResult
    package static func accumulators(
        _ a: BlockQuantizedRows, _ w: BlockQuantizedMatrix, columns: Range<Int>? = nil,
        into acc: UnsafeMutablePointer<Int32>, path: Path? = nil
    ) -> Bool {
        let columns = checkedColumns(columns, a, w)
        return a.withRows { rows in
            w.withMatrix { matrix in
                ce_block_gemm_s32(matrix, rows, columns.lowerBound, columns.upperBound, acc, path?.rawValue ?? best)
                    == 0
            }
        }
    }

    /// `c[t][j] = (accumulate ? c[t][j] : 0) + bias[j] + Σ_b (d·d_a·(Σ u·a − z·s_a) + m·d_a·s_a)` for
    /// quantized activations `a: [rows, in]` and weights `w: [out, in]`, for the output columns
    /// `columns` (default all; any bounds, so that threads can share one product by columns) of
    /// `c: [rows, out]` (row stride `ldc`, default `out`). `bias` and `c` point at column 0, not
    /// at `columns.lowerBound`; `bias` nil adds nothing. With `accumulate`, `c` holds the residual
    /// on entry. `c` must not alias the operands.
    /// - Returns: false (nothing written) when `path` is not available on this CPU.
    /// - Complexity: O(rows·columns·in).
    @discardableResult
    package static func multiply(
        _ a: BlockQuantizedRows, _ w: BlockQuantizedMatrix, columns: Range<Int>? = nil, bias: UnsafePointer<Float>?,
        into c: UnsafeMutablePointer<Float>, ldc: Int? = nil, accumulate: Bool = false, path: Path? = nil
    ) -> Bool {
        let columns = checkedColumns(columns, a, w)
        let ld = ldc ?? w.outputSize
        precondition(ld >= w.outputSize, "BlockGEMM: ldc \(ld) below \(w.outputSize)")
        return a.withRows { rows in
            w.withMatrix { matrix in
                ce_block_gemm_f32(
                    matrix, rows, columns.lowerBound, columns.upperBound, bias, c, ld, accumulate ? 1 : 0,
                    path?.rawValue ?? best) == 0
            }
        }
    }

    /// A block-quantized linear layer on float activations:
    /// `y[R, out] = (accumulate ? y : 0) + x[R, in] · Wᵀ + b` over the output columns `columns`
    /// (default all), `x` quantized per row into `buffer` first (the cost of that pass included).
    /// The counterpart of `Int8GEMM.matmul` for GGUF-style weights.
    ///
    /// `lda` and `ldc` are the row strides of `x` and `y` as stored (default `in` and `out`).
    /// - Returns: false (nothing written) when `path` is not available on this CPU.
    /// - Complexity: O(R·columns·in + R·in).
    @discardableResult
    package static func matmul(
        activations x: UnsafePointer<Float>, rows: Int, lda: Int? = nil,
        weights w: BlockQuantizedMatrix, columns: Range<Int>? = nil, bias: UnsafePointer<Float>?,
        into y: UnsafeMutablePointer<Float>, ldc: Int? = nil, accumulate: Bool = false,
        buffer: inout BlockQuantizedRows, path: Path? = nil
    ) -> Bool {
        guard quantize(x, rows: rows, columns: w.inputSize, rowStride: lda, into: &buffer, path: path) else {
            return false
        }
        return multiply(buffer, w, columns: columns, bias: bias, into: y, ldc: ldc, accumulate: accumulate, path: path)
    }

    /// `columns` (default all of `w`'s) after the checks every product makes.
    static func checkedColumns(_ columns: Range<Int>?, _ a: BlockQuantizedRows, _ w: BlockQuantizedMatrix)
        -> Range<Int>
    {
        precondition(
            a.columns == w.inputSize, "BlockGEMM: activations of depth \(a.columns), weights of depth \(w.inputSize)")
        let columns = columns ?? 0..<w.outputSize
        precondition(
            columns.lowerBound >= 0 && columns.upperBound <= w.outputSize,
            "BlockGEMM: columns \(columns) outside 0..<\(w.outputSize)")
        return columns
    }
}
