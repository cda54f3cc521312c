#include "cpu.h"
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>

static unsigned long long read_xcr0(void) {
    unsigned int eax, edx;
    __asm__ volatile(".byte 0x0f, 0x01, 0xd0" : "=a"(eax), "=d"(edx) : "c"(0));  // xgetbv
    return ((unsigned long long)edx << 32) | eax;
}

static int bit(unsigned int word, int n) { return (int)((word >> n) & 1u); }

int ce_cpu_read(ce_cpu_facts *f) {
    memset(f, 0, sizeof *f);
    unsigned int a, b, c, d;
    if (!__get_cpuid(0, &a, &b, &c, &d)) return 1;
    unsigned int maxLeaf = a;
    memcpy(f->vendor + 0, &b, 4);
    memcpy(f->vendor + 4, &d, 4);
    memcpy(f->vendor + 8, &c, 4);
    f->vendor[12] = 0;

    unsigned int ecx1 = 0, edx1 = 0;
    if (maxLeaf >= 1) {
        __cpuid(1, a, b, ecx1, edx1);
        int baseFamily = (a >> 8) & 0xF, baseModel = (a >> 4) & 0xF;
        int extFamily = (a >> 20) & 0xFF, extModel = (a >> 16) & 0xF;
        f->family = baseFamily == 0xF ? baseFamily + extFamily : baseFamily;
        f->model = (baseFamily == 0x6 || baseFamily == 0xF) ? baseModel + (extModel << 4) : baseModel;
        f->stepping = a & 0xF;
    }
    // Registers the OS saves on context switch: SSE+AVX state (bits 1, 2); AVX-512 state (5–7).
    int osxsave = bit(ecx1, 27);
    unsigned long long xcr0 = osxsave ? read_xcr0() : 0;
    int osAVX = (xcr0 & 0x6) == 0x6;
    int osAVX512 = osAVX && (xcr0 & 0xE0) == 0xE0;

    f->sse3 = bit(ecx1, 0);
    f->ssse3 = bit(ecx1, 9);
    f->sse4_1 = bit(ecx1, 19);
    f->sse4_2 = bit(ecx1, 20);
    f->popcnt = bit(ecx1, 23);
    f->avx = osAVX && bit(ecx1, 28);
    f->fma = f->avx && bit(ecx1, 12);
    f->f16c = f->avx && bit(ecx1, 29);
    if (maxLeaf >= 7) {
        unsigned int ebx7, ecx7, edx7, eax7;
        __cpuid_count(7, 0, eax7, ebx7, ecx7, edx7);
        f->avx2 = f->avx && bit(ebx7, 5);
        f->avx512f = osAVX512 && bit(ebx7, 16);
        f->avx512dq = f->avx512f && bit(ebx7, 17);
        f->avx512bw = f->avx512f && bit(ebx7, 30);
        f->avx512vl = f->avx512f && bit(ebx7, 31);
        f->avx512_vnni = f->avx512f && bit(ecx7, 11);
        if (eax7 >= 1) {
            unsigned int eax71, ebx71, ecx71, edx71;
            __cpuid_count(7, 1, eax71, ebx71, ecx71, edx71);
            f->avx512_bf16 = f->avx512f && bit(eax71, 5);
        }
    }
    unsigned int maxExtended = __get_cpuid_max(0x80000000u, 0);
    if (maxExtended >= 0x80000004u) {
        unsigned int words[12];
        for (unsigned int i = 0; i < 3; i++) {
            __cpuid(0x80000002u + i, words[4 * i], words[4 * i + 1], words[4 * i + 2], words[4 * i + 3]);
        }
        char raw[49];
        memcpy(raw, words, 48);
        raw[48] = 0;
        const char *start = raw;
        while (*start == ' ') start++;
        size_t length = strlen(start);
        while (length > 0 && (start[length - 1] == ' ' || start[length - 1] == 0)) length--;
        memcpy(f->brand, start, length);
        f->brand[length] = 0;
    }
    return 1;
}

#else

int ce_cpu_read(ce_cpu_facts *f) {
    memset(f, 0, sizeof *f);
    return 0;
}

#endif
