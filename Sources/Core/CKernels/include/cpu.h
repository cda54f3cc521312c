// What the processor can do, read with cpuid (x86) so that LinearAlgebra can check the BLAS
// kernels OpenBLAS chose against it. Only the LinearAlgebra module imports this header.
#ifndef CKERNELS_CPU_H
#define CKERNELS_CPU_H

/// The facts of one processor. Feature fields are 1 only when both the CPU reports the feature
/// and the operating system saves the registers it needs (XCR0), so "1" means "usable here".
typedef struct {
    char vendor[13];   ///< cpuid vendor string: "GenuineIntel", "AuthenticAMD", …
    char brand[49];    ///< cpuid brand string (leaves 0x80000002–4), trimmed; may be empty
    int family;        ///< display family (base + extended)
    int model;         ///< display model (base + extended << 4 where the vendor uses it)
    int stepping;
    int sse3, ssse3, sse4_1, sse4_2, popcnt;
    int avx, fma, f16c, avx2;
    int avx512f, avx512bw, avx512dq, avx512vl, avx512_vnni, avx512_bf16;
} ce_cpu_facts;

/// Fills `facts` for the processor running the caller. Returns 1 on x86, 0 elsewhere (facts zeroed).
int ce_cpu_read(ce_cpu_facts *facts);

#endif
