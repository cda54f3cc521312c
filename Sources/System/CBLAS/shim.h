// The C BLAS interface from OpenBLAS (Debian: libopenblas-dev; include path from pkg-config `openblas`).
// Only the LinearAlgebra module imports this.
#include <cblas.h>
