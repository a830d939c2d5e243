// What the processor offers, read with cpuid (and what the OS saves, xgetbv), so
// that kernels pick their fastest path at run time: AVX2 with FMA and F16C (the
// baseline of the quantised matrix-vector kernels), AVX-512 (F, BW, DQ, VL), and
// bf16 matmuls (AVX512-BF16, AMX) for `--dtype auto`.
//
// KVLENS_ISA=avx2 (or scalar) in the environment caps what detect() reports, so the
// AVX2 (or plain C++) paths run on a machine that has more: the figures of a CPU
// without AVX-512 can be measured on one with it.
#pragma once

#include <string>

namespace kvlens {

struct CpuFeatures {
    bool avx2 = false;  // with FMA and F16C
    bool avx512f = false;  // with BW, DQ and VL
    bool avx512vnni = false;
    bool avx512bf16 = false;
    bool amxBf16 = false;
    std::string cap;  // KVLENS_ISA when it lowered what the CPU has, else empty

    bool fastBf16() const { return avx512bf16 || amxBf16; }
    std::string describe() const;  // e.g. "avx2 avx512f avx512_vnni avx512_bf16"

    // The processor's features, capped by KVLENS_ISA (read once).
    static const CpuFeatures& detect();
    // What cpuid says, without any cap.
    static CpuFeatures probe();
    // `features` lowered to `isa` ("avx2": no AVX-512; "scalar": neither).
    // Throws kvlens::Error for another value, naming KVLENS_ISA.
    static CpuFeatures capped(CpuFeatures features, const std::string& isa);
};

}  // namespace kvlens
