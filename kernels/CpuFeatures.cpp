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
        if (__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) {
            f.avx512f = (ebx >> 16) & 1u;
            f.amxBf16 = (edx >> 22) & 1u;
            const unsigned maxSub = eax;
            if (maxSub >= 1 && __get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx)) {
                f.avx512bf16 = (eax >> 5) & 1u;
            }
        }
#endif
        return f;
    }();
    return features;
}

}  // namespace kvlens
