// IEEE binary16 ↔ float32: the package's one pair of conversions, for the C kernels and for Swift
// (LinearAlgebra's `HalfFloat`, the GGUF reader), so that every reader and writer of float16 scales
// and weights gets the same values. Header-only (static inline): Swift inlines the calls.
#ifndef CKERNELS_HALF_H
#define CKERNELS_HALF_H

#include <stdint.h>
#include <string.h>

/// The float32 value of the binary16 bit pattern `h`, exactly: zeros keep their sign, subnormals
/// become normal floats, infinities stay infinite, a NaN keeps its sign and payload (shifted into
/// the float's mantissa), as numpy and ggml convert them.
static inline float ce_float_from_half(uint16_t h) {
    uint32_t sign = (uint32_t)(h >> 15) << 31, exponent = (h >> 10) & 0x1Fu, mantissa = h & 0x3FFu, bits;
    if (exponent == 0) {
        float magnitude = (float)mantissa * 0x1p-24f;  // zero or subnormal: exact
        memcpy(&bits, &magnitude, 4);
        bits |= sign;
    } else if (exponent == 31) {
        bits = sign | 0x7F800000u | (mantissa << 13);
    } else {
        bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
    }
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

/// `value` rounded to the nearest binary16 (ties to even), as a bit pattern: ±infinity from
/// 65,520 up, a quiet NaN for NaN.
static inline uint16_t ce_half_from_float(float value) {
    uint32_t bits;
    memcpy(&bits, &value, 4);
    uint16_t sign = (uint16_t)(bits >> 16) & 0x8000u;
    uint32_t magnitude = bits & 0x7FFFFFFFu;
    if (magnitude > 0x7F800000u) return sign | 0x7E00u;
    if (magnitude >= 0x477FF000u) return sign | 0x7C00u;  // ≥ 65,520 (and infinity)
    if (magnitude < 0x38800000u) {
        // Below 2⁻¹⁴: a multiple of 2⁻²⁴ (scaling by 2²⁴ is exact); 1,024 is the smallest normal's pattern.
        float small;
        memcpy(&small, &magnitude, 4);
        return sign | (uint16_t)__builtin_roundevenf(small * 0x1p24f);
    }
    // Rebias the exponent (127 → 15) and round the 23-bit mantissa to 10 bits, ties to even.
    uint32_t rebased = magnitude - 0x38000000u;
    return sign | (uint16_t)((rebased + 0x0FFFu + ((rebased >> 13) & 1u)) >> 13);
}

#endif
