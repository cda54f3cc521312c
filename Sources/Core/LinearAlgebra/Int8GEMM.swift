import CKernels

/// Integer matrix products for quantized linear layers: `C[R, out] = A[R, in] · Wᵀ + b`, with
/// the activations `A` quantized per row to unsigned 8 bits (`QuantizedRows`) and the weights
/// per output channel to signed 8 bits (`QuantizedMatrix`), summed exactly in `Int32` and scaled
/// back to `Float` (Docs/Numerics.md, "Integer matrix products").
///
/// Each product has a generic version and vectorized ones — AVX2 (16-bit `vpmaddwd`), AVX-512
/// VNNI and AVX-VNNI (`vpdpbusd`) — chosen at run time. Every path gives the same integers and
/// bit-identical floats; tests force each one the CPU runs and compare with plain loops
/// (`ReferenceKernels.int8Accumulators`, `ReferenceKernels.int8MatMul`).
package enum Int8GEMM {
    /// One implementation of the products.
    package enum Path: Int32, CaseIterable, Sendable, CustomStringConvertible {
        case generic = 0
        /// Both operands widened to 16 bits, `vpmaddwd`.
        case avx2 = 1
        /// `vpdpbusd` on 512-bit registers.
        case avx512VNNI = 2
        /// `vpdpbusd` on 256-bit registers, VEX encoding.
        case avxVNNI = 3
        /// The AVX-VNNI kernel in its EVEX encoding (AVX-512 VL + VNNI): how that kernel is
        /// tested on CPUs without AVX-VNNI. Never the default.
        case avx512VNNI256 = 4

        package var description: String {
            switch self {
            case .generic: return "generic"
            case .avx2: return "AVX2"
            case .avx512VNNI: return "AVX-512 VNNI"
            case .avxVNNI: return "AVX-VNNI"
            case .avx512VNNI256: return "AVX-512 VNNI (256-bit)"
            }
        }
    }

    /// The C code for "the default path".
    private static let best = Int32(CE_GEMM_BEST)

    /// The largest depth `in` for which no sum can overflow `Int32` (255 · 128 · 65,536 < 2³¹).
    package static let maximumDepth = Int(CE_GEMM_MAX_K)

    /// The paths this CPU runs, in `Path` order.
    package static var paths: [Path] {
        let mask = ce_gemm_paths()
        return Path.allCases.filter { mask & (1 << $0.rawValue) != 0 }
    }

    /// The path a call without `path` runs: the fastest here, unless `withPath` forced one.
    package static var defaultPath: Path { Path(rawValue: ce_gemm_best_path()) ?? .generic }

    /// Runs `body` with `path` as every call's default, then the fastest again. For tests of code
    /// that calls the products without a path (the encoder); process-wide, so nothing else may run
    /// the products meanwhile. `path` must be one of `paths`.
    package static func withPath<R>(_ path: Path, _ body: () throws -> R) rethrows -> R {
        let status = ce_gemm_force_path(path.rawValue)
        precondition(status == 0, "Int8GEMM.withPath: \(path) does not run on this CPU")
        defer { ce_gemm_force_path(best) }
        return try body()
    }

    /// Quantizes each row of `x: [rows, columns]` (row stride `rowStride`, default `columns`;
    /// finite values) into `rows`: `lo = min(0, min x)`, `hi = max(0, max x)`,
    /// `scale = (hi − lo) / 255`, `zero = round(−lo / scale)`, `code = clamp(round(x / scale) + zero, 0, 255)`.
    /// - Returns: false (nothing written) when `path` is not available on this CPU.
    /// - Complexity: O(rows·columns).
    @discardableResult
    package static func quantize(
        _ x: UnsafePointer<Float>, rows: Int, columns: Int, rowStride: Int? = nil,
        into quantized: inout QuantizedRows, path: Path? = nil
    ) -> Bool {
        let ldx = rowStride ?? columns
        precondition(rows >= 0 && columns >= 0 && ldx >= columns, "Int8GEMM.quantize: bad shape")
        guard path.map({ paths.contains($0) }) ?? true else { return false }
        quantized.reshape(rows: rows, columns: columns)
        guard rows > 0 else { return true }
        let stride = quantized.stride
        let status = quantized.codes.withUnsafeMutableBufferPointer { q in
            quantized.scales.withUnsafeMutableBufferPointer { s in
                quantized.zeroPoints.withUnsafeMutableBufferPointer { z in
                    ce_gemm_quantize_u8(
                        x, rows, columns, ldx, q.baseAddress!, stride, s.baseAddress!, z.baseAddress!,
                        path?.rawValue ?? best)
                }
            }
        }
        return status == 0
    }

    /// `acc[i][j] = Σₖ codes[i][k] · q[j][k]`, exact: the raw sums every path computes, into
    /// `acc: [rows, out]` (row stride `ldacc`, default `out`).
    /// - Returns: false (nothing written) when `path` is not available on this CPU.
    /// - Complexity: O(rows·out·in).
    @discardableResult
    package static func accumulators(
        _ a: QuantizedRows, _ w: QuantizedMatrix, into acc: UnsafeMutablePointer<Int32>, ldacc: Int? = nil,
        path: Path? = nil
    ) -> Bool {
        precondition(
            a.columns == w.inputSize, "Int8GEMM: activations of depth \(a.columns), weights of depth \(w.inputSize)")
        let ld = ldacc ?? w.outputSize
        precondition(ld >= w.outputSize, "Int8GEMM: ldacc \(ld) below \(w.outputSize)")
        guard a.rows > 0, w.outputSize > 0 else { return path.map { paths.contains($0) } ?? true }
        return a.codes.withUnsafeBufferPointer { codes in
            w.withPackedCodes { packed in
                ce_gemm_u8s8_s32(
                    a.rows, w.outputSize, w.inputSize, codes.baseAddress!, a.stride, packed, acc, ld,
                    path?.rawValue ?? best) == 0
            }
        }
    }

    /// `c[i][j] = (accumulate ? c[i][j] : 0) + bias[j] + sᵢ · (wⱼ · (acc[i][j] − zᵢ · Σₖ q[j][k]))`
    /// for quantized activations `a: [rows, in]` and weights `w: [out, in]` into `c: [rows, out]`
    /// (row stride `ldc`, default `out`), evaluated in `Float` in the order
    /// `ReferenceKernels.int8MatMul` states, so every path gives bit-identical results. With
    /// `accumulate`, `c` holds the residual on entry. `c` must not alias the weights' arrays.
    ///
    /// `columns` (default all) limits the product to those output columns: it must start at a
    /// multiple of `QuantizedMatrix.panelWidth`, so that threads can share one product by columns
    /// (`bias` and `c` still point at column 0).
    /// - Returns: false (nothing written) when `path` is not available on this CPU.
    /// - Complexity: O(rows·columns·in).
    @discardableResult
    package static func multiply(
        _ a: QuantizedRows, _ w: QuantizedMatrix, columns: Range<Int>? = nil, bias: UnsafePointer<Float>?,
        into c: UnsafeMutablePointer<Float>, ldc: Int? = nil, accumulate: Bool = false, path: Path? = nil
    ) -> Bool {
        precondition(
            a.columns == w.inputSize, "Int8GEMM: activations of depth \(a.columns), weights of depth \(w.inputSize)")
        let ld = ldc ?? w.outputSize
        precondition(ld >= w.outputSize, "Int8GEMM: ldc \(ld) below \(w.outputSize)")
        let columns = columns ?? 0..<w.outputSize
        precondition(
            columns.lowerBound >= 0 && columns.upperBound <= w.outputSize
                && columns.lowerBound % QuantizedMatrix.panelWidth == 0,
            "Int8GEMM: columns \(columns) of \(w.outputSize) do not start at a panel")
        guard a.rows > 0, !columns.isEmpty else { return path.map { paths.contains($0) } ?? true }
        let first = columns.lowerBound
        let packedOffset = ce_gemm_packed_size(first, w.inputSize)
        return a.codes.withUnsafeBufferPointer { codes in
            a.scales.withUnsafeBufferPointer { sa in
                a.zeroPoints.withUnsafeBufferPointer { za in
                    w.scales.withUnsafeBufferPointer { sw in
                        w.columnSums.withUnsafeBufferPointer { sums in
                            w.withPackedCodes { packed in
                                ce_gemm_u8s8_f32(
                                    a.rows, columns.count, w.inputSize, codes.baseAddress!, a.stride,
                                    sa.baseAddress!, za.baseAddress!, packed + packedOffset,
                                    sums.baseAddress! + first, sw.baseAddress! + first,
                                    bias.map { $0 + first }, c + first, ld, accumulate ? 1 : 0,
                                    path?.rawValue ?? best) == 0
                            }
                        }
                    }
                }
            }
        }
    }

    /// A quantized linear layer on float activations: `y[R, out] = (accumulate ? y : 0) + x[R, in] · Wᵀ + b`,
    /// `x` quantized per row into `buffer` first (the cost of that pass included). The int8
    /// counterpart of `BLAS.gemm(.none, .transposed, …)` with the weights in Hugging Face's layout.
    ///
    /// `lda` and `ldc` are the row strides of `x` and `y` as stored (default `in` and `out`).
    /// - Returns: false (nothing written) when `path` is not available on this CPU.
    /// - Complexity: O(R·out·in).
    @discardableResult
    package static func matmul(
        activations x: UnsafePointer<Float>, rows: Int, lda: Int? = nil,
        weights w: QuantizedMatrix, bias: UnsafePointer<Float>?,
        into y: UnsafeMutablePointer<Float>, ldc: Int? = nil, accumulate: Bool = false,
        buffer: inout QuantizedRows, path: Path? = nil
    ) -> Bool {
        guard quantize(x, rows: rows, columns: w.inputSize, rowStride: lda, into: &buffer, path: path) else {
            return false
        }
        return multiply(buffer, w, bias: bias, into: y, ldc: ldc, accumulate: accumulate, path: path)
    }
}
