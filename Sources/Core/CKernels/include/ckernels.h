// Element-wise kernels for the encoder, written in C so that clang can compile an AVX2/FMA copy
// next to the portable one and pick at run time (no compiler flags needed from packages that
// depend on this one). Only the LinearAlgebra module imports this header.
#ifndef CKERNELS_H
#define CKERNELS_H

#include <stddef.h>
#include "cpu.h"
#include "codes.h"
#include "int8gemm.h"
#include "blockgemm.h"
#include "sanitizer.h"
#include "half.h"

/// x[i] = e^x[i] for finite inputs ≤ 88 (below −87.3 gives ~1e-38). ~2e-7 relative error.
void ce_exp_finite(float *x, size_t count);

/// x[i] = GELU(x[i]) = x·(1 + erf(x/√2))/2, via erfc(a) = e^(−a²)·R(1/(1 + a/2)).
void ce_gelu(float *x, size_t count);

/// Row-wise softmax of x[rows][columns] in place, each score multiplied by scale first.
void ce_softmax_rows(float *x, size_t rows, size_t columns, float scale);

/// out[j] = scale · Σ_i w[i] · m[i][j] over a row-major rows × columns matrix (w NULL: all ones).
void ce_weighted_column_sum(const float *m, size_t rows, size_t columns, const float *w, float scale, float *out);

/// out[i] = Σ_j m[i][j] · q[j] for a row-major rows × columns matrix: one streaming pass, the
/// single-query similarity scan (measured faster than OpenBLAS sgemv at 1,000,000 × 384).
void ce_dot_rows(const float *m, size_t rows, size_t columns, const float *q, float *out);

/// 1 when the AVX2/FMA versions are in use.
int ce_uses_avx2(void);

/// on ≠ 0: run the portable versions from now on; 0: the best this CPU runs (for tests).
void ce_force_generic(int on);

#endif
