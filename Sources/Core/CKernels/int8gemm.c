// Integer matrix products for quantized linear layers (see int8gemm.h and Docs/Numerics.md).
//
// Scheme. Activations are quantized per row to unsigned 8 bits with a zero point (asymmetric),
// weights per output channel to signed 8 bits (symmetric). Why u8 asymmetric rather than s8
// symmetric activations: vpdpbusd multiplies unsigned by signed bytes, so u8 activations are its
// native operand (s8 ones would be shifted by 128 and corrected anyway); the inputs of the
// encoder's output projection are GELU outputs (≥ −0.17), where a symmetric range would leave
// almost half of the 256 levels unused; and the simulation of MiniLM measured per-row
// asymmetric u8 closer to float32 (cosine min 0.998, mean 0.999) than symmetric s8 (0.997,
// 0.998). The zero point costs one correction per output: Σ (a − z)·w = Σ a·w − z·Σ w, with
// Σ w (the column sums) computed once, when the weights are packed.
//
// Every path computes the exact int32 sums Σ a·w, and the same float32 epilogue in the same
// order, so all paths give bit-identical results (tests compare them with plain loops).
#include "int8gemm.h"
#include <float.h>
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

// The epilogue's multiplications and additions must round one at a time on every path (a fused
// multiply-add in one copy would change the last bit).
#pragma STDC FP_CONTRACT OFF

#define PANEL CE_GEMM_PANEL
#define GROUP_BYTES (4 * PANEL)
// Rows per chunk: the chunk's activations stay in cache while every panel of weights passes
// over them (and the AVX2 path widens one chunk at a time). A multiple of every row block.
#define CHUNK_ROWS 48

static size_t groups_of(size_t k) { return (k + 3) / 4; }
static size_t panels_of(size_t n) { return (n + PANEL - 1) / PANEL; }
static size_t min_size(size_t a, size_t b) { return a < b ? a : b; }

size_t ce_gemm_activation_stride(size_t k) { return groups_of(k) * 4; }

size_t ce_gemm_packed_size(size_t n, size_t k) { return panels_of(n) * groups_of(k) * GROUP_BYTES; }

void ce_gemm_pack_s8(const int8_t *w, size_t n, size_t k, int8_t *packed, int32_t *column_sums) {
    size_t groups = groups_of(k);
    memset(packed, 0, ce_gemm_packed_size(n, k));
    for (size_t j = 0; j < n; j++) {
        int32_t sum = 0;
        int8_t *panel = packed + (j / PANEL) * groups * GROUP_BYTES + 4 * (j % PANEL);
        for (size_t p = 0; p < k; p++) {
            int8_t v = w[j * k + p];
            sum += v;
            panel[(p / 4) * GROUP_BYTES + p % 4] = v;
        }
        column_sums[j] = sum;
    }
}

// ---------------------------------------------------------------- activation quantization

// One place for a row's scale, reciprocal and zero point, shared by every path.
static void row_parameters(float lo, float hi, float *scale, float *inverse, int32_t *zero) {
    float s = (hi - lo) / 255.0f;
    // A zero row, or one so small that 1/s would overflow: all codes 0 with scale 1 (error below
    // 255 · FLT_MIN).
    if (!(s >= FLT_MIN)) {
        *scale = 1.0f;
        *inverse = 0.0f;
        *zero = 0;
        return;
    }
    float z = nearbyintf(-lo / s);
    *scale = s;
    *inverse = 1.0f / s;
    // Written so that a NaN (from a non-finite input) clamps instead of reaching the conversion.
    *zero = !(z >= 0.0f) ? 0 : !(z <= 255.0f) ? 255 : (int32_t)z;
}

static inline uint8_t quantize_one(float x, float inverse, int32_t zero) {
    float r = nearbyintf(x * inverse);
    // Finite inputs give |r| ≤ 256; the bounds keep NaN and ±∞ (unspecified codes) defined.
    if (!(r >= -256.0f)) r = -256.0f;
    if (!(r <= 512.0f)) r = 512.0f;
    int32_t v = (int32_t)r + zero;
    return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
}

static void quantize_generic(const float *x, size_t m, size_t k, size_t ldx, uint8_t *q, size_t ldq,
                             float *scales, int32_t *zero_points) {
    for (size_t i = 0; i < m; i++) {
        const float *row = x + i * ldx;
        uint8_t *out = q + i * ldq;
        float lo = 0.0f, hi = 0.0f;
        for (size_t j = 0; j < k; j++) {
            lo = row[j] < lo ? row[j] : lo;
            hi = row[j] > hi ? row[j] : hi;
        }
        float inverse;
        row_parameters(lo, hi, &scales[i], &inverse, &zero_points[i]);
        for (size_t j = 0; j < k; j++) out[j] = quantize_one(row[j], inverse, zero_points[i]);
        memset(out + k, 0, ldq - k);
    }
}

// ---------------------------------------------------------------- the shared epilogue

typedef struct {
    size_t m, n, k, groups, panels;
    const uint8_t *a;
    size_t lda;
    const int8_t *packed;
    // Raw sums: acc non-NULL, written acc[i][j]. Floats: the rest.
    int32_t *acc;
    size_t ldacc;
    const float *a_scales;
    const int32_t *a_zero_points;
    const int32_t *column_sums;
    const float *w_scales;
    const float *bias;
    float *c;
    size_t ldc;
    int accumulate;
} problem;

static inline float finish_one(const problem *p, int32_t sum, size_t i, size_t j) {
    float v = p->w_scales[j] * (float)(sum - p->a_zero_points[i] * p->column_sums[j]);
    v = v * p->a_scales[i];
    if (p->bias) v = v + p->bias[j];
    if (p->accumulate) v = v + p->c[i * p->ldc + j];
    return v;
}

// Row i, columns j0 … j0 + count − 1 (count ≤ 16) of exact sums, finished one value at a time.
static void finish_scalar(const problem *p, const int32_t *sums, size_t i, size_t j0, size_t count) {
    if (p->acc) {
        memcpy(p->acc + i * p->ldacc + j0, sums, count * sizeof(int32_t));
        return;
    }
    for (size_t c = 0; c < count; c++) p->c[i * p->ldc + j0 + c] = finish_one(p, sums[c], i, j0 + c);
}

// ---------------------------------------------------------------- generic

static void gemm_generic(const problem *p) {
    for (size_t i = 0; i < p->m; i++) {
        const uint8_t *row = p->a + i * p->lda;
        for (size_t panel = 0; panel < p->panels; panel++) {
            const int8_t *w = p->packed + panel * p->groups * GROUP_BYTES;
            int32_t sums[PANEL] = {0};
            for (size_t g = 0; g < p->groups; g++) {
                const uint8_t *x = row + 4 * g;
                const int8_t *wg = w + g * GROUP_BYTES;
                for (int c = 0; c < PANEL; c++) {
                    sums[c] += (int32_t)x[0] * wg[4 * c] + (int32_t)x[1] * wg[4 * c + 1]
                             + (int32_t)x[2] * wg[4 * c + 2] + (int32_t)x[3] * wg[4 * c + 3];
                }
            }
            finish_scalar(p, sums, i, panel * PANEL, min_size(PANEL, p->n - panel * PANEL));
        }
    }
}

#if defined(__x86_64__) && defined(__clang__)
#include <immintrin.h>
#define INLINE static inline __attribute__((always_inline))

static inline int32_t load_i32(const void *p) {
    int32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline int64_t load_i64(const void *p) {
    int64_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

// Calls BLOCK(…, R, NP) with R (rows, 1 … 8 or 1 … 6) and NP (panels) as constants, so that
// each always-inlined block keeps its accumulators in registers.
#define WITH_ROWS6(BLOCK, R, NP, ...)                                                    \
    switch (R) {                                                                         \
    case 1: BLOCK(__VA_ARGS__, 1, NP); break;                                            \
    case 2: BLOCK(__VA_ARGS__, 2, NP); break;                                            \
    case 3: BLOCK(__VA_ARGS__, 3, NP); break;                                            \
    case 4: BLOCK(__VA_ARGS__, 4, NP); break;                                            \
    case 5: BLOCK(__VA_ARGS__, 5, NP); break;                                            \
    default: BLOCK(__VA_ARGS__, 6, NP); break;                                           \
    }
#define WITH_ROWS8(BLOCK, R, NP, ...)                                                    \
    switch (R) {                                                                         \
    case 1: BLOCK(__VA_ARGS__, 1, NP); break;                                            \
    case 2: BLOCK(__VA_ARGS__, 2, NP); break;                                            \
    case 3: BLOCK(__VA_ARGS__, 3, NP); break;                                            \
    case 4: BLOCK(__VA_ARGS__, 4, NP); break;                                            \
    case 5: BLOCK(__VA_ARGS__, 5, NP); break;                                            \
    case 6: BLOCK(__VA_ARGS__, 6, NP); break;                                            \
    case 7: BLOCK(__VA_ARGS__, 7, NP); break;                                            \
    default: BLOCK(__VA_ARGS__, 8, NP); break;                                           \
    }

// ---------------------------------------------------------------- AVX2 quantizer and epilogue

__attribute__((target("avx2")))
static inline float hmin_avx2(__m256 v) {
    __m128 s = _mm_min_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_min_ps(s, _mm_movehl_ps(s, s));
    s = _mm_min_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

__attribute__((target("avx2")))
static inline float hmax_avx2(__m256 v) {
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

// Same bytes as quantize_generic: min and max are exact (only the sign of a zero bound may
// differ, which changes neither the scale nor the zero point), vcvtps2dq rounds to nearest even
// as nearbyintf does, and the two saturating packs clamp to [0, 255] as the scalar code does.
__attribute__((target("avx2")))
static void quantize_avx2(const float *x, size_t m, size_t k, size_t ldx, uint8_t *q, size_t ldq,
                          float *scales, int32_t *zero_points) {
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    for (size_t i = 0; i < m; i++) {
        const float *row = x + i * ldx;
        uint8_t *out = q + i * ldq;
        __m256 lo8 = _mm256_setzero_ps(), hi8 = _mm256_setzero_ps();
        size_t j = 0;
        for (; j + 8 <= k; j += 8) {
            __m256 v = _mm256_loadu_ps(row + j);
            lo8 = _mm256_min_ps(lo8, v);
            hi8 = _mm256_max_ps(hi8, v);
        }
        float lo = hmin_avx2(lo8), hi = hmax_avx2(hi8);
        for (; j < k; j++) {
            lo = row[j] < lo ? row[j] : lo;
            hi = row[j] > hi ? row[j] : hi;
        }
        float inverse;
        row_parameters(lo, hi, &scales[i], &inverse, &zero_points[i]);
        int32_t zero = zero_points[i];
        const __m256 inv = _mm256_set1_ps(inverse);
        const __m256i z = _mm256_set1_epi32(zero);
        j = 0;
        for (; j + 32 <= k; j += 32) {
            __m256i v0 = _mm256_add_epi32(_mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(row + j), inv)), z);
            __m256i v1 = _mm256_add_epi32(_mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(row + j + 8), inv)), z);
            __m256i v2 = _mm256_add_epi32(_mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(row + j + 16), inv)), z);
            __m256i v3 = _mm256_add_epi32(_mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(row + j + 24), inv)), z);
            __m256i bytes = _mm256_packus_epi16(_mm256_packs_epi32(v0, v1), _mm256_packs_epi32(v2, v3));
            _mm256_storeu_si256((__m256i *)(out + j), _mm256_permutevar8x32_epi32(bytes, order));
        }
        for (; j < k; j++) out[j] = quantize_one(row[j], inverse, zero);
        memset(out + k, 0, ldq - k);
    }
}

// Finishes eight columns j0 … j0 + count − 1 (count ≤ 8) of row i from eight exact sums.
__attribute__((target("avx2")))
INLINE void finish8_avx2(const problem *p, __m256i sums, size_t i, size_t j0, size_t count) {
    if (count == 0) return;
    const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)count), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    if (p->acc) {
        _mm256_maskstore_epi32((int *)(p->acc + i * p->ldacc + j0), mask, sums);
        return;
    }
    __m256i s = _mm256_maskload_epi32((const int *)(p->column_sums + j0), mask);
    __m256i t = _mm256_sub_epi32(sums, _mm256_mullo_epi32(_mm256_set1_epi32(p->a_zero_points[i]), s));
    __m256 v = _mm256_mul_ps(_mm256_maskload_ps(p->w_scales + j0, mask), _mm256_cvtepi32_ps(t));
    v = _mm256_mul_ps(v, _mm256_set1_ps(p->a_scales[i]));
    float *c = p->c + i * p->ldc + j0;
    if (p->bias) v = _mm256_add_ps(v, _mm256_maskload_ps(p->bias + j0, mask));
    if (p->accumulate) v = _mm256_add_ps(v, _mm256_maskload_ps(c, mask));
    _mm256_maskstore_ps(c, mask, v);
}

// ---------------------------------------------------------------- AVX2: widened to 16 bits
//
// vpmaddubsw (u8 × s8, adjacent pairs summed into int16) saturates: 255·127 + 255·127 = 64,770
// does not fit 16 bits, so it is exact only with 7-bit operands (onnxruntime's `reduce_range`
// quantizes weights to 7 bits for that reason). This path keeps all 8 bits and avoids the
// saturation by widening both operands to int16 instead: activations once per chunk of rows
// (zero-extended), weights as they are loaded (vpmovsxbw), then vpmaddwd, whose pair sums
// (at most 2·255·128 = 65,280 in magnitude) always fit its int32 lanes. Both instructions
// issue at the same rate, so this costs no multiplies over vpmaddubsw + vpmaddwd.
//
// Register block: 4 rows × 8 columns (half a panel). A group's 32 weight bytes for those
// columns widen to two vectors of 4 columns × 4 depths; the activation vector repeats the row's
// four widened values, so lane 2c holds column c's depths 0–1 and lane 2c + 1 its depths 2–3,
// added pairwise at the end.

__attribute__((target("avx2")))
INLINE void avx2_block(const problem *p, const int16_t *wide, size_t wide_stride, size_t i, size_t panel, const int R, const int half) {
    __m256i acc[4][2];
    for (int r = 0; r < R; r++) acc[r][0] = acc[r][1] = _mm256_setzero_si256();
    const int8_t *w = p->packed + panel * p->groups * GROUP_BYTES + 32 * half;
    for (size_t g = 0; g < p->groups; g++) {
        __m256i x[4];
        for (int r = 0; r < R; r++) x[r] = _mm256_set1_epi64x(load_i64(wide + r * wide_stride + 4 * g));
        const int8_t *wg = w + g * GROUP_BYTES;
        for (int v = 0; v < 2; v++) {
            __m256i wv = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(wg + 16 * v)));
            for (int r = 0; r < R; r++) acc[r][v] = _mm256_add_epi32(acc[r][v], _mm256_madd_epi16(wv, x[r]));
        }
    }
    size_t j0 = panel * PANEL + 8 * (size_t)half, count = min_size(8, p->n - j0);
    for (int r = 0; r < R; r++) {
        // hadd(columns 0–3, columns 4–7) gives columns 0, 1, 4, 5 | 2, 3, 6, 7; the permute orders them.
        __m256i sums = _mm256_permute4x64_epi64(_mm256_hadd_epi32(acc[r][0], acc[r][1]), 0xD8);
        finish8_avx2(p, sums, i + r, j0, count);
    }
}

__attribute__((target("avx2")))
static int gemm_avx2(const problem *p) {
    size_t stride = p->groups * 4;
    int16_t *wide = malloc(CHUNK_ROWS * stride * sizeof(int16_t));
    if (!wide) return -1;
    for (size_t i0 = 0; i0 < p->m; i0 += CHUNK_ROWS) {
        size_t rows = min_size(CHUNK_ROWS, p->m - i0);
        for (size_t r = 0; r < rows; r++) {
            const uint8_t *src = p->a + (i0 + r) * p->lda;
            int16_t *dst = wide + r * stride;
            size_t j = 0;
            for (; j + 16 <= stride; j += 16)
                _mm256_storeu_si256((__m256i *)(dst + j), _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(src + j))));
            for (; j < stride; j++) dst[j] = src[j];
        }
        for (size_t panel = 0; panel < p->panels; panel++) {
            // Each half panel (8 columns) on its own, so that a block holds 4 rows: every
            // widened weight vector then serves four rows.
            for (int half = 0; half < 2 && panel * PANEL + 8 * (size_t)half < p->n; half++) {
                for (size_t r = 0; r < rows; r += 4) {
                    const int16_t *block = wide + r * stride;
                    switch (min_size(4, rows - r)) {
                    case 1: avx2_block(p, block, stride, i0 + r, panel, 1, half); break;
                    case 2: avx2_block(p, block, stride, i0 + r, panel, 2, half); break;
                    case 3: avx2_block(p, block, stride, i0 + r, panel, 3, half); break;
                    default: avx2_block(p, block, stride, i0 + r, panel, 4, half); break;
                    }
                }
            }
        }
    }
    free(wide);
    return 0;
}

// ---------------------------------------------------------------- AVX-512 VNNI: vpdpbusd, 512 bits
//
// vpdpbusd multiplies four unsigned bytes by four signed bytes and adds the four products to an
// int32 lane with no intermediate rounding or saturation: one instruction per group of 4 depths ×
// 16 columns. Register block: 8 rows × 2 panels (32 columns), 16 accumulators; each row's four
// activation bytes are broadcast to every lane.

__attribute__((target("avx512f,avx512bw,avx512vnni")))
INLINE void finish16_avx512(const problem *p, __m512i sums, size_t i, size_t j0, size_t count) {
    const __mmask16 mask = count >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << count) - 1);
    if (p->acc) {
        _mm512_mask_storeu_epi32(p->acc + i * p->ldacc + j0, mask, sums);
        return;
    }
    __m512i s = _mm512_maskz_loadu_epi32(mask, p->column_sums + j0);
    __m512i t = _mm512_sub_epi32(sums, _mm512_mullo_epi32(_mm512_set1_epi32(p->a_zero_points[i]), s));
    __m512 v = _mm512_mul_ps(_mm512_maskz_loadu_ps(mask, p->w_scales + j0), _mm512_cvtepi32_ps(t));
    v = _mm512_mul_ps(v, _mm512_set1_ps(p->a_scales[i]));
    float *c = p->c + i * p->ldc + j0;
    if (p->bias) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(mask, p->bias + j0));
    if (p->accumulate) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(mask, c));
    _mm512_mask_storeu_ps(c, mask, v);
}

__attribute__((target("avx512f,avx512bw,avx512vnni")))
INLINE void vnni512_block(const problem *p, size_t i, size_t panel, const int R, const int NP) {
    __m512i acc[8][2];
    for (int r = 0; r < R; r++)
        for (int q = 0; q < NP; q++) acc[r][q] = _mm512_setzero_si512();
    const int8_t *w0 = p->packed + panel * p->groups * GROUP_BYTES;
    const int8_t *w1 = w0 + p->groups * GROUP_BYTES;
    const uint8_t *a = p->a + i * p->lda;
    for (size_t g = 0; g < p->groups; g++) {
        __m512i b[2];
        b[0] = _mm512_loadu_si512((const void *)(w0 + g * GROUP_BYTES));
        if (NP > 1) b[1] = _mm512_loadu_si512((const void *)(w1 + g * GROUP_BYTES));
        for (int r = 0; r < R; r++) {
            __m512i x = _mm512_set1_epi32(load_i32(a + r * p->lda + 4 * g));
            for (int q = 0; q < NP; q++) acc[r][q] = _mm512_dpbusd_epi32(acc[r][q], x, b[q]);
        }
    }
    for (int q = 0; q < NP; q++) {
        size_t j0 = (panel + q) * PANEL, count = min_size(PANEL, p->n - j0);
        for (int r = 0; r < R; r++) finish16_avx512(p, acc[r][q], i + r, j0, count);
    }
}

__attribute__((target("avx512f,avx512bw,avx512vnni")))
static int gemm_vnni512(const problem *p) {
    for (size_t i0 = 0; i0 < p->m; i0 += CHUNK_ROWS) {
        size_t rows = min_size(CHUNK_ROWS, p->m - i0);
        for (size_t panel = 0; panel < p->panels; panel += 2) {
            size_t np = min_size(2, p->panels - panel);
            for (size_t r = 0; r < rows; r += 8) {
                size_t R = min_size(8, rows - r);
                if (np == 2) { WITH_ROWS8(vnni512_block, R, 2, p, i0 + r, panel) }
                else { WITH_ROWS8(vnni512_block, R, 1, p, i0 + r, panel) }
            }
        }
    }
    return 0;
}

// ---------------------------------------------------------------- vpdpbusd on 256 bits
//
// One kernel, compiled twice: AVX-VNNI (VEX encoding, Intel client cores from Alder Lake and
// Xeons from Sapphire Rapids) and the EVEX encoding of the same instruction (AVX-512 VL + VNNI),
// so that the kernel also runs, and is tested, on CPUs with AVX-512 VNNI but no AVX-VNNI.
// Register block: 6 rows × 16 columns (two vectors of 8), 12 accumulators of the 16 registers.

#define DEFINE_VNNI256(NAME, TARGET, DPBUSD)                                                         \
    __attribute__((target(TARGET)))                                                                  \
    INLINE void NAME##_block(const problem *p, size_t i, size_t panel, const int R, const int NP) {  \
        (void)NP;                                                                                    \
        __m256i acc[6][2];                                                                           \
        for (int r = 0; r < R; r++) acc[r][0] = acc[r][1] = _mm256_setzero_si256();                  \
        const int8_t *w = p->packed + panel * p->groups * GROUP_BYTES;                               \
        const uint8_t *a = p->a + i * p->lda;                                                        \
        for (size_t g = 0; g < p->groups; g++) {                                                     \
            __m256i b0 = _mm256_loadu_si256((const __m256i *)(w + g * GROUP_BYTES));                 \
            __m256i b1 = _mm256_loadu_si256((const __m256i *)(w + g * GROUP_BYTES + 32));            \
            for (int r = 0; r < R; r++) {                                                            \
                __m256i x = _mm256_set1_epi32(load_i32(a + r * p->lda + 4 * g));                     \
                acc[r][0] = DPBUSD(acc[r][0], x, b0);                                                \
                acc[r][1] = DPBUSD(acc[r][1], x, b1);                                                \
            }                                                                                        \
        }                                                                                            \
        size_t j0 = panel * PANEL, count = min_size(PANEL, p->n - j0);                               \
        for (int r = 0; r < R; r++) {                                                                \
            finish8_avx2(p, acc[r][0], i + r, j0, min_size(8, count));                               \
            finish8_avx2(p, acc[r][1], i + r, j0 + 8, count > 8 ? count - 8 : 0);                    \
        }                                                                                            \
    }                                                                                                \
    __attribute__((target(TARGET)))                                                                  \
    static int NAME(const problem *p) {                                                              \
        for (size_t i0 = 0; i0 < p->m; i0 += CHUNK_ROWS) {                                           \
            size_t rows = min_size(CHUNK_ROWS, p->m - i0);                                           \
            for (size_t panel = 0; panel < p->panels; panel++) {                                     \
                for (size_t r = 0; r < rows; r += 6) {                                               \
                    size_t R = min_size(6, rows - r);                                                \
                    WITH_ROWS6(NAME##_block, R, 1, p, i0 + r, panel)                                  \
                }                                                                                    \
            }                                                                                        \
        }                                                                                            \
        return 0;                                                                                    \
    }

DEFINE_VNNI256(gemm_avx_vnni, "avx2,avxvnni", _mm256_dpbusd_avx_epi32)
DEFINE_VNNI256(gemm_vnni256_evex, "avx2,avx512f,avx512vl,avx512vnni", _mm256_dpbusd_epi32)

static int detect_paths(void) {
    __builtin_cpu_init();
    int paths = 1 << CE_GEMM_GENERIC;
    int avx2 = __builtin_cpu_supports("avx2");
    int vnni512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vnni");
    if (avx2) paths |= 1 << CE_GEMM_AVX2;
    if (vnni512) paths |= 1 << CE_GEMM_AVX512_VNNI;
    if (avx2 && __builtin_cpu_supports("avxvnni")) paths |= 1 << CE_GEMM_AVX_VNNI;
    if (vnni512 && __builtin_cpu_supports("avx512vl")) paths |= 1 << CE_GEMM_AVX512_VNNI_256;
    return paths;
}
#else
static int gemm_avx2(const problem *p) { gemm_generic(p); return 0; }
static int gemm_vnni512(const problem *p) { gemm_generic(p); return 0; }
static int gemm_avx_vnni(const problem *p) { gemm_generic(p); return 0; }
static int gemm_vnni256_evex(const problem *p) { gemm_generic(p); return 0; }
#define quantize_avx2 quantize_generic
static int detect_paths(void) { return 1 << CE_GEMM_GENERIC; }
#endif

// ---------------------------------------------------------------- dispatch

// Detected on first use by whichever thread gets there first: atomics, so concurrent first calls
// are not a data race (each computes the same value; relaxed order suffices for one int).
static _Atomic int detected_paths = -1;
// −1: CE_GEMM_BEST means the fastest path; otherwise the path ce_gemm_force_path chose.
static _Atomic int forced_path = -1;

int ce_gemm_paths(void) {
    int paths = atomic_load_explicit(&detected_paths, memory_order_relaxed);
    if (paths < 0) {
        paths = detect_paths();
        atomic_store_explicit(&detected_paths, paths, memory_order_relaxed);
    }
    return paths;
}

static int fastest_path(int available) {
    if (available & (1 << CE_GEMM_AVX512_VNNI)) return CE_GEMM_AVX512_VNNI;
    if (available & (1 << CE_GEMM_AVX_VNNI)) return CE_GEMM_AVX_VNNI;
    if (available & (1 << CE_GEMM_AVX2)) return CE_GEMM_AVX2;
    return CE_GEMM_GENERIC;
}

int ce_gemm_best_path(void) {
    int forced = atomic_load_explicit(&forced_path, memory_order_relaxed);
    return forced >= 0 ? forced : fastest_path(ce_gemm_paths());
}

// The path to run, or −1 when `path` is unknown or not available here.
static int resolve(int path) {
    if (path == CE_GEMM_BEST) return ce_gemm_best_path();
    if (path < CE_GEMM_GENERIC || path > CE_GEMM_AVX512_VNNI_256) return -1;
    return (ce_gemm_paths() & (1 << path)) ? path : -1;
}

int ce_gemm_force_path(int path) {
    if (path == CE_GEMM_BEST) {
        atomic_store_explicit(&forced_path, -1, memory_order_relaxed);
        return 0;
    }
    if (resolve(path) < 0) return -1;
    atomic_store_explicit(&forced_path, path, memory_order_relaxed);
    return 0;
}

int ce_gemm_quantize_u8(const float *x, size_t m, size_t k, size_t ldx, uint8_t *q, size_t ldq,
                        float *scales, int32_t *zero_points, int path) {
    path = resolve(path);
    if (path < 0) return -1;
    // Every vectorized product path runs on a CPU with AVX2, whose quantizer they share.
    if (path == CE_GEMM_GENERIC) quantize_generic(x, m, k, ldx, q, ldq, scales, zero_points);
    else quantize_avx2(x, m, k, ldx, q, ldq, scales, zero_points);
    return 0;
}

static int run(const problem *p, int path) {
    if (p->m == 0 || p->n == 0) return 0;
    switch (path) {
    case CE_GEMM_AVX512_VNNI: return gemm_vnni512(p);
    case CE_GEMM_AVX_VNNI: return gemm_avx_vnni(p);
    case CE_GEMM_AVX512_VNNI_256: return gemm_vnni256_evex(p);
    case CE_GEMM_AVX2:
        // Out of memory for the widened rows: the generic path gives the same results.
        if (gemm_avx2(p) == 0) return 0;
        gemm_generic(p);
        return 0;
    default: gemm_generic(p); return 0;
    }
}

int ce_gemm_u8s8_s32(size_t m, size_t n, size_t k, const uint8_t *a, size_t lda, const int8_t *packed,
                     int32_t *acc, size_t ldacc, int path) {
    path = resolve(path);
    if (path < 0) return -1;
    problem p = {
        .m = m, .n = n, .k = k, .groups = groups_of(k), .panels = panels_of(n),
        .a = a, .lda = lda, .packed = packed, .acc = acc, .ldacc = ldacc,
    };
    return run(&p, path);
}

int ce_gemm_u8s8_f32(size_t m, size_t n, size_t k, const uint8_t *a, size_t lda, const float *a_scales,
                     const int32_t *a_zero_points, const int8_t *packed, const int32_t *column_sums,
                     const float *w_scales, const float *bias, float *c, size_t ldc, int accumulate, int path) {
    path = resolve(path);
    if (path < 0) return -1;
    problem p = {
        .m = m, .n = n, .k = k, .groups = groups_of(k), .panels = panels_of(n),
        .a = a, .lda = lda, .packed = packed,
        .a_scales = a_scales, .a_zero_points = a_zero_points, .column_sums = column_sums,
        .w_scales = w_scales, .bias = bias, .c = c, .ldc = ldc, .accumulate = accumulate,
    };
    return run(&p, path);
}
