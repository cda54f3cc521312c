#include "codes.h"
#include <stdatomic.h>
#include <string.h>

// ---------------------------------------------------------------- generic

static void u8s8_generic(const uint8_t *codes, size_t rows, size_t dim, const int8_t *q, int32_t *out) {
    for (size_t r = 0; r < rows; r++) {
        const uint8_t *c = codes + r * dim;
        int32_t sum = 0;
        for (size_t j = 0; j < dim; j++) sum += (int32_t)c[j] * (int32_t)q[j];
        out[r] = sum;
    }
}

static inline uint32_t popcount_portable(uint64_t x) {
    x = x - ((x >> 1) & 0x5555555555555555ull);
    x = (x & 0x3333333333333333ull) + ((x >> 2) & 0x3333333333333333ull);
    x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0Full;
    return (uint32_t)((x * 0x0101010101010101ull) >> 56);
}

static void hamming_generic(const uint64_t *codes, size_t rows, size_t words, const uint64_t *q, uint32_t *out) {
    for (size_t r = 0; r < rows; r++) {
        const uint64_t *c = codes + r * words;
        uint32_t sum = 0;
        for (size_t w = 0; w < words; w++) sum += popcount_portable(c[w] ^ q[w]);
        out[r] = sum;
    }
}

#if defined(__x86_64__) && defined(__clang__)
#include <immintrin.h>

// ---------------------------------------------------------------- AVX2: vpmaddubsw + vpmaddwd

__attribute__((target("avx2")))
static inline int32_t sum_epi32_avx2(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
    return _mm_cvtsi128_si32(s);
}

__attribute__((target("avx2")))
static void u8s8_avx2(const uint8_t *codes, size_t rows, size_t dim, const int8_t *q, int32_t *out) {
    const __m256i ones = _mm256_set1_epi16(1);
    size_t vectorized = dim / 32 * 32;
    size_t r = 0;
    // Two rows per pass: each query block is loaded once for both.
    for (; r + 2 <= rows; r += 2) {
        const uint8_t *c0 = codes + r * dim, *c1 = c0 + dim;
        __m256i a0 = _mm256_setzero_si256(), a1 = _mm256_setzero_si256();
        for (size_t j = 0; j < vectorized; j += 32) {
            __m256i b = _mm256_loadu_si256((const __m256i *)(q + j));
            __m256i x0 = _mm256_loadu_si256((const __m256i *)(c0 + j));
            __m256i x1 = _mm256_loadu_si256((const __m256i *)(c1 + j));
            a0 = _mm256_add_epi32(a0, _mm256_madd_epi16(_mm256_maddubs_epi16(x0, b), ones));
            a1 = _mm256_add_epi32(a1, _mm256_madd_epi16(_mm256_maddubs_epi16(x1, b), ones));
        }
        int32_t s0 = sum_epi32_avx2(a0), s1 = sum_epi32_avx2(a1);
        for (size_t j = vectorized; j < dim; j++) {
            s0 += (int32_t)c0[j] * (int32_t)q[j];
            s1 += (int32_t)c1[j] * (int32_t)q[j];
        }
        out[r] = s0;
        out[r + 1] = s1;
    }
    if (r < rows) u8s8_generic(codes + r * dim, rows - r, dim, q, out + r);
}

// ---------------------------------------------------------------- AVX-512 VNNI: vpdpbusd

__attribute__((target("avx512f,avx512bw,avx512vnni")))
static void u8s8_vnni(const uint8_t *codes, size_t rows, size_t dim, const int8_t *q, int32_t *out) {
    size_t vectorized = dim / 64 * 64;
    size_t r = 0;
    for (; r + 2 <= rows; r += 2) {
        const uint8_t *c0 = codes + r * dim, *c1 = c0 + dim;
        __m512i a0 = _mm512_setzero_si512(), a1 = _mm512_setzero_si512();
        for (size_t j = 0; j < vectorized; j += 64) {
            __m512i b = _mm512_loadu_si512((const void *)(q + j));
            a0 = _mm512_dpbusd_epi32(a0, _mm512_loadu_si512((const void *)(c0 + j)), b);
            a1 = _mm512_dpbusd_epi32(a1, _mm512_loadu_si512((const void *)(c1 + j)), b);
        }
        int32_t s0 = _mm512_reduce_add_epi32(a0), s1 = _mm512_reduce_add_epi32(a1);
        for (size_t j = vectorized; j < dim; j++) {
            s0 += (int32_t)c0[j] * (int32_t)q[j];
            s1 += (int32_t)c1[j] * (int32_t)q[j];
        }
        out[r] = s0;
        out[r + 1] = s1;
    }
    if (r < rows) u8s8_generic(codes + r * dim, rows - r, dim, q, out + r);
}

// ---------------------------------------------------------------- popcnt

__attribute__((target("popcnt")))
static void hamming_popcnt(const uint64_t *codes, size_t rows, size_t words, const uint64_t *q, uint32_t *out) {
    for (size_t r = 0; r < rows; r++) {
        const uint64_t *c = codes + r * words;
        uint64_t sum = 0;
        for (size_t w = 0; w < words; w++) sum += (uint64_t)__builtin_popcountll(c[w] ^ q[w]);
        out[r] = (uint32_t)sum;
    }
}

static int detect_int8_paths(void) {
    __builtin_cpu_init();
    int paths = 1 << CE_PATH_GENERIC;
    if (__builtin_cpu_supports("avx2")) paths |= 1 << CE_PATH_AVX2;
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vnni"))
        paths |= 1 << CE_PATH_AVX512_VNNI;
    return paths;
}

static int detect_hamming_paths(void) {
    __builtin_cpu_init();
    int paths = 1 << CE_PATH_GENERIC;
    if (__builtin_cpu_supports("popcnt")) paths |= 1 << CE_PATH_POPCNT;
    return paths;
}
#else
#define u8s8_avx2 u8s8_generic
#define u8s8_vnni u8s8_generic
#define hamming_popcnt hamming_generic
static int detect_int8_paths(void) { return 1 << CE_PATH_GENERIC; }
static int detect_hamming_paths(void) { return 1 << CE_PATH_GENERIC; }
#endif

// Detected on first use by whichever scan worker gets there first: atomics, so concurrent first
// calls are not a data race (each computes the same value; relaxed order suffices for one int).
static _Atomic int int8_paths = -1, hamming_paths = -1;

int ce_int8_paths(void) {
    int paths = atomic_load_explicit(&int8_paths, memory_order_relaxed);
    if (paths < 0) {
        paths = detect_int8_paths();
        atomic_store_explicit(&int8_paths, paths, memory_order_relaxed);
    }
    return paths;
}

int ce_hamming_paths(void) {
    int paths = atomic_load_explicit(&hamming_paths, memory_order_relaxed);
    if (paths < 0) {
        paths = detect_hamming_paths();
        atomic_store_explicit(&hamming_paths, paths, memory_order_relaxed);
    }
    return paths;
}

int ce_u8s8_dot_rows(const uint8_t *codes, size_t rows, size_t dim, const int8_t *query, int32_t *out, int path) {
    int available = ce_int8_paths();
    if (path == CE_PATH_BEST) {
        path = (available & (1 << CE_PATH_AVX512_VNNI)) ? CE_PATH_AVX512_VNNI
             : (available & (1 << CE_PATH_AVX2)) ? CE_PATH_AVX2 : CE_PATH_GENERIC;
    }
    if (path < 0 || path > CE_PATH_AVX512_VNNI || !(available & (1 << path))) return -1;
    switch (path) {
    case CE_PATH_AVX512_VNNI: u8s8_vnni(codes, rows, dim, query, out); break;
    case CE_PATH_AVX2: u8s8_avx2(codes, rows, dim, query, out); break;
    default: u8s8_generic(codes, rows, dim, query, out); break;
    }
    return 0;
}

int ce_hamming_rows(const uint64_t *codes, size_t rows, size_t words, const uint64_t *query, uint32_t *out, int path) {
    int available = ce_hamming_paths();
    if (path == CE_PATH_BEST) path = (available & (1 << CE_PATH_POPCNT)) ? CE_PATH_POPCNT : CE_PATH_GENERIC;
    if (path != CE_PATH_GENERIC && path != CE_PATH_POPCNT) return -1;
    if (!(available & (1 << path))) return -1;
    if (path == CE_PATH_POPCNT) hamming_popcnt(codes, rows, words, query, out);
    else hamming_generic(codes, rows, words, query, out);
    return 0;
}
