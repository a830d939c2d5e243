#include "kernels/CpuFeatures.h"

#include <cstdlib>

#include "core/Error.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace kvlens {

std::string CpuFeatures::describe() const {
    std::string s;
    auto add = [&](bool on, const char* name) {
        if (on) s += (s.empty() ? "" : " ") + std::string(name);
    };
    add(avx2, "avx2");
    add(avx512f, "avx512f");
    add(avx512vnni, "avx512_vnni");
    add(avx512bf16, "avx512_bf16");
    add(amxBf16, "amx_bf16");
    if (s.empty()) s = "none";
    if (!cap.empty()) s += " (KVLENS_ISA=" + cap + ")";
    return s;
}

CpuFeatures CpuFeatures::probe() {
    CpuFeatures f;
#if defined(__x86_64__) || defined(__i386__)
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    // The OS must save the YMM (XCR0 bits 1, 2) and AVX-512 registers (bits 5, 6,
    // 7), or using them faults even where cpuid lists them (some VMs mask them).
    bool osAvx = false, osAvx512 = false;
    bool fma = false, f16c = false;
    if (__get_cpuid(1, &eax, &ebx, &ecx, &edx) && ((ecx >> 27) & 1u)) {  // OSXSAVE
        unsigned lo = 0, hi = 0;
        __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
        osAvx = (lo & 0x6u) == 0x6u;
        osAvx512 = (lo & 0xE6u) == 0xE6u;
        fma = (ecx >> 12) & 1u;
        f16c = (ecx >> 29) & 1u;
    }
    if (osAvx && __get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) {
        f.avx2 = ((ebx >> 5) & 1u) && fma && f16c;
        // F, DQ (bit 17), BW (30) and VL (31): what the kernels use.
        f.avx512f = osAvx512 && f.avx2 && ((ebx >> 16) & 1u) && ((ebx >> 17) & 1u) && ((ebx >> 30) & 1u) &&
                    ((ebx >> 31) & 1u);
        f.avx512vnni = f.avx512f && ((ecx >> 11) & 1u);
        f.amxBf16 = osAvx512 && ((edx >> 22) & 1u);
        const unsigned maxSub = eax;
        if (f.avx512f && maxSub >= 1 && __get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx)) {
            f.avx512bf16 = (eax >> 5) & 1u;
        }
    }
#endif
    return f;
}

CpuFeatures CpuFeatures::capped(CpuFeatures f, const std::string& isa) {
    if (isa.empty() || isa == "native") return f;
    if (isa != "avx2" && isa != "scalar") {
        throw Error("KVLENS_ISA='" + isa + "': use native, avx2 (no AVX-512) or scalar (no AVX)");
    }
    const bool hadMore = f.avx512f || f.amxBf16 || (isa == "scalar" && f.avx2);
    f.avx512f = f.avx512vnni = f.avx512bf16 = f.amxBf16 = false;
    if (isa == "scalar") f.avx2 = false;
    if (hadMore) f.cap = isa;
    return f;
}

const CpuFeatures& CpuFeatures::detect() {
    static const CpuFeatures features = [] {
        const char* isa = std::getenv("KVLENS_ISA");
        return capped(probe(), isa ? isa : "");
    }();
    return features;
}

}  // namespace kvlens
