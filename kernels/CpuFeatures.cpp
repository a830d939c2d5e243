#include "kernels/CpuFeatures.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace kvlens {

std::string CpuFeatures::describe() const {
    std::string s;
    auto add = [&](bool on, const char* name) {
        if (on) s += (s.empty() ? "" : " ") + std::string(name);
    };
    add(avx512f, "avx512f");
    add(avx512bf16, "avx512_bf16");
    add(amxBf16, "amx_bf16");
    return s.empty() ? "none" : s;
}

const CpuFeatures& CpuFeatures::detect() {
    static const CpuFeatures features = [] {
        CpuFeatures f;
#if defined(__x86_64__) || defined(__i386__)
        unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
        // The OS must save the AVX-512 registers (XCR0 bits 1, 2, 5, 6, 7), or
        // using them faults even where cpuid lists them (some VMs mask them).
        bool osAvx512 = false;
        if (__get_cpuid(1, &eax, &ebx, &ecx, &edx) && ((ecx >> 27) & 1u)) {  // OSXSAVE
            unsigned lo = 0, hi = 0;
            __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
            osAvx512 = (lo & 0xE6u) == 0xE6u;
        }
        if (osAvx512 && __get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) {
            // Our bf16 kernel also uses AVX512-BW (masked 16-bit loads).
            f.avx512f = ((ebx >> 16) & 1u) && ((ebx >> 30) & 1u);
            f.amxBf16 = (edx >> 22) & 1u;
            const unsigned maxSub = eax;
            if (f.avx512f && maxSub >= 1 && __get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx)) {
                f.avx512bf16 = (eax >> 5) & 1u;
            }
        }
#endif
        return f;
    }();
    return features;
}

}  // namespace kvlens
