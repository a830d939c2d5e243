// What the processor offers for fast bf16 matmuls (AVX512-BF16, AMX), read
// with cpuid, so `--dtype auto` can pick bf16 only where it pays.
#pragma once

#include <string>

namespace kvlens {

struct CpuFeatures {
    bool avx512f = false;
    bool avx512bf16 = false;
    bool amxBf16 = false;

    bool fastBf16() const { return avx512bf16 || amxBf16; }
    std::string describe() const;  // e.g. "avx512f avx512_bf16 amx_bf16"

    static const CpuFeatures& detect();
};

}  // namespace kvlens
