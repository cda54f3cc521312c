// Block-quantized matrix products for the decoder's linear layers: y[T, out] from float
// activations x[T, in] quantized per row per block of 32 to signed 8 bits, and weights W[out, in]
// stored as GGUF stores them — unsigned 4- or 8-bit codes in blocks of 32 along `in`, a zero point
// per matrix, a float16 scale and an optional float16 minimum per block — read as they are (no
// repacking, so that decoding a token reads each weight byte once). Exact int32 sums per block,
// float32 after. Generic C, AVX2, AVX-512 VNNI and 256-bit VNNI versions chosen at run time, with
// the path numbers, detection and forcing of int8gemm.h (CE_GEMM_*). Only LinearAlgebra imports it.
#ifndef CKERNELS_BLOCKGEMM_H
#define CKERNELS_BLOCKGEMM_H

#include <stddef.h>
#include <stdint.h>

/// Elements per block, for weights and activations alike.
#define CE_BLOCK_SIZE 32

/// Bytes per row of quantized activation codes for depth k (a multiple of 32): k rounded up to a
/// multiple of 128, since the codes are laid out four blocks at a time (see ce_block_quantize).
size_t ce_block_code_stride(size_t k);

/// Entries per row of activation scales and sums for depth k: the k/32 blocks rounded up to a
/// multiple of 16 (the vector paths read 16 at a time; the entries past k/32 are zero).
size_t ce_block_block_stride(size_t k);

/// A weight matrix W[n][k] (n = out, k = in, a multiple of 32), Hugging Face's layout: row j is
/// output channel j. Block b of row j holds elements 32b … 32b+31, worth
/// w[j][32b+i] = d[j][b] · (u[j][32b+i] − zero_point) + m[j][b]:
///  - bits 4: `codes` holds n rows of k/2 bytes; a block is 16 bytes, byte i holding element i in
///    its low nibble and element i+16 in its high nibble (GGML's Q4_0/Q4_1 order);
///  - bits 5: `codes` as for 4 bits (the low four bits of each code), and `high` n rows of k/8
///    bytes: a block's fifth bits as 4 bytes, a little-endian 32-bit word whose bit i is bit 4 of
///    element i's code (GGML's Q5_0/Q5_1 `qh`);
///  - bits 8: `codes` holds n rows of k bytes, a block being its 32 codes in element order;
///  - `scales` (d) and `mins` (m, NULL when absent: 0) hold n rows of k/32 IEEE binary16 bit
///    patterns; `zero_point` is 0 … 255.
typedef struct {
    size_t rows;              ///< n = out
    size_t columns;           ///< k = in, a multiple of CE_BLOCK_SIZE
    int bits;                 ///< 4, 5 or 8
    int zero_point;           ///< z, 0 … 255
    const uint8_t *codes;
    const uint8_t *high;      ///< the fifth bits (bits 5), else NULL
    const uint16_t *scales;
    const uint16_t *mins;
} ce_block_matrix;

/// Activations x[m][k] quantized by ce_block_quantize: per row, `codes` (ce_block_code_stride(k)
/// bytes, in the grouped layout described there), then ce_block_block_stride(k) scales (float
/// d_a) and sums (int32 s_a = Σ a over the block), one per block.
typedef struct {
    size_t rows;              ///< m = T
    size_t columns;           ///< k = in, a multiple of CE_BLOCK_SIZE
    const int8_t *codes;      ///< [m][ce_block_code_stride(k)]
    const float *scales;      ///< [m][ce_block_block_stride(k)]
    const int32_t *sums;      ///< [m][ce_block_block_stride(k)]
} ce_block_rows;

/// Quantizes each row of x[m][k] (row stride ldx floats; k a multiple of 32) per block of 32:
/// d_a = max|x| / 127 (float division), a = round-to-nearest-even(x / d_a) clamped to −127 … 127,
/// s_a = Σ a; a block whose d_a is 0 (all zeros, or so small that max|x| / 127 underflows) gets
/// d_a = 0 and codes 0. Identical bytes on every path for finite inputs (NaN and ±∞ give
/// unspecified codes, with no undefined behaviour).
///
/// Layout of a row's codes: groups of four blocks (128 bytes); group g holds blocks 4g … 4g+3 as
///     bytes  0 … 63:  elements 0 … 15 of block 4g, then of 4g+1, 4g+2, 4g+3
///     bytes 64 … 127: elements 16 … 31 of block 4g, then of 4g+1, 4g+2, 4g+3
/// — the order in which one 64-byte load of 4-bit weights (four blocks) splits into its low and
/// high nibbles. Blocks past k/32 in the last group are zero, as are the scales and sums past k/32.
/// Writes codes[m][ce_block_code_stride(k)], scales and sums [m][ce_block_block_stride(k)].
/// Returns 0, or −1 when `path` (a CE_GEMM_* value) is not available here (nothing written).
int ce_block_quantize(const float *x, size_t m, size_t k, size_t ldx, int8_t *codes, float *scales,
                      int32_t *sums, int path);

/// r[t][i] = x[t][i] − d_a[t][b] · a[t][i] (b = i / 32) for rows quantized by ce_block_quantize from
/// x: what the 8-bit codes leave out, at most d_a / 2 per element. Quantizing r in turn and adding
/// the two products gives the product of x at about 15 bits per block (see BlockGEMM). r has row
/// stride ldr ≥ k and must not alias x. Plain C on every path: O(m·k), beside products of O(m·k·n).
void ce_block_residual(const float *x, size_t m, size_t k, size_t ldx, const int8_t *codes, const float *scales,
                       float *r, size_t ldr);

/// acc[t][j − j0][b] = Σ_i u[j][32b+i] · a[t][32b+i] − zero_point · s_a[t][b], exact: the integer
/// part of every block of the product for columns j0 ≤ j < j1, as every path computes it, written
/// to acc[a->rows][j1 − j0][k/32]. For tests. Returns 0, or −1 when `path` is not available here.
int ce_block_gemm_s32(const ce_block_matrix *w, const ce_block_rows *a, size_t j0, size_t j1, int32_t *acc, int path);

/// y[t][j] = (accumulate ? y[t][j] : 0) + bias[j]
///         + Σ_b (d[j][b]·d_a[t][b]·I[t][j][b] + m[j][b]·d_a[t][b]·s_a[t][b])
/// for every row t and the columns j0 ≤ j < j1, with I the exact integer of ce_block_gemm_s32 and
/// the rest in float32 (bias NULL: none; mins NULL: no m term). y[t][j] is c[t·ldc + j] (bias and
/// c indexed from column 0), ldc ≥ j1. The order of the float operations differs between paths
/// (each within a few ulps of the sum of |terms|). Returns 0, or −1 when `path` is not available here.
int ce_block_gemm_f32(const ce_block_matrix *w, const ce_block_rows *a, size_t j0, size_t j1, const float *bias,
                      float *c, size_t ldc, int accumulate, int path);

/// The product of activations quantized in two parts, `coarse` (x ≈ d_a·a) and `residual`
/// (x − d_a·a ≈ d_r·a_r), both of a->rows × a->columns: bit for bit what ce_block_gemm_f32 on
/// `coarse` (with bias and accumulate) followed by ce_block_gemm_f32 on `residual` (no bias,
/// accumulating) write, on the same path, with each weight block read and unpacked once for both
/// parts (decoding one token), or each tile of weights built once for both (T ≥ 2). Returns 0, or
/// −1 when `path` is not available here.
int ce_block_gemm_two_part_f32(const ce_block_matrix *w, const ce_block_rows *coarse, const ce_block_rows *residual,
                               size_t j0, size_t j1, const float *bias, float *c, size_t ldc, int accumulate, int path);

#endif
