// Integer matrix products for quantized linear layers: C[M, N] from u8 activations A[M, K]
// (per-row scale and zero point) and s8 weights W[N, K] (per-output-channel scale, symmetric),
// accumulated exactly in int32 and scaled to float32. Generic C, AVX2, AVX-512 VNNI and
// AVX-VNNI versions, chosen at run time. Only the LinearAlgebra module imports this header.
#ifndef CKERNELS_INT8GEMM_H
#define CKERNELS_INT8GEMM_H

#include <stddef.h>
#include <stdint.h>

/// Product variants; `CE_GEMM_BEST` picks the fastest this CPU runs.
enum {
    CE_GEMM_BEST = -1,
    CE_GEMM_GENERIC = 0,         ///< plain C
    CE_GEMM_AVX2 = 1,            ///< both operands widened to 16 bits, vpmaddwd (no saturation)
    CE_GEMM_AVX512_VNNI = 2,     ///< vpdpbusd on 512-bit registers
    CE_GEMM_AVX_VNNI = 3,        ///< vpdpbusd on 256-bit registers, VEX encoding (`avxvnni`)
    CE_GEMM_AVX512_VNNI_256 = 4, ///< the AVX-VNNI kernel in its EVEX encoding (AVX-512 VL + VNNI)
};

/// Columns of W per packed panel: one 512-bit register of int32 sums.
#define CE_GEMM_PANEL 16

/// Bit mask of the product paths this CPU runs: 1 << CE_GEMM_GENERIC | 1 << CE_GEMM_AVX2 | ….
int ce_gemm_paths(void);

/// The path CE_GEMM_BEST means: the one forced by ce_gemm_force_path, else the fastest this CPU runs.
int ce_gemm_best_path(void);

/// From now on CE_GEMM_BEST means `path` (for tests of code that calls the products with
/// CE_GEMM_BEST, such as the encoder); CE_GEMM_BEST restores the fastest. Process-wide.
/// Returns 0, or −1 when `path` is not available here (nothing changed).
int ce_gemm_force_path(int path);

/// Row stride, in bytes, of quantized activations for depth k: k rounded up to a multiple of 4,
/// since every path reads a row four bytes at a time (the bytes past k are multiplied by zero weights).
size_t ce_gemm_activation_stride(size_t k);

/// Bytes of the packed form of an n × k weight matrix: ⌈n/16⌉ panels × ⌈k/4⌉ groups × 64.
size_t ce_gemm_packed_size(size_t n, size_t k);

/// Packs w[n][k] (row-major, any int8 values) into the layout every path reads: panel p holds
/// columns 16p … 16p+15; inside it, group g holds, for each of the 16 columns, the four weights
/// of rows 4g … 4g+3 of Wᵀ (bytes w[16p + c][4g + i] at offset (p·⌈k/4⌉ + g)·64 + 4c + i), with
/// zeros past n and k. `packed` must hold ce_gemm_packed_size(n, k) bytes (64-byte aligned for
/// speed; any alignment is correct). column_sums[j] = Σ_k w[j][k], for the zero-point correction.
void ce_gemm_pack_s8(const int8_t *w, size_t n, size_t k, int8_t *packed, int32_t *column_sums);

/// Quantizes each row of x[m][k] (row stride ldx floats; finite values) to unsigned 8 bits:
/// lo = min(0, min x), hi = max(0, max x), scale = (hi − lo)/255 (1 when hi = lo = 0),
/// zero = clamp(round(−lo/scale), 0, 255), q = clamp(round(x · (1/scale)) + zero, 0, 255), rounding
/// to nearest even; x ≈ scale · (q − zero). Writes q[m][ldq] (ldq ≥ ce_gemm_activation_stride(k),
/// bytes past k set to 0), scales[m] and zero_points[m]. Identical bytes on every path for finite
/// inputs (NaN and ±∞ give unspecified codes, with no undefined behaviour).
/// Returns 0, or −1 when `path` is not available here (nothing written).
int ce_gemm_quantize_u8(const float *x, size_t m, size_t k, size_t ldx, uint8_t *q, size_t ldq,
                        float *scales, int32_t *zero_points, int path);

/// acc[i][j] = Σ_k a[i][k] · w[j][k], exact, for a[m][lda] (u8; lda ≥ ce_gemm_activation_stride(k))
/// and w packed by ce_gemm_pack_s8: the raw int32 sums every path computes, written to
/// acc[m][ldacc]. k must be at most CE_GEMM_MAX_K (so that no sum can overflow int32).
/// Returns 0, or −1 when `path` is not available here (nothing written).
int ce_gemm_u8s8_s32(size_t m, size_t n, size_t k, const uint8_t *a, size_t lda, const int8_t *packed,
                     int32_t *acc, size_t ldacc, int path);

/// The largest depth whose sums fit int32 for any inputs: 255 · 128 · k < 2³¹.
#define CE_GEMM_MAX_K 65536

/// c[i][j] = (accumulate ? c[i][j] : 0) + bias[j] + a_scales[i] · (w_scales[j] · float(acc − a_zero_points[i] · column_sums[j]))
/// with acc the exact sum of ce_gemm_u8s8_s32, evaluated in float32 in exactly this order, with no
/// fused multiply-add, on every path: v = w_scales[j] · float(acc − z·s); v = v · a_scales[i];
/// v = v + bias[j] (bias NULL: skipped); v = v + c[i][j] (when accumulating). So every path gives
/// bit-identical floats. c[m][ldc]. Returns 0, or −1 when `path` is not available here.
int ce_gemm_u8s8_f32(size_t m, size_t n, size_t k, const uint8_t *a, size_t lda, const float *a_scales,
                     const int32_t *a_zero_points, const int8_t *packed, const int32_t *column_sums,
                     const float *w_scales, const float *bias, float *c, size_t ldc, int accumulate, int path);

#endif
