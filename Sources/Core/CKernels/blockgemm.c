// Block-quantized matrix products (see blockgemm.h).
//
// Scheme. Weights keep GGUF's blocks of 32 unsigned codes with a float16 scale (and minimum) per
// block and a zero point per matrix; activations are quantized per row per block of 32 to
// symmetric int8 (no zero point: the weights' codes are the unsigned operand of u8 × s8 products,
// so the activations are the signed one). For block b of output j and row t, the integer part
//     I = Σ_i u·a − z·s_a          (|Σ u·a| ≤ 32·255·127 and |z·s_a| ≤ 255·4,064: |I| < 2²¹)
// is exact in int32 on every path, and so is its conversion to float (|I| < 2²⁴); the block's
// contribution d·d_a·I + m·d_a·s_a and the sum over blocks are float32, in an order that differs
// between paths.
//
// Two shapes, two kernels per path:
//  - streaming (T = 1, decoding one token): each weight byte is read once, straight from the
//    GGUF-layout codes, four output rows at a time (prefetched 16 rows ahead). The integer sums of
//    a block land in several int32 lanes; rather than reduce each block on its own, the lanes of
//    8 (256-bit) or 16 (512-bit) blocks are reduced together by one transposing add tree, which
//    leaves one exact block sum per lane, so that the float part is a few vector operations per 8
//    or 16 blocks. The blocks after the last whole step (2 of SmolLM2's 18) are reduced across
//    the four rows instead, so that a short tail costs one tree, not four.
//  - tiled (T ≥ 2, prefill): 16 weight rows at a time are unpacked once into an L1 buffer of u8
//    codes interleaved like int8gemm's panels (per group of 4 depths, the 4 bytes of each of the
//    16 rows), so that one register holds one block's partial sums for 16 outputs; every
//    activation row then reuses the tile, its 4 codes broadcast to every lane. The unpacking is
//    paid once per 16 columns, not once per activation row.
//
// Activation layout (ce_block_quantize): four blocks per 128 bytes, their elements 0 … 15 first
// and 16 … 31 after, which is how 64 bytes of 4-bit codes (four blocks) split into low and high
// nibbles: a 512-bit load, an AND and a shift give two vectors that line up with two 64-byte
// loads of activations, with no shuffle. 8-bit weights pay two lane shuffles per 128 bytes.
#include "blockgemm.h"
#include "cpu.h"
#include "half.h"
#include "int8gemm.h"
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define BLOCK CE_BLOCK_SIZE
// Bytes of one group of four blocks of activation codes.
#define GROUP_BYTES 128
// Output columns per tile, and bytes per group of 4 depths of a tile (4 bytes per column).
#define TILE_COLUMNS 16
#define TILE_GROUP_BYTES (4 * TILE_COLUMNS)
// Bytes of one block (32 depths, 8 groups) of a tile.
#define TILE_BLOCK_BYTES (8 * TILE_GROUP_BYTES)
// From this many activation rows on, the tiled kernels: unpacking a tile costs about one
// streaming pass over its weights, and every row after the first is cheaper on a tile.
#define TILE_MIN_ROWS 2

size_t ce_block_code_stride(size_t k) { return (k + GROUP_BYTES - 1) / GROUP_BYTES * GROUP_BYTES; }

size_t ce_block_block_stride(size_t k) { return (k / BLOCK + 15) / 16 * 16; }

// Where element e (0 … 31) of block b sits in a row of activation codes.
static inline size_t code_offset(size_t b, size_t e) {
    return (b / 4) * GROUP_BYTES + (e / 16) * 64 + (b % 4) * 16 + e % 16;
}

// ---------------------------------------------------------------- activation quantization

static inline int8_t quantize_one(float x, float d) {
    float r = nearbyintf(x / d);
    // Written so that a NaN clamps to −127 (as vcvtps2dq's 0x80000000 does) instead of reaching
    // the conversion.
    if (!(r >= -127.0f)) r = -127.0f;
    if (!(r <= 127.0f)) r = 127.0f;
    return (int8_t)r;
}

// x: [m, k] (row stride ldx) → codes [m, code stride] (grouped layout), scales and sums [m, block stride].
static void quantize_generic(const float *x, size_t m, size_t k, size_t ldx, int8_t *codes, float *scales,
                             int32_t *sums) {
    size_t nb = k / BLOCK, cs = ce_block_code_stride(k), bs = ce_block_block_stride(k);
    for (size_t t = 0; t < m; t++) {
        int8_t *row = codes + t * cs;
        memset(row, 0, cs);
        memset(scales + t * bs, 0, bs * sizeof(float));
        memset(sums + t * bs, 0, bs * sizeof(int32_t));
        for (size_t b = 0; b < nb; b++) {
            const float *v = x + t * ldx + b * BLOCK;
            float largest = 0.0f;
            for (int i = 0; i < BLOCK; i++) {
                float a = fabsf(v[i]);
                largest = a > largest ? a : largest;
            }
            float d = largest / 127.0f;
            if (!(d > 0.0f)) continue;  // zero block, or max|x| / 127 underflows: d_a = 0, codes 0
            int32_t sum = 0;
            for (int i = 0; i < BLOCK; i++) {
                int8_t q = quantize_one(v[i], d);
                row[code_offset(b, (size_t)i)] = q;
                sum += q;
            }
            scales[t * bs + b] = d;
            sums[t * bs + b] = sum;
        }
    }
}

// ---------------------------------------------------------------- the problem and the generic path

typedef struct {
    const ce_block_matrix *w;
    const ce_block_rows *a;
    const ce_block_rows *residual;  // a two-part product's second part (NULL: one part, `a`)
    size_t j0, j1;             // the columns computed
    size_t nb;                 // blocks per row: k / 32
    size_t code_stride;        // bytes per activation row
    size_t block_stride;       // scales and sums per activation row
    size_t row_bytes;          // bytes of codes per weight row: k/2 (4 and 5 bits) or k (8 bits)
    size_t high_bytes;         // bytes of fifth bits per weight row: k/8 (5 bits) or 0
    int32_t zero;              // the zero point the kernel corrects with (z, or z − 128: see AVX2)
    int32_t *acc;              // integer parts only: acc[t][j − j0][b]; else the floats below
    const float *bias;
    float *c;
    size_t ldc;
    int accumulate;
} problem;

static inline int32_t *acc_at(const problem *p, size_t t, size_t j) {
    return p->acc + (t * (p->j1 - p->j0) + (j - p->j0)) * p->nb;
}

// y[t][j] = (accumulate ? y[t][j] : 0) + bias[j] + sum.
static inline void finish_one(const problem *p, size_t t, size_t j, float sum) {
    float *y = p->c + t * p->ldc + j;
    float v = sum;
    if (p->bias) v += p->bias[j];
    if (p->accumulate) v += *y;
    *y = v;
}

// Two-part products (ce_block_gemm_two_part_f32). The kernels see the parts as one list of
// activation rows: a product's T rows of one part, or 2T rows for two, row v being row v / parts
// of part v % parts (coarse, then residual), so that a tile's panels hold each row's two parts
// side by side. Each part's sum goes through the float operations of a one-part product, and the
// two finish as a product of the coarse part followed by one of the residual part accumulating:
//     y = sum_r + ((accumulate ? y : 0) + bias + sum_c)
// which is what two calls of ce_block_gemm_f32 write, bit for bit.
static inline size_t parts_of(const problem *p) { return p->residual ? 2 : 1; }

static inline size_t kernel_rows(const problem *p) { return parts_of(p) * p->a->rows; }

static inline const ce_block_rows *part_of(const problem *p, size_t part) { return part == 0 ? p->a : p->residual; }

// Row v of the kernels' list: its codes, scales and sums.
static inline const int8_t *kernel_codes(const problem *p, size_t v) {
    return part_of(p, v % parts_of(p))->codes + v / parts_of(p) * p->code_stride;
}

static inline const float *kernel_scales(const problem *p, size_t v) {
    return part_of(p, v % parts_of(p))->scales + v / parts_of(p) * p->block_stride;
}

static inline const int32_t *kernel_sums(const problem *p, size_t v) {
    return part_of(p, v % parts_of(p))->sums + v / parts_of(p) * p->block_stride;
}

// Row t's activation parts as the streaming kernels read them: each part's codes, block scales
// and block sums (the coarse part, then the residual when there are two; unused slots NULL).
typedef struct {
    const int8_t *codes[2];
    const float *scales[2];
    const int32_t *sums[2];
} row_parts;

static inline row_parts parts_of_row(const problem *p, size_t t, size_t parts) {
    row_parts r = {{NULL, NULL}, {NULL, NULL}, {NULL, NULL}};
    for (size_t k = 0; k < parts; k++) {
        r.codes[k] = kernel_codes(p, parts * t + k);
        r.scales[k] = kernel_scales(p, parts * t + k);
        r.sums[k] = kernel_sums(p, parts * t + k);
    }
    return r;
}

// finish_one for `parts` sums of row t, column j (the residual's added last).
static inline void finish_parts(const problem *p, size_t t, size_t j, const float *sums, size_t parts) {
    finish_one(p, t, j, sums[0]);
    if (parts == 2) {
        float *y = p->c + t * p->ldc + j;
        *y = sums[1] + *y;
    }
}

// The 32 fifth bits of block b of a 5-bit weight row (bit i: element i), little-endian as GGML's Q5_0.
static inline uint32_t high_bits(const uint8_t *whigh, size_t b) {
    const uint8_t *h = whigh + 4 * b;
    return (uint32_t)h[0] | (uint32_t)h[1] << 8 | (uint32_t)h[2] << 16 | (uint32_t)h[3] << 24;
}

// Σ_i u·a over block b of one weight row (its fifth bits `whigh` for 5-bit codes) and one activation row.
static inline int32_t block_dot(int bits, const uint8_t *wrow, const uint8_t *whigh, const int8_t *arow, size_t b) {
    const int8_t *lo = arow + code_offset(b, 0), *hi = arow + code_offset(b, 16);
    int32_t s = 0;
    if (bits == 4) {
        const uint8_t *q = wrow + 16 * b;
        for (int i = 0; i < 16; i++) s += (q[i] & 15) * lo[i] + (q[i] >> 4) * hi[i];
    } else if (bits == 5) {
        const uint8_t *q = wrow + 16 * b;
        const uint32_t h = high_bits(whigh, b);
        for (int i = 0; i < 16; i++)
            s += (int32_t)((q[i] & 15u) | ((h >> i) & 1u) << 4) * lo[i] +
                 (int32_t)((unsigned)(q[i] >> 4) | ((h >> (i + 16)) & 1u) << 4) * hi[i];
    } else {
        const uint8_t *q = wrow + 32 * b;
        for (int i = 0; i < 16; i++) s += q[i] * lo[i] + q[16 + i] * hi[i];
    }
    return s;
}

// x: [T, k] quantized, W: [n, k] blocks → y[T, j0..<j1]: one output at a time, blocks in order,
// each part in turn.
static void gemm_generic(const problem *p) {
    const ce_block_matrix *w = p->w;
    const size_t parts = parts_of(p);
    for (size_t t = 0; t < p->a->rows; t++) {
        for (size_t j = p->j0; j < p->j1; j++) {
            const uint8_t *wrow = w->codes + j * p->row_bytes;
            const uint8_t *whigh = w->high ? w->high + j * p->high_bytes : NULL;
            const uint16_t *d = w->scales + j * p->nb, *m = w->mins ? w->mins + j * p->nb : NULL;
            float sums[2] = {0.0f, 0.0f};
            for (size_t part = 0; part < parts; part++) {
                const size_t v = parts * t + part;
                const int8_t *arow = kernel_codes(p, v);
                const float *da = kernel_scales(p, v);
                const int32_t *sa = kernel_sums(p, v);
                float sum = 0.0f;
                for (size_t b = 0; b < p->nb; b++) {
                    int32_t integer = block_dot(w->bits, wrow, whigh, arow, b) - p->zero * sa[b];
                    if (p->acc) {
                        acc_at(p, t, j)[b] = integer;
                        continue;
                    }
                    sum += ce_float_from_half(d[b]) * da[b] * (float)integer;
                    if (m) sum += ce_float_from_half(m[b]) * (da[b] * (float)sa[b]);
                }
                sums[part] = sum;
            }
            if (!p->acc) finish_parts(p, t, j, sums, parts);
        }
    }
}

#if defined(__x86_64__) && defined(__clang__)
#include <immintrin.h>
#define INLINE static inline __attribute__((always_inline))
// Fully unrolled, so that arrays of registers stay registers (the default thresholds of -O2
// leave some of these loops rolled).
#define UNROLL _Pragma("clang loop unroll(full)")

// Every vector path also has AVX2, FMA and F16C (vcvtph2ps); the AVX-512 ones have them all.
#define T_AVX2 "avx2,fma,f16c"
#define T_AVX_VNNI "avx2,fma,f16c,avxvnni"
#define T_EVEX256 "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni"
#define T_512 "avx2,fma,f16c,avx512f,avx512bw,avx512vnni"

static inline size_t min_size(size_t a, size_t b) { return a < b ? a : b; }

static inline int32_t load_i32(const void *p) {
    int32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

// Calls BLOCK(…, R, BITS) with R (1 … 4 or 1 … 8) and BITS (4 or 8) as constants, so that each
// always-inlined kernel keeps its accumulators in registers.
#define WITH_BITS(BLOCK, R, BITS, ...)                                                   \
    do {                                                                                 \
        if ((BITS) == 4) BLOCK(__VA_ARGS__, R, 4);                                       \
        else BLOCK(__VA_ARGS__, R, 8);                                                   \
    } while (0)
#define WITH_ROWS4(BLOCK, R, BITS, ...)                                                  \
    switch (R) {                                                                         \
    case 1: WITH_BITS(BLOCK, 1, BITS, __VA_ARGS__); break;                               \
    case 2: WITH_BITS(BLOCK, 2, BITS, __VA_ARGS__); break;                               \
    case 3: WITH_BITS(BLOCK, 3, BITS, __VA_ARGS__); break;                               \
    default: WITH_BITS(BLOCK, 4, BITS, __VA_ARGS__); break;                              \
    }
#define WITH_ROWS8(BLOCK, R, BITS, ...)                                                  \
    switch (R) {                                                                         \
    case 1: WITH_BITS(BLOCK, 1, BITS, __VA_ARGS__); break;                               \
    case 2: WITH_BITS(BLOCK, 2, BITS, __VA_ARGS__); break;                               \
    case 3: WITH_BITS(BLOCK, 3, BITS, __VA_ARGS__); break;                               \
    case 4: WITH_BITS(BLOCK, 4, BITS, __VA_ARGS__); break;                               \
    case 5: WITH_BITS(BLOCK, 5, BITS, __VA_ARGS__); break;                               \
    case 6: WITH_BITS(BLOCK, 6, BITS, __VA_ARGS__); break;                               \
    case 7: WITH_BITS(BLOCK, 7, BITS, __VA_ARGS__); break;                               \
    default: WITH_BITS(BLOCK, 8, BITS, __VA_ARGS__); break;                              \
    }

// Calls STREAM(p, t, rows, parts, integers, bits) with the three constants: one part with the
// integers (tests), or one or two parts with the floats; 4- or 8-bit codes.
#define STREAM_KINDS(STREAM, p, t, rows, bits)                                           \
    do {                                                                                 \
        const size_t parts_ = parts_of(p);                                               \
        if ((bits) == 4) {                                                               \
            if ((p)->acc) STREAM(p, t, rows, 1, 1, 4);                                   \
            else if (parts_ == 1) STREAM(p, t, rows, 1, 0, 4);                           \
            else STREAM(p, t, rows, 2, 0, 4);                                            \
        } else if ((bits) == 5) {                                                        \
            if ((p)->acc) STREAM(p, t, rows, 1, 1, 5);                                   \
            else if (parts_ == 1) STREAM(p, t, rows, 1, 0, 5);                           \
            else STREAM(p, t, rows, 2, 0, 5);                                            \
        } else {                                                                         \
            if ((p)->acc) STREAM(p, t, rows, 1, 1, 8);                                   \
            else if (parts_ == 1) STREAM(p, t, rows, 1, 0, 8);                           \
            else STREAM(p, t, rows, 2, 0, 8);                                            \
        }                                                                                \
    } while (0)

// ---------------------------------------------------------------- AVX2 quantizer and shared pieces

__attribute__((target(T_AVX2)))
static inline float hmax8(__m256 v) {
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

__attribute__((target(T_AVX2)))
static inline int32_t hsum8_epi32(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
    return _mm_cvtsi128_si32(s);
}

// Same bytes as quantize_generic: |x| and the maximum are exact (a NaN aside), vdivps rounds as
// `/` does, vcvtps2dq rounds to nearest even as nearbyintf does, and the clamps are the same.
__attribute__((target(T_AVX2)))
static void quantize_avx2(const float *x, size_t m, size_t k, size_t ldx, int8_t *codes, float *scales, int32_t *sums) {
    size_t nb = k / BLOCK, cs = ce_block_code_stride(k), bs = ce_block_block_stride(k);
    const __m256 magnitude = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
    const __m256i lowest = _mm256_set1_epi32(-127), highest = _mm256_set1_epi32(127);
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    for (size_t t = 0; t < m; t++) {
        int8_t *row = codes + t * cs;
        memset(row, 0, cs);
        memset(scales + t * bs, 0, bs * sizeof(float));
        memset(sums + t * bs, 0, bs * sizeof(int32_t));
        for (size_t b = 0; b < nb; b++) {
            const float *v = x + t * ldx + b * BLOCK;
            __m256 v0 = _mm256_loadu_ps(v), v1 = _mm256_loadu_ps(v + 8);
            __m256 v2 = _mm256_loadu_ps(v + 16), v3 = _mm256_loadu_ps(v + 24);
            __m256 top = _mm256_max_ps(_mm256_max_ps(_mm256_and_ps(v0, magnitude), _mm256_and_ps(v1, magnitude)),
                                       _mm256_max_ps(_mm256_and_ps(v2, magnitude), _mm256_and_ps(v3, magnitude)));
            float d = hmax8(top) / 127.0f;
            if (!(d > 0.0f)) continue;
            const __m256 dv = _mm256_set1_ps(d);
            __m256i q0 = _mm256_cvtps_epi32(_mm256_div_ps(v0, dv)), q1 = _mm256_cvtps_epi32(_mm256_div_ps(v1, dv));
            __m256i q2 = _mm256_cvtps_epi32(_mm256_div_ps(v2, dv)), q3 = _mm256_cvtps_epi32(_mm256_div_ps(v3, dv));
            q0 = _mm256_min_epi32(_mm256_max_epi32(q0, lowest), highest);
            q1 = _mm256_min_epi32(_mm256_max_epi32(q1, lowest), highest);
            q2 = _mm256_min_epi32(_mm256_max_epi32(q2, lowest), highest);
            q3 = _mm256_min_epi32(_mm256_max_epi32(q3, lowest), highest);
            // The packs interleave 128-bit lanes: dwords come out as q0a q1a q2a q3a q0b …; the permute orders them.
            __m256i bytes = _mm256_packs_epi16(_mm256_packs_epi32(q0, q1), _mm256_packs_epi32(q2, q3));
            bytes = _mm256_permutevar8x32_epi32(bytes, order);
            _mm_storeu_si128((__m128i *)(row + code_offset(b, 0)), _mm256_castsi256_si128(bytes));
            _mm_storeu_si128((__m128i *)(row + code_offset(b, 16)), _mm256_extracti128_si256(bytes, 1));
            scales[t * bs + b] = d;
            sums[t * bs + b] = hsum8_epi32(_mm256_add_epi32(_mm256_add_epi32(q0, q1), _mm256_add_epi32(q2, q3)));
        }
    }
}

// Halves rows[r][b] (lanes 0–3) and rows[r][b + 1] (lanes 4–7, 0 unless `complete`) of four
// rows, as floats.
__attribute__((target(T_AVX2)))
INLINE __m256 rows_halves2(const uint16_t *const rows[4], size_t b, int complete) {
    if (!complete) {
        const short h0 = (short)rows[0][b], h1 = (short)rows[1][b], h2 = (short)rows[2][b], h3 = (short)rows[3][b];
        return _mm256_cvtph_ps(_mm_setr_epi16(h0, h1, h2, h3, 0, 0, 0, 0));
    }
    // Each row's two halves as one 32-bit load, then rows-major (2r + h) to block-major (4h + r).
    __m128i h = _mm_setr_epi32(load_i32(rows[0] + b), load_i32(rows[1] + b), load_i32(rows[2] + b),
                               load_i32(rows[3] + b));
    return _mm256_permutevar8x32_ps(_mm256_cvtph_ps(h), _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7));
}

// The block sums' order after the add trees of NAME##_half and NAME##_whole: vector i of the four summed holds
// block 2i in its low 128 bits and block 2i + 1 in its high 128 bits, and the tree leaves block
// 2i + h in lane 4h + i. These permutations go from tree order to block order and back.
#define TREE8_TO_BLOCKS _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)
#define BLOCKS_TO_TREE8 _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7)

// Four rows' eight-lane float sums → their four totals (lane r: row r).
__attribute__((target(T_AVX2)))
INLINE __m128 hsum8x4(__m256 f0, __m256 f1, __m256 f2, __m256 f3) {
    __m256 s = _mm256_hadd_ps(_mm256_hadd_ps(f0, f1), _mm256_hadd_ps(f2, f3));
    return _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
}

// y[t][j + r] = (accumulate ? y : 0) + bias + sums[0][r], then + sums[1][r] for a second part
// (finish_parts), for r < valid (≤ 4).
__attribute__((target(T_AVX2)))
INLINE void finish4(const problem *p, size_t t, size_t j, size_t valid, const __m128 sums[2], const size_t parts) {
    if (valid < 4) {
        float part[4][2];
        for (size_t k = 0; k < parts; k++) {
            float lanes[4];
            _mm_storeu_ps(lanes, sums[k]);
            for (size_t r = 0; r < 4; r++) part[r][k] = lanes[r];
        }
        for (size_t r = 0; r < valid; r++) finish_parts(p, t, j + r, part[r], parts);
        return;
    }
    float *y = p->c + t * p->ldc + j;
    __m128 v = sums[0];
    if (p->bias) v = _mm_add_ps(v, _mm_loadu_ps(p->bias + j));
    if (p->accumulate) v = _mm_add_ps(v, _mm_loadu_ps(y));
    if (parts == 2) v = _mm_add_ps(sums[1], v);
    _mm_storeu_ps(y, v);
}

// The streaming kernels work on four weight rows at once, always: rows j … j + valid − 1, the
// missing ones (at the right edge) standing in for row j and discarded, so that every column
// goes through the same float operations whichever group it falls in (splitting a product
// between threads by columns then changes no bit).
typedef struct {
    const uint8_t *codes[4], *high[4];  // high: the fifth bits of 5-bit codes, else NULL
    const uint16_t *scales[4], *mins[4];
    int32_t *acc[4];                // NULL: floats, or a row standing in
    size_t first, valid;            // j, and the rows that are real
} row_slots;

static inline row_slots slots_of(const problem *p, size_t t, size_t j, size_t valid) {
    row_slots rows = {.first = j, .valid = valid};
    for (size_t r = 0; r < 4; r++) {
        const size_t row = j + (r < valid ? r : 0);
        rows.codes[r] = p->w->codes + row * p->row_bytes;
        rows.high[r] = p->w->high ? p->w->high + row * p->high_bytes : NULL;
        rows.scales[r] = p->w->scales + row * p->nb;
        rows.mins[r] = p->w->mins ? p->w->mins + row * p->nb : NULL;
        rows.acc[r] = p->acc && r < valid ? acc_at(p, t, row) : NULL;
    }
    return rows;
}

// Rows ahead of the streaming kernels that software prefetch asks for. Decoding reads every weight
// once, from L3 or memory: the kernels' arithmetic keeps too few loads in flight for the hardware
// prefetchers alone to reach the bandwidth (measured on a Xeon of family 6, model 207: 25–35%
// faster from memory, up to ~15% from L3; ~10% slower when the weights already sit in L2, which
// decoding a model does not meet).
#define PREFETCH_ROWS 16
// Into L2, not L1 (PREFETCH_HINT): on a Zen 4 (AMD family 25, model 17), decoding a 0.5B model's
// 478 MiB of blocks from memory on 2 threads ran at ~25 tokens/s with prefetcht0, ~29 without any
// software prefetch and ~40 with prefetcht1/t2 (three runs each): a burst of L1 prefetches fills
// the miss queue the kernel's own loads wait on, and the L1 prefetchers bring lines from L2 anyway.
#define PREFETCH_HINT _MM_HINT_T1


// Asks for blocks b0 … b1 − 1 of weight row `row` (codes, fifth bits, scales, minimums), if the
// matrix has that row. The streaming kernels call it for the row PREFETCH_ROWS ahead of each row
// they read, step by step, so that the requests are spread among the loads rather than issued in
// one burst per four rows (a burst of up to 4 · in / 64 lines, which on a Zen 4 left decode ~8%
// slower: 43.5/44.0 against 47.9/46.5 tokens/s on the 0.5B Q4_K_M mix, alternated).
static inline void prefetch_blocks(const problem *p, size_t row, size_t b0, size_t b1) {
    if (row >= p->w->rows) return;
    const size_t cb = p->row_bytes / p->nb;
    const char *codes = (const char *)(p->w->codes + row * p->row_bytes);
    for (size_t o = b0 * cb; o < b1 * cb; o += 64) _mm_prefetch(codes + o, PREFETCH_HINT);
    if (p->w->high) {
        const char *high = (const char *)(p->w->high + row * p->high_bytes);
        for (size_t o = 4 * b0; o < 4 * b1; o += 64) _mm_prefetch(high + o, PREFETCH_HINT);
    }
    const char *scales = (const char *)(p->w->scales + row * p->nb);
    for (size_t o = 2 * b0; o < 2 * b1; o += 64) _mm_prefetch(scales + o, PREFETCH_HINT);
    if (p->w->mins) {
        const char *mins = (const char *)(p->w->mins + row * p->nb);
        for (size_t o = 2 * b0; o < 2 * b1; o += 64) _mm_prefetch(mins + o, PREFETCH_HINT);
    }
}

// Row t, columns j0 … j0 + count − 1 (count ≤ 8) finished from eight floats of each part
// (finish_parts' order).
__attribute__((target(T_AVX2)))
INLINE void store8(const problem *p, const __m256 *parts, size_t count_of_parts, size_t t, size_t j0, size_t count) {
    const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)count), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    float *y = p->c + t * p->ldc + j0;
    __m256 v = parts[0];
    if (p->bias) v = _mm256_add_ps(v, _mm256_maskload_ps(p->bias + j0, mask));
    if (p->accumulate) v = _mm256_add_ps(v, _mm256_maskload_ps(y, mask));
    if (count_of_parts == 2) v = _mm256_add_ps(parts[1], v);
    _mm256_maskstore_ps(y, mask, v);
}

// ---------------------------------------------------------------- tiles (T ≥ 2)
//
// A tile holds columns j … j+15 (fewer at the right edge: the missing ones are zero codes and
// zero scales) unpacked to u8: codes[b][g][c][i] (64-byte aligned) is the code of column c at
// depth i of group g of block b, where groups 0 … 3 are elements 0 … 15 and groups 4 … 7 are
// elements 16 … 31 (the activation layout's order). scales[b][c] and mins[b][c] are the floats
// of d[j + c][b] and m[j + c][b]. The 512-bit kernels read a group as one register (16 columns ×
// 4 depths); the 256-bit ones read its halves (8 columns each).
//
// The activations are rearranged once per product into panels of P rows (8 for the 512-bit
// kernel, 4 for the 256-bit ones; the kernels' rows, 2T for two parts, each row's parts side by
// side; rows past the last are zero), so that a kernel finds the four bytes
// it broadcasts for row r of its panel at a fixed offset: panel codes[b][g][r][i] is depth i of
// group g of block b of row r. Beside them, per panel, [b][r]: −zero · s_a, d_a and d_a · s_a.

typedef struct {
    uint8_t *codes;
    float *scales;
    float *mins;
    size_t panel_rows;              // P
    int8_t *panels;                 // [⌈T/P⌉][nb][8][P][4]
    int32_t *negative_corrections;  // [⌈T/P⌉][nb][P]: −zero · s_a
    float *activation_scales;       // [⌈T/P⌉][nb][P]: d_a
    float *min_factors;             // [⌈T/P⌉][nb][P]: d_a · s_a
} tile;

// Transposes four vectors of 4 × 4 int32 per 128-bit lane: out[g] lane L = (in[0..3] lane L, dword g).
__attribute__((target(T_AVX2)))
INLINE void transpose4(__m256i z[4]) {
    __m256i t0 = _mm256_unpacklo_epi32(z[0], z[1]), t1 = _mm256_unpackhi_epi32(z[0], z[1]);
    __m256i t2 = _mm256_unpacklo_epi32(z[2], z[3]), t3 = _mm256_unpackhi_epi32(z[2], z[3]);
    z[0] = _mm256_unpacklo_epi64(t0, t2);
    z[1] = _mm256_unpackhi_epi64(t0, t2);
    z[2] = _mm256_unpacklo_epi64(t1, t3);
    z[3] = _mm256_unpackhi_epi64(t1, t3);
}

// W[j … j + count − 1, k] → the tile (count ≤ 16).
__attribute__((target(T_AVX2)))
static void build_tile(const problem *p, size_t j, size_t count, tile *tl) {
    static const uint8_t zeros[32] = {0};
    const ce_block_matrix *w = p->w;
    const size_t nb = p->nb;
    const __m256i low = _mm256_set1_epi8(0x0F);
    const uint8_t *rows[TILE_COLUMNS];
    for (size_t c = 0; c < TILE_COLUMNS; c++) rows[c] = c < count ? w->codes + (j + c) * p->row_bytes : NULL;
    for (size_t b = 0; b < nb; b++) {
        uint8_t *dst = tl->codes + b * TILE_BLOCK_BYTES;
        for (size_t h = 0; h < 2; h++) {
            // Register lane 0 takes column 8h + q, lane 1 column 8h + 4 + q: after the transpose,
            // group g's vector holds columns 8h … 8h + 7 in order.
            if (w->bits != 8) {
                __m256i z[4];
                for (size_t q = 0; q < 4; q++) {
                    const uint8_t *a = rows[8 * h + q], *c = rows[8 * h + 4 + q];
                    z[q] = _mm256_loadu2_m128i((const __m128i *)(c ? c + 16 * b : zeros),
                                               (const __m128i *)(a ? a + 16 * b : zeros));
                }
                transpose4(z);
                for (size_t g = 0; g < 4; g++) {
                    _mm256_store_si256((__m256i *)(dst + g * TILE_GROUP_BYTES + 32 * h), _mm256_and_si256(z[g], low));
                    _mm256_store_si256((__m256i *)(dst + (4 + g) * TILE_GROUP_BYTES + 32 * h),
                                       _mm256_and_si256(_mm256_srli_epi16(z[g], 4), low));
                }
            } else {
                for (size_t e = 0; e < 2; e++) {
                    __m256i z[4];
                    for (size_t q = 0; q < 4; q++) {
                        const uint8_t *a = rows[8 * h + q], *c = rows[8 * h + 4 + q];
                        z[q] = _mm256_loadu2_m128i((const __m128i *)(c ? c + 32 * b + 16 * e : zeros),
                                                   (const __m128i *)(a ? a + 32 * b + 16 * e : zeros));
                    }
                    transpose4(z);
                    for (size_t g = 0; g < 4; g++)
                        _mm256_store_si256((__m256i *)(dst + (4 * e + g) * TILE_GROUP_BYTES + 32 * h), z[g]);
                }
            }
        }
        // 5-bit codes: the fifth bits into the codes. Elements 4g … 4g + 3 of a half are group g
        // of that half, one byte each of the column's four: four bits at a time through a table
        // of the 16 patterns of 0x10 bytes.
        if (w->bits == 5) {
            static const uint32_t spread[16] = {
                0x00000000u, 0x00000010u, 0x00001000u, 0x00001010u, 0x00100000u, 0x00100010u, 0x00101000u, 0x00101010u,
                0x10000000u, 0x10000010u, 0x10001000u, 0x10001010u, 0x10100000u, 0x10100010u, 0x10101000u, 0x10101010u,
            };
            for (size_t c = 0; c < count; c++) {
                const uint32_t bits5 = high_bits(w->high + (j + c) * p->high_bytes, b);
                for (size_t g = 0; g < 8; g++) {
                    uint32_t word;
                    uint8_t *at = dst + g * TILE_GROUP_BYTES + 4 * c;
                    memcpy(&word, at, 4);
                    word |= spread[(bits5 >> (4 * g)) & 15u];
                    memcpy(at, &word, 4);
                }
            }
        }
    }
    for (size_t c = 0; c < TILE_COLUMNS; c++) {
        for (int which = 0; which < 2; which++) {
            const uint16_t *source = which == 0 ? w->scales : w->mins;
            float *target = which == 0 ? tl->scales : tl->mins;
            if (!source) continue;
            if (c >= count) {
                for (size_t b = 0; b < nb; b++) target[b * TILE_COLUMNS + c] = 0.0f;
                continue;
            }
            const uint16_t *row = source + (j + c) * nb;
            size_t b = 0;
            for (; b + 8 <= nb; b += 8) {
                float part[8];
                _mm256_storeu_ps(part, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(row + b))));
                for (size_t i = 0; i < 8; i++) target[(b + i) * TILE_COLUMNS + c] = part[i];
            }
            for (; b < nb; b++) target[b * TILE_COLUMNS + c] = ce_float_from_half(row[b]);
        }
    }
}

// The activations and their factors in panels of P rows (see the tile's description).
__attribute__((target(T_AVX2)))
static void build_panels(const problem *p, tile *tl) {
    static const int8_t zeros[16] = {0};
    const size_t nb = p->nb, P = tl->panel_rows, m = kernel_rows(p);
    for (size_t t0 = 0; t0 < m; t0 += P) {
        const size_t panel = t0 / P;
        int8_t *codes = tl->panels + panel * nb * 32 * P;
        for (size_t b = 0; b < nb; b++) {
            const size_t lo = code_offset(b, 0), hi = code_offset(b, 16);
            // Four rows at a time: row q's groups 0–3 (low half) and 4–7 (high half) in lanes 0
            // and 1; after the transpose, vector g holds group g of the four rows, then group 4 + g.
            for (size_t r0 = 0; r0 < P; r0 += 4) {
                __m256i z[4];
                for (size_t q = 0; q < 4; q++) {
                    // A row past the last reads zeros for both halves (its results are never stored).
                    const size_t t = t0 + r0 + q;
                    const int8_t *row = t < m ? kernel_codes(p, t) : NULL;
                    const int8_t *low = row ? row + lo : zeros, *high = row ? row + hi : zeros;
                    z[q] = _mm256_loadu2_m128i((const __m128i *)high, (const __m128i *)low);
                }
                transpose4(z);
                int8_t *dst = codes + b * 32 * P + 4 * r0;
                for (size_t g = 0; g < 4; g++) {
                    _mm_storeu_si128((__m128i *)(dst + g * 4 * P), _mm256_castsi256_si128(z[g]));
                    _mm_storeu_si128((__m128i *)(dst + (4 + g) * 4 * P), _mm256_extracti128_si256(z[g], 1));
                }
            }
            for (size_t r = 0; r < P; r++) {
                const size_t t = t0 + r, at = (panel * nb + b) * P + r;
                const float da = t < m ? kernel_scales(p, t)[b] : 0.0f;
                const int32_t sa = t < m ? kernel_sums(p, t)[b] : 0;
                tl->negative_corrections[at] = -p->zero * sa;
                tl->activation_scales[at] = da;
                tl->min_factors[at] = da * (float)sa;
            }
        }
    }
}

// One allocation for a tile and the panels of every row (of every part); NULL when out of memory.
static void *allocate_tile(const problem *p, size_t panel_rows, tile *tl) {
    const size_t panels = (kernel_rows(p) + panel_rows - 1) / panel_rows, entries = panels * p->nb * panel_rows;
    const size_t codes = p->nb * TILE_BLOCK_BYTES, floats = p->nb * TILE_COLUMNS * sizeof(float);
    const size_t panel_codes = entries * 32, factors = entries * sizeof(float);
    const size_t total = (codes + 2 * floats + panel_codes + 3 * factors + 63) / 64 * 64;
    uint8_t *memory = aligned_alloc(64, total);
    if (!memory) return NULL;
    tl->codes = memory;
    tl->scales = (float *)(memory + codes);
    tl->mins = (float *)(memory + codes + floats);
    tl->panel_rows = panel_rows;
    tl->panels = (int8_t *)(memory + codes + 2 * floats);
    tl->negative_corrections = (int32_t *)(memory + codes + 2 * floats + panel_codes);
    tl->activation_scales = (float *)(memory + codes + 2 * floats + panel_codes + factors);
    tl->min_factors = (float *)(memory + codes + 2 * floats + panel_codes + 2 * factors);
    build_panels(p, tl);
    return memory;
}

// Row t's integer parts of columns j … j + count − 1 for block b (tests only: speed is no concern).
static void store_integers(const problem *p, const int32_t *sums, size_t t, size_t j, size_t count, size_t b) {
    for (size_t c = 0; c < count; c++) acc_at(p, t, j + c)[b] = sums[c];
}

// ---------------------------------------------------------------- 256-bit kernels: AVX2 and VNNI
//
// One streaming and one tiled kernel, written once (DEFINE_256) over a few operations that differ:
//  - AVX2, 4-bit: vpmaddubsw is exact (a pair of products is at most 2·15·127 = 3,810), so its
//    int16 pair sums add up over two vectors (7,620) or over a whole block in a tile (8 groups:
//    30,480 < 32,767) before vpmaddwd by ones widens them to int32. The streaming kernel's add
//    tree starts from the int16 lanes: two rounds of vphaddw (15,240, then 30,480) and one
//    vpmaddwd leave the block sums, three instructions where widening each vector first took ten.
//  - AVX2, 8-bit: vpmaddubsw would saturate (2·255·127 = 64,770), so the codes are made signed,
//    s = u − 128 (u XOR 0x80), and multiplied as |s| · (a · sign s) (vpabsb, vpsignb): a pair is at
//    most 2·128·127 = 32,512, exact; vpmaddwd by ones widens each vector on its own. The sums are
//    then Σ u·a − 128·s_a, so this kernel corrects with z − 128 instead of z (problem.zero).
//  - VNNI (AVX-VNNI, or the EVEX form with AVX-512 VL): vpdpbusd, u8 × s8 into int32, exact.

// Dot: blocks b and b + 1 of one weight row against the activations; lo/hi are the two blocks'
// codes of elements 0 … 15 and 16 … 31 (u8), x/y the matching activation bytes. Returns block b's
// partial sums in the low 128 bits, block b + 1's in the high 128 bits: four int32 lanes each,
// or for AVX2 on 4-bit codes eight int16 lanes each (NAME##_tree4 reduces either).
__attribute__((target(T_AVX2)))
INLINE __m256i avx2_dot(const int bits, __m256i lo, __m256i hi, __m256i x, __m256i y) {
    const __m256i ones = _mm256_set1_epi16(1);
    if (bits == 4) return _mm256_add_epi16(_mm256_maddubs_epi16(lo, x), _mm256_maddubs_epi16(hi, y));
    const __m256i flip = _mm256_set1_epi8((char)0x80);
    __m256i sl = _mm256_xor_si256(lo, flip), sh = _mm256_xor_si256(hi, flip);
    __m256i pl = _mm256_maddubs_epi16(_mm256_abs_epi8(sl), _mm256_sign_epi8(x, sl));
    __m256i ph = _mm256_maddubs_epi16(_mm256_abs_epi8(sh), _mm256_sign_epi8(y, sh));
    return _mm256_add_epi32(_mm256_madd_epi16(pl, ones), _mm256_madd_epi16(ph, ones));
}

__attribute__((target(T_AVX_VNNI)))
INLINE __m256i avx_vnni_dot(const int bits, __m256i lo, __m256i hi, __m256i x, __m256i y) {
    (void)bits;
    return _mm256_dpbusd_avx_epi32(_mm256_dpbusd_avx_epi32(_mm256_setzero_si256(), lo, x), hi, y);
}

__attribute__((target(T_EVEX256)))
INLINE __m256i evex256_dot(const int bits, __m256i lo, __m256i hi, __m256i x, __m256i y) {
    (void)bits;
    return _mm256_dpbusd_epi32(_mm256_dpbusd_epi32(_mm256_setzero_si256(), lo, x), hi, y);
}

// The add tree of the streaming kernels (see DEFINE_256) in two steps, so that the streaming kernels can reduce each two
// dot vectors as they come (fewer registers live): half(q0, q1) and half(q2, q3), then whole of
// the two and adjust. On 8-bit codes every path's lanes are int32 and vphaddd sums neighbours.
// On 4-bit codes AVX2's lanes are int16 (at most 7,620): vphaddw sums neighbours, twice (15,240,
// then 30,480: no wrap), and vpmaddwd by ones widens the last pair sums; VNNI's lanes are int32
// (at most 8·15·127 = 15,240): a pack and a pair sum halve two vectors, the last adding adjust.
__attribute__((target(T_AVX2)))
INLINE __m256i avx2_half(__m256i q0, __m256i q1, const int bits) {
    return bits == 4 ? _mm256_hadd_epi16(q0, q1) : _mm256_hadd_epi32(q0, q1);
}

__attribute__((target(T_AVX2)))
INLINE __m256i avx2_whole(__m256i l01, __m256i l23, __m256i adjust, const int bits) {
    if (bits != 4) return _mm256_add_epi32(_mm256_hadd_epi32(l01, l23), adjust);
    return _mm256_add_epi32(adjust, _mm256_madd_epi16(_mm256_hadd_epi16(l01, l23), _mm256_set1_epi16(1)));
}

#define DEFINE_VNNI256_TREE(NAME, TARGET, DPWSSD)                                                    \
    __attribute__((target(TARGET)))                                                                  \
    INLINE __m256i NAME##_half(__m256i q0, __m256i q1, const int bits) {                             \
        if (bits != 4) return _mm256_hadd_epi32(q0, q1);                                             \
        return _mm256_madd_epi16(_mm256_packs_epi32(q0, q1), _mm256_set1_epi16(1));                  \
    }                                                                                                \
    __attribute__((target(TARGET)))                                                                  \
    INLINE __m256i NAME##_whole(__m256i l01, __m256i l23, __m256i adjust, const int bits) {          \
        if (bits != 4) return _mm256_add_epi32(_mm256_hadd_epi32(l01, l23), adjust);                 \
        return DPWSSD(adjust, _mm256_packs_epi32(l01, l23), _mm256_set1_epi16(1));                   \
    }

DEFINE_VNNI256_TREE(avx_vnni, T_AVX_VNNI, _mm256_dpwssd_avx_epi32)
DEFINE_VNNI256_TREE(evex256, T_EVEX256, _mm256_dpwssd_epi32)

// Tile steps: a block's accumulator starts (begin), takes each group of 8 columns × 4 depths
// (prepare once per group, then step per row) and ends as exact int32 sums with the correction.
typedef struct {
    __m256i codes, signs;
} group256;

__attribute__((target(T_AVX2)))
INLINE __m256i avx2_begin(const int bits, int32_t negative_correction) {
    return bits == 4 ? _mm256_setzero_si256() : _mm256_set1_epi32(negative_correction);
}

__attribute__((target(T_AVX2)))
INLINE group256 avx2_prepare(const int bits, __m256i w) {
    if (bits == 4) return (group256){w, w};
    __m256i s = _mm256_xor_si256(w, _mm256_set1_epi8((char)0x80));
    return (group256){_mm256_abs_epi8(s), s};
}

__attribute__((target(T_AVX2)))
INLINE __m256i avx2_step(const int bits, __m256i acc, group256 w, __m256i x) {
    if (bits == 4) return _mm256_add_epi16(acc, _mm256_maddubs_epi16(w.codes, x));
    __m256i pairs = _mm256_maddubs_epi16(w.codes, _mm256_sign_epi8(x, w.signs));
    return _mm256_add_epi32(acc, _mm256_madd_epi16(pairs, _mm256_set1_epi16(1)));
}

__attribute__((target(T_AVX2)))
INLINE __m256i avx2_end(const int bits, __m256i acc, int32_t negative_correction) {
    if (bits != 4) return acc;
    return _mm256_add_epi32(_mm256_madd_epi16(acc, _mm256_set1_epi16(1)), _mm256_set1_epi32(negative_correction));
}

#define DEFINE_VNNI256_STEPS(NAME, TARGET, DPBUSD)                                                   \
    __attribute__((target(TARGET)))                                                                  \
    INLINE __m256i NAME##_begin(const int bits, int32_t negative_correction) {                      \
        (void)bits;                                                                                  \
        return _mm256_set1_epi32(negative_correction);                                               \
    }                                                                                                \
    __attribute__((target(TARGET)))                                                                  \
    INLINE group256 NAME##_prepare(const int bits, __m256i w) {                                      \
        (void)bits;                                                                                  \
        return (group256){w, w};                                                                     \
    }                                                                                                \
    __attribute__((target(TARGET)))                                                                  \
    INLINE __m256i NAME##_step(const int bits, __m256i acc, group256 w, __m256i x) {                 \
        (void)bits;                                                                                  \
        return DPBUSD(acc, w.codes, x);                                                              \
    }                                                                                                \
    __attribute__((target(TARGET)))                                                                  \
    INLINE __m256i NAME##_end(const int bits, __m256i acc, int32_t negative_correction) {           \
        (void)bits;                                                                                  \
        (void)negative_correction;                                                                   \
        return acc;                                                                                  \
    }

DEFINE_VNNI256_STEPS(avx_vnni, T_AVX_VNNI, _mm256_dpbusd_avx_epi32)
DEFINE_VNNI256_STEPS(evex256, T_EVEX256, _mm256_dpbusd_epi32)

// NAME##_pair: blocks b and b + 1 (b alone when !complete) of one weight row against row t of
//   each part's activations, the weights loaded and unpacked once for the parts: q[k] holds
//   block b's four partial sums for part k in its low 128 bits, b + 1's in its high ones.
// NAME##_half, NAME##_whole: four such vectors reduced to their eight block sums + adjust, in tree
//   order: lane 4h + i holds vector i's block h (adjust in the same order).
// NAME##_stream: x: [1, k] (row t, each part) · W[four rows, k]ᵀ, eight blocks per step; each
//   weight byte read once. The blocks after the last whole step run across the rows (NAME##_tail4).
// NAME##_tail4: those blocks of the four rows, two at a time, one add tree and one float step
//   for four rows; returns each part's float sums (lane r: row r), or writes the integers.
// NAME##_tile: x: [R, k] (kernel rows t … t + R − 1) · tile half h (columns j + 8h …)ᵀ.
// NAME##_run: the whole product (−1: out of memory for a tile).
// `parts` (1 or 2) is a constant in every instance of the streaming kernels, so that the
// one-part kernel is the same code as before two parts existed.
// The fifth bits of blocks b and b + 1 (b alone when !complete) of a 5-bit weight row as 0x10 in
// the bytes of their codes: half 0 for elements 0 … 15 (NAME##_pair's lo), 1 for 16 … 31 (hi);
// block b in the low 128 bits, b + 1 in the high ones. Each byte picks its bit out of a broadcast
// copy of the 64 bits (the one shuffle works within 128-bit lanes), then compares.
__attribute__((target(T_AVX2)))
INLINE __m256i fifth_bits256(const uint8_t *whigh, size_t b, int complete, int half) {
    uint64_t h = high_bits(whigh, b);
    if (complete) h |= (uint64_t)high_bits(whigh, b + 1) << 32;
    const __m256i v = _mm256_set1_epi64x((long long)h);
    const char o = (char)(2 * half);
    const __m256i pick = _mm256_setr_epi8(o, o, o, o, o, o, o, o, (char)(o + 1), (char)(o + 1), (char)(o + 1),
                                          (char)(o + 1), (char)(o + 1), (char)(o + 1), (char)(o + 1), (char)(o + 1),
                                          (char)(o + 4), (char)(o + 4), (char)(o + 4), (char)(o + 4), (char)(o + 4),
                                          (char)(o + 4), (char)(o + 4), (char)(o + 4), (char)(o + 5), (char)(o + 5),
                                          (char)(o + 5), (char)(o + 5), (char)(o + 5), (char)(o + 5), (char)(o + 5),
                                          (char)(o + 5));
    const __m256i bit = _mm256_set1_epi64x((long long)0x8040201008040201ull);
    const __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(_mm256_shuffle_epi8(v, pick), bit), bit);
    return _mm256_and_si256(set, _mm256_set1_epi8(0x10));
}

#define DEFINE_256(NAME, TARGET)                                                                     \
__attribute__((target(TARGET)))                                                                      \
INLINE void NAME##_pair(const uint8_t *wrow, const uint8_t *whigh, const int8_t *const arows[2], size_t b,       \
                        int complete, const size_t parts, const int bits, __m256i q[2]) {            \
    __m256i lo, hi;                                                                                  \
    if (bits != 8) {                                                                                 \
        const __m256i low = _mm256_set1_epi8(0x0F);                                                  \
        const uint8_t *src = wrow + 16 * b;                                                          \
        __m256i v = complete ? _mm256_loadu_si256((const __m256i *)src)                              \
                             : _mm256_zextsi128_si256(_mm_loadu_si128((const __m128i *)src));        \
        lo = _mm256_and_si256(v, low);                                                               \
        hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), low);                                         \
        if (bits == 5) {                                                                             \
            lo = _mm256_or_si256(lo, fifth_bits256(whigh, b, complete, 0));                          \
            hi = _mm256_or_si256(hi, fifth_bits256(whigh, b, complete, 1));                          \
        }                                                                                            \
    } else {                                                                                         \
        const uint8_t *src = wrow + 32 * b;                                                          \
        __m256i v0 = _mm256_loadu_si256((const __m256i *)src);                                       \
        __m256i v1 = complete ? _mm256_loadu_si256((const __m256i *)(src + 32)) : _mm256_setzero_si256(); \
        lo = _mm256_permute2x128_si256(v0, v1, 0x20);                                                \
        hi = _mm256_permute2x128_si256(v0, v1, 0x31);                                                \
    }                                                                                                \
    UNROLL                                                                                           \
    for (size_t k = 0; k < parts; k++) {                                                             \
        const int8_t *g = arows[k] + code_offset(b, 0);                                              \
        const __m256i x = _mm256_loadu_si256((const __m256i *)g), y = _mm256_loadu_si256((const __m256i *)(g + 64)); \
        q[k] = NAME##_dot(bits, lo, hi, x, y);                                                       \
    }                                                                                                \
}                                                                                                    \
                                                                                                     \
__attribute__((target(TARGET)))                                                                      \
INLINE void NAME##_tail4(const problem *p, size_t t, const row_slots *rows, size_t bt, const size_t parts, \
                         const int integers, const int bits, __m128 out[2]) {                        \
    const size_t nb = p->nb;                                                                         \
    const row_parts act = parts_of_row(p, t, parts);                                                 \
    const int8_t *const *arows = act.codes;                                                          \
    const float *const *da = act.scales;                                                             \
    const int32_t *const *sa = act.sums;                                                             \
    /* Lanes 0–3 take block b's values, lanes 4–7 block b + 1's (entries past nb are 0). */          \
    const __m256i spread = _mm256_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1);                                \
    __m256 f[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};                                        \
    for (size_t b = bt; b < nb; b += 2) {                                                            \
        const int complete = b + 1 < nb;                                                             \
        /* Rows 0, 1 and 2, 3 reduced as they come (the add tree in two steps). */                   \
        __m256i l[2][2];                                                                             \
        UNROLL                                                                                       \
        for (size_t r = 0; r < 4; r += 2) {                                                          \
            __m256i q0[2], q1[2];                                                                    \
            NAME##_pair(rows->codes[r], rows->high[r], arows, b, complete, parts, bits, q0);         \
            NAME##_pair(rows->codes[r + 1], rows->high[r + 1], arows, b, complete, parts, bits, q1); \
            UNROLL                                                                                   \
            for (size_t k = 0; k < parts; k++) l[k][r / 2] = NAME##_half(q0[k], q1[k], bits);        \
        }                                                                                            \
        UNROLL                                                                                       \
        for (size_t k = 0; k < parts; k++) {                                                         \
            const __m128i pair = _mm_loadl_epi64((const __m128i *)(sa[k] + b));                      \
            const __m256i sums = _mm256_permutevar8x32_epi32(_mm256_castsi128_si256(pair), spread);  \
            const __m256i adjust = _mm256_mullo_epi32(_mm256_set1_epi32(-p->zero), sums);            \
            const __m256i s = NAME##_whole(l[k][0], l[k][1], adjust, bits);                          \
            if (integers) {                                                                          \
                int32_t part[8];                                                                     \
                _mm256_storeu_si256((__m256i *)part, s);                                             \
                for (size_t r = 0; r < 4; r++) {                                                     \
                    if (!rows->acc[r]) continue;                                                     \
                    rows->acc[r][b] = part[r];                                                       \
                    if (complete) rows->acc[r][b + 1] = part[4 + r];                                 \
                }                                                                                    \
                continue;                                                                            \
            }                                                                                        \
            const __m128 two = _mm_castpd_ps(_mm_load_sd((const double *)(da[k] + b)));              \
            const __m256 scales = _mm256_permutevar8x32_ps(_mm256_castps128_ps256(two), spread);     \
            const __m256 d = rows_halves2(rows->scales, b, complete);                                \
            f[k] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_mul_ps(d, scales), f[k]);           \
            if (rows->mins[0])                                                                       \
                f[k] = _mm256_fmadd_ps(rows_halves2(rows->mins, b, complete),                        \
                                       _mm256_mul_ps(scales, _mm256_cvtepi32_ps(sums)), f[k]);       \
        }                                                                                            \
    }                                                                                                \
    for (size_t k = 0; k < parts; k++) out[k] = _mm_add_ps(_mm256_castps256_ps128(f[k]), _mm256_extractf128_ps(f[k], 1)); \
}                                                                                                    \
                                                                                                     \
__attribute__((target(TARGET)))                                                                      \
INLINE void NAME##_stream(const problem *p, size_t t, const row_slots *rows, const size_t parts, const int integers, \
                          const int bits) {                                                          \
    const size_t nb = p->nb, whole = nb / 8 * 8;                                                     \
    const row_parts act = parts_of_row(p, t, parts);                                                 \
    const int8_t *const *arows = act.codes;                                                          \
    const float *const *da = act.scales;                                                             \
    const int32_t *const *sa = act.sums;                                                             \
    const __m256i zero = _mm256_set1_epi32(-p->zero);                                                \
    __m256 f[2][4];                                                                                  \
    for (size_t k = 0; k < parts; k++)                                                               \
        for (size_t r = 0; r < 4; r++) f[k][r] = _mm256_setzero_ps();                                \
    for (size_t b0 = 0; b0 < whole; b0 += 8) {                                                       \
        __m256i adjust[2];                                                                           \
        __m256 scales[2], factors[2];                                                                \
        UNROLL                                                                                       \
        for (size_t k = 0; k < parts; k++) {                                                         \
            const __m256i sums = _mm256_loadu_si256((const __m256i *)(sa[k] + b0));                  \
            adjust[k] = _mm256_permutevar8x32_epi32(_mm256_mullo_epi32(zero, sums), BLOCKS_TO_TREE8); \
            scales[k] = _mm256_loadu_ps(da[k] + b0);                                                 \
            factors[k] = _mm256_mul_ps(scales[k], _mm256_cvtepi32_ps(sums));                         \
        }                                                                                            \
        UNROLL                                                                                       \
        for (size_t r = 0; r < 4; r++) {                                                             \
            prefetch_blocks(p, rows->first + r + PREFETCH_ROWS, b0, b0 + 8 == whole ? nb : b0 + 8);  \
            /* Pairs 0, 1 and 2, 3 reduced as they come (the add tree in two steps). */              \
            __m256i l[2][2];                                                                         \
            UNROLL                                                                                   \
            for (size_t h = 0; h < 4; h += 2) {                                                      \
                __m256i q0[2], q1[2];                                                                \
                NAME##_pair(rows->codes[r], rows->high[r], arows, b0 + 2 * h, 1, parts, bits, q0);   \
                NAME##_pair(rows->codes[r], rows->high[r], arows, b0 + 2 * h + 2, 1, parts, bits, q1); \
                UNROLL                                                                               \
                for (size_t k = 0; k < parts; k++) l[k][h / 2] = NAME##_half(q0[k], q1[k], bits);    \
            }                                                                                        \
            UNROLL                                                                                   \
            for (size_t k = 0; k < parts; k++) {                                                     \
                const __m256i tree = NAME##_whole(l[k][0], l[k][1], adjust[k], bits);                \
                const __m256i s = _mm256_permutevar8x32_epi32(tree, TREE8_TO_BLOCKS);                \
                if (integers) {                                                                      \
                    if (rows->acc[r]) _mm256_storeu_si256((__m256i *)(rows->acc[r] + b0), s);        \
                    continue;                                                                        \
                }                                                                                    \
                const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(rows->scales[r] + b0))); \
                f[k][r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_mul_ps(d, scales[k]), f[k][r]); \
                if (rows->mins[r])                                                                   \
                    f[k][r] = _mm256_fmadd_ps(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(rows->mins[r] + b0))), \
                                              factors[k], f[k][r]);                                  \
            }                                                                                        \
        }                                                                                            \
    }                                                                                                \
    if (whole == 0)                                                                                  \
        for (size_t r = 0; r < 4; r++) prefetch_blocks(p, rows->first + r + PREFETCH_ROWS, 0, nb);  \
    __m128 tail[2] = {_mm_setzero_ps(), _mm_setzero_ps()};                                           \
    if (whole < nb) NAME##_tail4(p, t, rows, whole, parts, integers, bits, tail);                    \
    if (integers) return;                                                                            \
    __m128 sums[2];                                                                                  \
    for (size_t k = 0; k < parts; k++) sums[k] = _mm_add_ps(hsum8x4(f[k][0], f[k][1], f[k][2], f[k][3]), tail[k]); \
    finish4(p, t, rows->first, rows->valid, sums, parts);                                            \
}                                                                                                    \
                                                                                                     \
__attribute__((target(TARGET)))                                                                      \
INLINE void NAME##_tile(const problem *p, const tile *tl, size_t t, size_t j, size_t count,          \
                        size_t h, const int R, const int bits) {                                     \
    const size_t nb = p->nb, first = (t / 4) * nb * 4;                                               \
    const int8_t *panel = tl->panels + (t / 4) * nb * 128;                                           \
    const int32_t *corrections = tl->negative_corrections + first;                                   \
    const float *scales = tl->activation_scales + first, *factors = tl->min_factors + first;         \
    __m256 f[4];                                                                                     \
    for (int r = 0; r < R; r++) f[r] = _mm256_setzero_ps();                                          \
    for (size_t b = 0; b < nb; b++) {                                                                \
        const uint8_t *tb = tl->codes + b * TILE_BLOCK_BYTES + 32 * h;                               \
        const int8_t *x = panel + b * 128;                                                           \
        __m256i s[4];                                                                                \
        for (int r = 0; r < R; r++) s[r] = NAME##_begin(bits, corrections[4 * b + (size_t)r]);       \
        UNROLL                                                                                       \
        for (size_t g = 0; g < 8; g++) {                                                             \
            group256 wg = NAME##_prepare(bits, _mm256_load_si256((const __m256i *)(tb + g * TILE_GROUP_BYTES))); \
            UNROLL                                                                                   \
            for (int r = 0; r < R; r++)                                                              \
                s[r] = NAME##_step(bits, s[r], wg, _mm256_set1_epi32(load_i32(x + 16 * g + 4 * (size_t)r))); \
        }                                                                                            \
        for (int r = 0; r < R; r++) s[r] = NAME##_end(bits, s[r], corrections[4 * b + (size_t)r]);   \
        if (p->acc) {                                                                                \
            for (int r = 0; r < R; r++) {                                                            \
                int32_t part[8];                                                                     \
                _mm256_storeu_si256((__m256i *)part, s[r]);                                          \
                store_integers(p, part, t + (size_t)r, j + 8 * h, min_size(8, count - 8 * h), b);    \
            }                                                                                        \
            continue;                                                                                \
        }                                                                                            \
        const __m256 d = _mm256_load_ps(tl->scales + b * TILE_COLUMNS + 8 * h);                      \
        for (int r = 0; r < R; r++)                                                                  \
            f[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s[r]),                                         \
                                   _mm256_mul_ps(d, _mm256_set1_ps(scales[4 * b + (size_t)r])), f[r]); \
        if (p->w->mins) {                                                                            \
            const __m256 m = _mm256_load_ps(tl->mins + b * TILE_COLUMNS + 8 * h);                    \
            for (int r = 0; r < R; r++)                                                              \
                f[r] = _mm256_fmadd_ps(m, _mm256_set1_ps(factors[4 * b + (size_t)r]), f[r]);         \
        }                                                                                            \
    }                                                                                                \
    if (p->acc) return;                                                                              \
    /* Kernel rows t … t + R − 1 are R / parts rows of the product (a panel holds whole rows). */    \
    const size_t parts = parts_of(p);                                                                \
    for (int r = 0; r < R; r += (int)parts)                                                          \
        store8(p, f + r, parts, (t + (size_t)r) / parts, j + 8 * h, min_size(8, count - 8 * h));     \
}                                                                                                    \
                                                                                                     \
__attribute__((target(TARGET)))                                                                      \
static int NAME##_run(const problem *p) {                                                            \
    const int bits = p->w->bits;                                                                     \
    const size_t m = p->a->rows;                                                                     \
    if (m < TILE_MIN_ROWS) {                                                                         \
        for (size_t t = 0; t < m; t++)                                                               \
            for (size_t j = p->j0; j < p->j1; j += 4) {                                              \
                const row_slots rows = slots_of(p, t, j, min_size(4, p->j1 - j));                    \
                STREAM_KINDS(NAME##_stream, p, t, &rows, bits);                                      \
            }                                                                                        \
        return 0;                                                                                    \
    }                                                                                                \
    tile tl;                                                                                         \
    void *memory = allocate_tile(p, 4, &tl);                                                         \
    if (!memory) return -1;                                                                          \
    const size_t rows = kernel_rows(p);                                                              \
    for (size_t j = p->j0; j < p->j1; j += TILE_COLUMNS) {                                           \
        size_t count = min_size(TILE_COLUMNS, p->j1 - j);                                            \
        build_tile(p, j, count, &tl);                                                                \
        for (size_t h = 0; h < 2 && 8 * h < count; h++)                                              \
            for (size_t t = 0; t < rows; t += 4) {                                                   \
                size_t R = min_size(4, rows - t);                                                    \
                WITH_ROWS4(NAME##_tile, R, bits, p, &tl, t, j, count, h)                             \
            }                                                                                        \
    }                                                                                                \
    free(memory);                                                                                    \
    return 0;                                                                                        \
}

DEFINE_256(avx2, T_AVX2)
DEFINE_256(avx_vnni, T_AVX_VNNI)
DEFINE_256(evex256, T_EVEX256)

// ---------------------------------------------------------------- AVX-512 VNNI: vpdpbusd, 512 bits

// The block sums' order after the add trees of vnni512_sums16: vector q of the four summed holds
// blocks 4q … 4q + 3 (block 4q + L in 128-bit lane L), and the tree leaves block 4q + L in lane
// 4L + q. This permutation (a 4 × 4 transpose, its own inverse) goes from one order to the other.
#define TRANSPOSE16 _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15)

// Four rows' sixteen-lane float sums → their four totals (lane r: row r).
__attribute__((target(T_512)))
INLINE __m128 hsum16x4(__m512 f0, __m512 f1, __m512 f2, __m512 f3) {
    // Per 128-bit lane: (f0: 0+2, f1: 0+2, f0: 1+3, f1: 1+3), then the four rows' lane totals;
    // then the four 128-bit lanes added.
    __m512 a01 = _mm512_add_ps(_mm512_unpacklo_ps(f0, f1), _mm512_unpackhi_ps(f0, f1));
    __m512 a23 = _mm512_add_ps(_mm512_unpacklo_ps(f2, f3), _mm512_unpackhi_ps(f2, f3));
    __m512 s = _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(a01), _mm512_castps_pd(a23))),
                             _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(a01), _mm512_castps_pd(a23))));
    __m256 high = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(s), 1));
    __m256 h = _mm256_add_ps(_mm512_castps512_ps256(s), high);
    return _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
}

__attribute__((target(T_512)))
INLINE __mmask16 mask16(size_t count) { return count >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << count) - 1); }

// Blocks b … b + blocks − 1 (blocks ≤ 4) of one weight row against row t of each part's
// activations (the weights loaded once for the parts): q[k], int32 lanes, block b + L's four
// partial sums for part k in 128-bit lane L (0 past `blocks`).
__attribute__((target(T_512)))
INLINE void vnni512_quad(const uint8_t *wrow, const uint8_t *whigh, const int8_t *const arows[2], size_t b,
                         size_t blocks, const size_t parts, const int bits, __m512i q[2]) {
    __m512i lo, hi;
    if (bits != 8) {
        const uint8_t *src = wrow + 16 * b;
        __m512i v = blocks == 4 ? _mm512_loadu_si512((const void *)src)
                                : _mm512_maskz_loadu_epi8((1ull << (16 * blocks)) - 1, src);
        const __m512i low = _mm512_set1_epi8(0x0F);
        lo = _mm512_and_si512(v, low);
        hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), low);
        if (bits == 5) {
            // The four blocks' fifth bits as two byte masks: bits 0–15 of each block for lo (its
            // 128-bit lane), bits 16–31 for hi.
            __m128i h;
            if (blocks == 4) {
                h = _mm_loadu_si128((const __m128i *)(whigh + 4 * b));
            } else {
                uint8_t part[16] = {0};
                memcpy(part, whigh + 4 * b, 4 * blocks);
                h = _mm_loadu_si128((const __m128i *)part);
            }
            const __m128i split = _mm_shuffle_epi8(h, _mm_setr_epi8(0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15));
            const __m512i sixteen = _mm512_set1_epi8(0x10);
            lo = _mm512_mask_add_epi8(lo, (__mmask64)(uint64_t)_mm_cvtsi128_si64(split), lo, sixteen);
            hi = _mm512_mask_add_epi8(hi, (__mmask64)(uint64_t)_mm_extract_epi64(split, 1), hi, sixteen);
        }
    } else {
        // v0: blocks b, b + 1 (elements 0–15, 16–31 of each); v1: blocks b + 2, b + 3.
        const uint8_t *src = wrow + 32 * b;
        __m512i v0 = blocks >= 2 ? _mm512_loadu_si512((const void *)src) : _mm512_maskz_loadu_epi8(0xFFFFFFFFull, src);
        __m512i v1 = blocks == 4 ? _mm512_loadu_si512((const void *)(src + 64))
                   : blocks == 3 ? _mm512_maskz_loadu_epi8(0xFFFFFFFFull, src + 64) : _mm512_setzero_si512();
        lo = _mm512_shuffle_i64x2(v0, v1, 0x88);
        hi = _mm512_shuffle_i64x2(v0, v1, 0xDD);
    }
    UNROLL
    for (size_t k = 0; k < parts; k++) {
        const int8_t *g = arows[k] + code_offset(b, 0);
        const __m512i x = _mm512_loadu_si512((const void *)g), y = _mm512_loadu_si512((const void *)(g + 64));
        q[k] = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), lo, x), hi, y);
    }
}

// Four vectors of int32 lanes, vector q holding four blocks (block L's four partial sums in
// 128-bit lane L), reduced to the sixteen block sums + adjust, in tree order: lane 4L + q holds
// vector q's block L (adjust in the same order).
__attribute__((target(T_512)))
INLINE __m512i tree16(__m512i q0, __m512i q1, __m512i q2, __m512i q3, __m512i adjust, const int bits) {
    if (bits == 4) {
        // 4-bit lanes (≤ 8·15·127 = 15,240) and their pair sums fit int16: a pack and a pair sum
        // halve two vectors in two instructions (the unpacks and add below take three).
        const __m512i ones = _mm512_set1_epi16(1);
        __m512i l01 = _mm512_madd_epi16(_mm512_packs_epi32(q0, q1), ones);
        __m512i l23 = _mm512_madd_epi16(_mm512_packs_epi32(q2, q3), ones);
        return _mm512_dpwssd_epi32(adjust, _mm512_packs_epi32(l01, l23), ones);
    }
    // Per 128-bit lane: (q0: 0+2, q1: 0+2, q0: 1+3, q1: 1+3), then (q0, q1, q2, q3) totals.
    __m512i a01 = _mm512_add_epi32(_mm512_unpacklo_epi32(q0, q1), _mm512_unpackhi_epi32(q0, q1));
    __m512i a23 = _mm512_add_epi32(_mm512_unpacklo_epi32(q2, q3), _mm512_unpackhi_epi32(q2, q3));
    return _mm512_add_epi32(_mm512_add_epi32(_mm512_unpacklo_epi64(a01, a23), _mm512_unpackhi_epi64(a01, a23)), adjust);
}

// Blocks b0 … b0 + 15 of one weight row against each part: s[k], the sixteen exact sums
// Σ u·a + adjust[k] (adjust in tree order) in block order.
__attribute__((target(T_512)))
INLINE void vnni512_sums16(const uint8_t *wrow, const uint8_t *whigh, const int8_t *const arows[2], size_t b0,
                           const __m512i adjust[2], const size_t parts, const int bits, __m512i s[2]) {
    __m512i q[2][4];
    UNROLL
    for (size_t i = 0; i < 4; i++) {
        __m512i pq[2];
        vnni512_quad(wrow, whigh, arows, b0 + 4 * i, 4, parts, bits, pq);
        UNROLL
        for (size_t k = 0; k < parts; k++) q[k][i] = pq[k];
    }
    UNROLL
    for (size_t k = 0; k < parts; k++)
        s[k] = _mm512_permutexvar_epi32(TRANSPOSE16, tree16(q[k][0], q[k][1], q[k][2], q[k][3], adjust[k], bits));
}

// Lanes 4r … 4r + count − 1 (count ≤ 4) of a 16-lane vector from rows[r][b …] (r = 0 … 3); the
// other lanes 0. Each masked load addresses its row 4r elements early, so that its elements land
// in lanes 4r …; the lanes outside the mask are not read (AVX-512 masked loads suppress their
// faults), and the address is formed as an integer, since it may lie before the array.
__attribute__((target(T_512)))
INLINE __m256i rows_halves4(const uint16_t *const rows[4], size_t b, size_t count) {
    const __mmask32 first = (__mmask32)((1u << count) - 1);
    __m512i v = _mm512_setzero_si512();
    for (size_t r = 0; r < 4; r++)
        v = _mm512_mask_loadu_epi16(v, first << (4 * r), (const void *)((uintptr_t)(rows[r] + b) - 8 * r));
    return _mm512_castsi512_si256(v);
}

// The tail of four rows: blocks bt … nb − 1 (fewer than 16) of the four rows and row t of each
// part's activations, four blocks at a time across the rows, so that one add tree and one float
// step serve four rows. Gives each part's float sums (lane r: row r), or writes the integers.
__attribute__((target(T_512)))
INLINE void vnni512_tail4(const problem *p, size_t t, const row_slots *rows, size_t bt, const size_t parts,
                          const int integers, const int bits, __m128 out[2]) {
    const size_t nb = p->nb;
    const row_parts act = parts_of_row(p, t, parts);
    const int8_t *const *arows = act.codes;
    const float *const *da = act.scales;
    const int32_t *const *sa = act.sums;
    // Lane 4L + r of the adjust takes block L's correction; lane 4r + L of the scales takes block L's.
    const __m512i spread = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
    __m512 f[2] = {_mm512_setzero_ps(), _mm512_setzero_ps()};
    for (size_t b = bt; b < nb; b += 4) {
        const size_t blocks = min_size(4, nb - b);
        __m512i q[2][4];
        UNROLL
        for (size_t r = 0; r < 4; r++) {
            __m512i pq[2];
            vnni512_quad(rows->codes[r], rows->high[r], arows, b, blocks, parts, bits, pq);
            UNROLL
            for (size_t k = 0; k < parts; k++) q[k][r] = pq[k];
        }
        UNROLL
        for (size_t k = 0; k < parts; k++) {
            const __m512i sums = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)(sa[k] + b)));
            const __m512i adjust =
                _mm512_permutexvar_epi32(spread, _mm512_mullo_epi32(_mm512_set1_epi32(-p->zero), sums));
            // Tree lane 4L + r (row r, block b + L) → lane 4r + L.
            const __m512i s =
                _mm512_permutexvar_epi32(TRANSPOSE16, tree16(q[k][0], q[k][1], q[k][2], q[k][3], adjust, bits));
            if (integers) {
                for (size_t r = 0; r < 4; r++)
                    if (rows->acc[r])
                        _mm512_mask_storeu_epi32((void *)((uintptr_t)(rows->acc[r] + b) - 16 * r),
                                                 (__mmask16)(((1u << blocks) - 1) << (4 * r)), s);
                continue;
            }
            const __m512 scales = _mm512_broadcast_f32x4(_mm_loadu_ps(da[k] + b));
            const __m512 d = _mm512_cvtph_ps(rows_halves4(rows->scales, b, blocks));
            f[k] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), _mm512_mul_ps(d, scales), f[k]);
            if (rows->mins[0]) {
                const __m512 factors = _mm512_mul_ps(scales, _mm512_cvtepi32_ps(sums));
                f[k] = _mm512_fmadd_ps(_mm512_cvtph_ps(rows_halves4(rows->mins, b, blocks)), factors, f[k]);
            }
        }
    }
    // Each row's lanes are one 128-bit lane: add within lanes, then take lane 0 of each.
    const __m512i firsts = _mm512_setr_epi32(0, 4, 8, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
    for (size_t k = 0; k < parts; k++) {
        __m512 v = _mm512_add_ps(f[k], _mm512_permute_ps(f[k], 0x4E));
        v = _mm512_add_ps(v, _mm512_permute_ps(v, 0xB1));
        out[k] = _mm512_castps512_ps128(_mm512_permutexvar_ps(firsts, v));
    }
}

// x: [1, k] (row t, each part) · W[four rows, k]ᵀ, sixteen blocks per step; each weight byte read
// once. The last (partial) step runs across the rows (vnni512_tail4).
__attribute__((target(T_512)))
INLINE void vnni512_stream(const problem *p, size_t t, const row_slots *rows, const size_t parts, const int integers,
                           const int bits) {
    const size_t nb = p->nb, whole = nb / 16 * 16;
    const row_parts act = parts_of_row(p, t, parts);
    const int8_t *const *arows = act.codes;
    const float *const *da = act.scales;
    const int32_t *const *sa = act.sums;
    const __m512i zero = _mm512_set1_epi32(-p->zero);
    __m512 f[2][4];
    for (size_t k = 0; k < parts; k++)
        for (size_t r = 0; r < 4; r++) f[k][r] = _mm512_setzero_ps();
    for (size_t b0 = 0; b0 < whole; b0 += 16) {
        __m512i adjust[2];
        __m512 scales[2], factors[2];
        UNROLL
        for (size_t k = 0; k < parts; k++) {
            const __m512i sums = _mm512_loadu_si512((const void *)(sa[k] + b0));
            adjust[k] = _mm512_permutexvar_epi32(TRANSPOSE16, _mm512_mullo_epi32(zero, sums));
            scales[k] = _mm512_loadu_ps(da[k] + b0);
            factors[k] = _mm512_mul_ps(scales[k], _mm512_cvtepi32_ps(sums));
        }
        UNROLL
        for (size_t r = 0; r < 4; r++) {
            prefetch_blocks(p, rows->first + r + PREFETCH_ROWS, b0, b0 + 16 == whole ? nb : b0 + 16);
            __m512i s[2];
            vnni512_sums16(rows->codes[r], rows->high[r], arows, b0, adjust, parts, bits, s);
            UNROLL
            for (size_t k = 0; k < parts; k++) {
                if (integers) {
                    if (rows->acc[r]) _mm512_storeu_si512((void *)(rows->acc[r] + b0), s[k]);
                    continue;
                }
                const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(rows->scales[r] + b0)));
                f[k][r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s[k]), _mm512_mul_ps(d, scales[k]), f[k][r]);
                if (rows->mins[r]) {
                    const __m512 m = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(rows->mins[r] + b0)));
                    f[k][r] = _mm512_fmadd_ps(m, factors[k], f[k][r]);
                }
            }
        }
    }
    if (whole == 0)
        for (size_t r = 0; r < 4; r++) prefetch_blocks(p, rows->first + r + PREFETCH_ROWS, 0, nb);
    __m128 tail[2] = {_mm_setzero_ps(), _mm_setzero_ps()};
    if (whole < nb) vnni512_tail4(p, t, rows, whole, parts, integers, bits, tail);
    if (integers) return;
    __m128 sums[2];
    for (size_t k = 0; k < parts; k++) sums[k] = _mm_add_ps(hsum16x4(f[k][0], f[k][1], f[k][2], f[k][3]), tail[k]);
    finish4(p, t, rows->first, rows->valid, sums, parts);
}

// x: [R, k] (kernel rows t … t + R − 1, a panel of 8) · tile (columns j … j + count − 1)ᵀ: one
// register of 16 columns per row, 8 vpdpbusd per block, then the block's float step.
__attribute__((target(T_512)))
INLINE void vnni512_tile(const problem *p, const tile *tl, size_t t, size_t j, size_t count, const int R,
                         const int bits) {
    (void)bits;
    const size_t nb = p->nb, first = (t / 8) * nb * 8;
    const int8_t *panel = tl->panels + (t / 8) * nb * 256;
    const int32_t *corrections = tl->negative_corrections + first;
    const float *scales = tl->activation_scales + first, *factors = tl->min_factors + first;
    __m512 f[8];
    for (int r = 0; r < R; r++) f[r] = _mm512_setzero_ps();
    for (size_t b = 0; b < nb; b++) {
        const uint8_t *tb = tl->codes + b * TILE_BLOCK_BYTES;
        const int8_t *x = panel + b * 256;
        __m512i s[8];
        for (int r = 0; r < R; r++) s[r] = _mm512_set1_epi32(corrections[8 * b + (size_t)r]);
        UNROLL
        for (size_t g = 0; g < 8; g++) {
            const __m512i wg = _mm512_load_si512((const void *)(tb + g * TILE_GROUP_BYTES));
            UNROLL
            for (int r = 0; r < R; r++)
                s[r] = _mm512_dpbusd_epi32(s[r], wg, _mm512_set1_epi32(load_i32(x + 32 * g + 4 * (size_t)r)));
        }
        if (p->acc) {
            for (int r = 0; r < R; r++) {
                int32_t part[16];
                _mm512_storeu_si512((void *)part, s[r]);
                store_integers(p, part, t + (size_t)r, j, count, b);
            }
            continue;
        }
        const __m512 d = _mm512_load_ps(tl->scales + b * TILE_COLUMNS);
        for (int r = 0; r < R; r++) {
            const __m512 ds = _mm512_mul_ps(d, _mm512_set1_ps(scales[8 * b + (size_t)r]));
            f[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s[r]), ds, f[r]);
        }
        if (p->w->mins) {
            const __m512 m = _mm512_load_ps(tl->mins + b * TILE_COLUMNS);
            for (int r = 0; r < R; r++) f[r] = _mm512_fmadd_ps(m, _mm512_set1_ps(factors[8 * b + (size_t)r]), f[r]);
        }
    }
    if (p->acc) return;
    // Kernel rows t … t + R − 1 are R / parts rows of the product (finish_parts' order).
    const __mmask16 valid = mask16(count);
    const size_t parts = parts_of(p);
    for (int r = 0; r < R; r += (int)parts) {
        float *y = p->c + (t + (size_t)r) / parts * p->ldc + j;
        __m512 v = f[r];
        if (p->bias) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(valid, p->bias + j));
        if (p->accumulate) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(valid, y));
        if (parts == 2 && r + 1 < R) v = _mm512_add_ps(f[r + 1], v);
        _mm512_mask_storeu_ps(y, valid, v);
    }
}

__attribute__((target(T_512)))
static int vnni512_run(const problem *p) {
    const int bits = p->w->bits;
    const size_t m = p->a->rows;
    if (m < TILE_MIN_ROWS) {
        for (size_t t = 0; t < m; t++)
            for (size_t j = p->j0; j < p->j1; j += 4) {
                const row_slots rows = slots_of(p, t, j, min_size(4, p->j1 - j));
                STREAM_KINDS(vnni512_stream, p, t, &rows, bits);
            }
        return 0;
    }
    tile tl;
    void *memory = allocate_tile(p, 8, &tl);
    if (!memory) return -1;
    const size_t rows = kernel_rows(p);
    for (size_t j = p->j0; j < p->j1; j += TILE_COLUMNS) {
        size_t count = min_size(TILE_COLUMNS, p->j1 - j);
        build_tile(p, j, count, &tl);
        for (size_t t = 0; t < rows; t += 8) {
            size_t R = min_size(8, rows - t);
            WITH_ROWS8(vnni512_tile, R, bits, p, &tl, t, j, count)
        }
    }
    free(memory);
    return 0;
}

#define HAVE_VECTOR_PATHS 1
#else
#define HAVE_VECTOR_PATHS 0
#endif

// ---------------------------------------------------------------- dispatch

#if HAVE_VECTOR_PATHS
// The 256-bit paths also need FMA and F16C, which int8gemm's detection does not check (every
// CPU with AVX2 so far has both); without them they run the generic code, whose integers are
// the same. Detected once, by whichever thread gets there first (each computes the same value).
static _Atomic int fma_f16c = -1;

static int has_fma_f16c(void) {
    int known = atomic_load_explicit(&fma_f16c, memory_order_relaxed);
    if (known < 0) {
        ce_cpu_facts facts;
        known = ce_cpu_read(&facts) && facts.fma && facts.f16c;
        atomic_store_explicit(&fma_f16c, known, memory_order_relaxed);
    }
    return known;
}
#endif

// The path to run (CE_GEMM_BEST: int8gemm's default, forced or fastest), or −1 when `path` is
// unknown or not available here.
static int resolve(int path) {
    if (path == CE_GEMM_BEST) return ce_gemm_best_path();
    if (path < CE_GEMM_GENERIC || path > CE_GEMM_AVX512_VNNI_256) return -1;
    return (ce_gemm_paths() & (1 << path)) ? path : -1;
}

int ce_block_quantize(const float *x, size_t m, size_t k, size_t ldx, int8_t *codes, float *scales,
                      int32_t *sums, int path) {
    path = resolve(path);
    if (path < 0) return -1;
#if HAVE_VECTOR_PATHS
    if (path != CE_GEMM_GENERIC && has_fma_f16c()) {
        quantize_avx2(x, m, k, ldx, codes, scales, sums);
        return 0;
    }
#endif
    quantize_generic(x, m, k, ldx, codes, scales, sums);
    return 0;
}

void ce_block_residual(const float *x, size_t m, size_t k, size_t ldx, const int8_t *codes, const float *scales,
                       float *r, size_t ldr) {
    size_t nb = k / BLOCK, cs = ce_block_code_stride(k), bs = ce_block_block_stride(k);
    for (size_t t = 0; t < m; t++) {
        const int8_t *row = codes + t * cs;
        for (size_t b = 0; b < nb; b++) {
            float d = scales[t * bs + b];
            const float *v = x + t * ldx + b * BLOCK;
            float *out = r + t * ldr + b * BLOCK;
            for (size_t i = 0; i < BLOCK; i++) out[i] = v[i] - d * (float)row[code_offset(b, i)];
        }
    }
}

static int run(problem *p, int path) {
    if (p->a->rows == 0 || p->j0 >= p->j1) return 0;
    int status = -1;
#if HAVE_VECTOR_PATHS
    if (p->nb > 0) {
        switch (path) {
        case CE_GEMM_AVX512_VNNI: status = vnni512_run(p); break;
        case CE_GEMM_AVX512_VNNI_256: status = evex256_run(p); break;
        case CE_GEMM_AVX_VNNI:
            if (has_fma_f16c()) status = avx_vnni_run(p);
            break;
        case CE_GEMM_AVX2:
            if (has_fma_f16c()) {
                problem shifted = *p;
                if (p->w->bits != 4) shifted.zero = p->zero - 128;  // its sums are Σ (u − 128)·a
                status = avx2_run(&shifted);
            }
            break;
        default: break;
        }
    }
#else
    (void)path;
#endif
    // The generic path, or the fallback when a tile could not be allocated: the same integers.
    if (status != 0) gemm_generic(p);
    return 0;
}

static problem make_problem(const ce_block_matrix *w, const ce_block_rows *a, size_t j0, size_t j1) {
    problem p = {
        .w = w, .a = a, .j0 = j0, .j1 = j1, .nb = w->columns / BLOCK,
        .code_stride = ce_block_code_stride(w->columns), .block_stride = ce_block_block_stride(w->columns),
        .row_bytes = w->bits == 8 ? w->columns : w->columns / 2, .high_bytes = w->bits == 5 ? w->columns / 8 : 0,
        .zero = w->zero_point,
    };
    return p;
}

int ce_block_gemm_s32(const ce_block_matrix *w, const ce_block_rows *a, size_t j0, size_t j1, int32_t *acc, int path) {
    path = resolve(path);
    if (path < 0) return -1;
    problem p = make_problem(w, a, j0, j1);
    p.acc = acc;
    return run(&p, path);
}

int ce_block_gemm_f32(const ce_block_matrix *w, const ce_block_rows *a, size_t j0, size_t j1, const float *bias,
                      float *c, size_t ldc, int accumulate, int path) {
    path = resolve(path);
    if (path < 0) return -1;
    problem p = make_problem(w, a, j0, j1);
    p.bias = bias;
    p.c = c;
    p.ldc = ldc;
    p.accumulate = accumulate;
    return run(&p, path);
}

int ce_block_gemm_two_part_f32(const ce_block_matrix *w, const ce_block_rows *coarse, const ce_block_rows *residual,
                               size_t j0, size_t j1, const float *bias, float *c, size_t ldc, int accumulate, int path) {
    path = resolve(path);
    if (path < 0) return -1;
    problem p = make_problem(w, coarse, j0, j1);
    p.residual = residual;
    p.bias = bias;
    p.c = c;
    p.ldc = ldc;
    p.accumulate = accumulate;
    return run(&p, path);
}
