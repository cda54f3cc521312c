// Scans over quantized vector codes: int8 dot products and Hamming distances, each with a
// generic version, and vectorized ones picked at run time. Only the LinearAlgebra module imports it.
#ifndef CKERNELS_CODES_H
#define CKERNELS_CODES_H

#include <stddef.h>
#include <stdint.h>

/// Kernel variants; `CE_PATH_BEST` picks the fastest this CPU runs.
enum { CE_PATH_BEST = -1, CE_PATH_GENERIC = 0, CE_PATH_AVX2 = 1, CE_PATH_AVX512_VNNI = 2, CE_PATH_POPCNT = 3 };

/// Bit mask of the int8 paths this CPU runs: 1 << CE_PATH_GENERIC | 1 << CE_PATH_AVX2 | 1 << CE_PATH_AVX512_VNNI.
int ce_int8_paths(void);
/// Bit mask of the Hamming paths this CPU runs: 1 << CE_PATH_GENERIC | 1 << CE_PATH_POPCNT.
int ce_hamming_paths(void);

/// out[r] = Σ_j codes[r·dim + j] · query[j] for unsigned 8-bit codes and a signed 8-bit query
/// whose values lie in [−63, 63] (so that pairs of products fit 16 bits). Exact integer results,
/// identical on every path. Returns 0, or −1 when `path` is not available here (nothing written).
int ce_u8s8_dot_rows(const uint8_t *codes, size_t rows, size_t dim, const int8_t *query, int32_t *out, int path);

/// out[r] = popcount(codes[r·words …] XOR query[…]) over `words` 64-bit words per row.
/// Returns 0, or −1 when `path` is not available here.
int ce_hamming_rows(const uint64_t *codes, size_t rows, size_t words, const uint64_t *query, uint32_t *out, int path);

#endif
