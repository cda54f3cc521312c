#include "ckernels.h"
#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

// The bodies are written once as static inline scalar code that clang auto-vectorizes; each
// public kernel is instantiated twice: a baseline copy and one compiled for AVX2 + FMA.

static inline float bits_to_float(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static inline uint32_t float_to_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }

// e^x, x finite and ≤ 88: x = n·ln2 + r, degree-7 Taylor polynomial for e^r, 2^n from bits.
static inline float exp_core(float x) {
    x = x < -87.3f ? -87.3f : x;
    const float magic = 12582912.0f;  // 1.5·2^23: rounds to an integer held in the low bits
    float shifted = x * 1.44269504f + magic;
    float n = shifted - magic;
    float r = x - n * 0.69314575f;
    r = r - n * 1.4286068e-6f;
    float p = 1.0f / 5040;
    p = p * r + 1.0f / 720;
    p = p * r + 1.0f / 120;
    p = p * r + 1.0f / 24;
    p = p * r + 1.0f / 6;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    int32_t ni = (int32_t)(float_to_bits(shifted) - float_to_bits(magic));
    return p * bits_to_float((uint32_t)(ni + 127) << 23);
}

// 1 + erf(u): erfc(a) = e^(−a²)·R(t), t = 1/(1 + a/2), R a degree-10 fit (this project's own,
// Chebyshev least squares on [0, 9.5], float32 error below 3e-7 relative).
static inline float one_plus_erf(float u) {
    float a = fabsf(u);
    float t = 1.0f / (1.0f + 0.5f * a);
    float r = 0.035221845f;
    r = r * t - 0.25272012f;
    r = r * t + 0.7479685f;
    r = r * t - 1.1209732f;
    r = r * t + 0.8251454f;
    r = r * t - 0.33720264f;
    r = r * t + 0.31982768f;
    r = r * t + 0.21417494f;
    r = r * t + 0.2868472f;
    r = r * t + 0.28169566f;
    r = r * t + 1.4674401e-05f;
    float erfc = exp_core(-(a * a)) * r;
    return u >= 0 ? 2.0f - erfc : erfc;
}

#define DEFINE_KERNELS(SUFFIX, ATTRIBUTE)                                                        \
    ATTRIBUTE static void exp_finite_##SUFFIX(float *x, size_t count) {                          \
        for (size_t i = 0; i < count; i++) x[i] = exp_core(x[i]);                                \
    }                                                                                            \
    ATTRIBUTE static void gelu_##SUFFIX(float *x, size_t count) {                                \
        for (size_t i = 0; i < count; i++) {                                                     \
            float v = x[i];                                                                      \
            x[i] = v != v ? v : 0.5f * v * one_plus_erf(v * 0.70710678f);                        \
        }                                                                                        \
    }                                                                                            \
    ATTRIBUTE static void softmax_rows_##SUFFIX(float *x, size_t rows, size_t columns, float scale) { \
        /* Reductions use 8 explicit lanes: without fast-math the compiler may not reorder a   \
           single running max or sum, which would keep those loops scalar. */                  \
        for (size_t row = 0; row < rows; row++) {                                                \
            float *r = x + row * columns;                                                        \
            float lanes[8] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY,                        \
                              -INFINITY, -INFINITY, -INFINITY, -INFINITY};                       \
            size_t j = 0;                                                                        \
            for (; j + 8 <= columns; j += 8)                                                     \
                for (int k = 0; k < 8; k++) lanes[k] = r[j + k] > lanes[k] ? r[j + k] : lanes[k]; \
            float maximum = -INFINITY;                                                           \
            for (int k = 0; k < 8; k++) maximum = lanes[k] > maximum ? lanes[k] : maximum;       \
            for (; j < columns; j++) maximum = r[j] > maximum ? r[j] : maximum;                  \
            float shift = maximum * scale;                                                       \
            for (j = 0; j < columns; j++) r[j] = exp_core(r[j] * scale - shift);                 \
            float sums[8] = {0, 0, 0, 0, 0, 0, 0, 0};                                            \
            for (j = 0; j + 8 <= columns; j += 8)                                                \
                for (int k = 0; k < 8; k++) sums[k] += r[j + k];                                 \
            float sum = 0;                                                                       \
            for (int k = 0; k < 8; k++) sum += sums[k];                                          \
            for (; j < columns; j++) sum += r[j];                                                \
            float inverse = 1.0f / sum;                                                          \
            for (j = 0; j < columns; j++) r[j] *= inverse;                                       \
        }                                                                                        \
    }                                                                                            \
    ATTRIBUTE static void dot_rows_##SUFFIX(const float *m, size_t rows, size_t columns,          \
                                            const float *q, float *out) {                        \
        for (size_t i = 0; i < rows; i++) {                                                      \
            const float *r = m + i * columns;                                                    \
            float lanes[16] = {0};                                                               \
            size_t j = 0;                                                                        \
            for (; j + 16 <= columns; j += 16)                                                   \
                for (int k = 0; k < 16; k++) lanes[k] += r[j + k] * q[j + k];                    \
            float sum = 0;                                                                       \
            for (int k = 0; k < 16; k++) sum += lanes[k];                                        \
            for (; j < columns; j++) sum += r[j] * q[j];                                         \
            out[i] = sum;                                                                        \
        }                                                                                        \
    }                                                                                            \
    ATTRIBUTE static void column_sum_##SUFFIX(const float *m, size_t rows, size_t columns,       \
                                              const float *w, float scale, float *out) {         \
        for (size_t j = 0; j < columns; j++) out[j] = 0;                                         \
        size_t i = 0;                                                                            \
        /* Four rows per pass: one load and store of `out` per four rows read. */                \
        for (; i + 4 <= rows; i += 4) {                                                          \
            const float *r0 = m + i * columns, *r1 = r0 + columns, *r2 = r1 + columns, *r3 = r2 + columns; \
            float w0 = w ? w[i] : 1.0f, w1 = w ? w[i + 1] : 1.0f;                                \
            float w2 = w ? w[i + 2] : 1.0f, w3 = w ? w[i + 3] : 1.0f;                            \
            for (size_t j = 0; j < columns; j++)                                                 \
                out[j] += w0 * r0[j] + w1 * r1[j] + w2 * r2[j] + w3 * r3[j];                     \
        }                                                                                        \
        for (; i < rows; i++) {                                                                  \
            const float *r = m + i * columns;                                                    \
            float wi = w ? w[i] : 1.0f;                                                          \
            for (size_t j = 0; j < columns; j++) out[j] += wi * r[j];                            \
        }                                                                                        \
        for (size_t j = 0; j < columns; j++) out[j] *= scale;                                    \
    }

DEFINE_KERNELS(generic, )

#if defined(__x86_64__) && defined(__clang__)
DEFINE_KERNELS(avx2, __attribute__((target("avx2,fma"))))

static int detect_avx2(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}
#define HAVE_AVX2 detect_avx2()
#else
#define exp_finite_avx2 exp_finite_generic
#define gelu_avx2 gelu_generic
#define softmax_rows_avx2 softmax_rows_generic
#define column_sum_avx2 column_sum_generic
#define dot_rows_avx2 dot_rows_generic
#define HAVE_AVX2 0
#endif

// -1 until first use. Atomic: every worker thread calls ce_uses_avx2, and tests flip it with
// ce_force_generic; the first-use store only replaces -1, so it never undoes a forced choice.
static _Atomic int uses_avx2 = -1;

int ce_uses_avx2(void) {
    int current = atomic_load_explicit(&uses_avx2, memory_order_relaxed);
    if (current < 0) {
        int detected = HAVE_AVX2;
        if (atomic_compare_exchange_strong_explicit(&uses_avx2, &current, detected, memory_order_relaxed, memory_order_relaxed))
            current = detected;
    }
    return current;
}

void ce_force_generic(int on) {
    atomic_store_explicit(&uses_avx2, on ? 0 : HAVE_AVX2, memory_order_relaxed);
}

void ce_exp_finite(float *x, size_t count) {
    if (ce_uses_avx2()) exp_finite_avx2(x, count); else exp_finite_generic(x, count);
}

void ce_gelu(float *x, size_t count) {
    if (ce_uses_avx2()) gelu_avx2(x, count); else gelu_generic(x, count);
}

void ce_softmax_rows(float *x, size_t rows, size_t columns, float scale) {
    if (ce_uses_avx2()) softmax_rows_avx2(x, rows, columns, scale); else softmax_rows_generic(x, rows, columns, scale);
}

void ce_weighted_column_sum(const float *m, size_t rows, size_t columns, const float *w, float scale, float *out) {
    if (ce_uses_avx2()) column_sum_avx2(m, rows, columns, w, scale, out); else column_sum_generic(m, rows, columns, w, scale, out);
}

void ce_dot_rows(const float *m, size_t rows, size_t columns, const float *q, float *out) {
    if (ce_uses_avx2()) dot_rows_avx2(m, rows, columns, q, out); else dot_rows_generic(m, rows, columns, q, out);
}
