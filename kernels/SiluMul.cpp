#include "kernels/SiluMul.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>

#include "kernels/CpuMath.h"

namespace kvlens::kernels {
namespace {

// The T x F outputs in ranges of at least 4096 across the threads, so a decode step's
// one row (F = 5632 for TinyLlama) is split too instead of running on the calling
// thread while the others wait (each element is computed alone: the same on any split).
template <typename Load, typename Store>
void siluMulRows(int64_t T, int64_t F, Load load, Store store) {
    at::parallel_for(0, T * F, 4096, [&](int64_t e0, int64_t e1) {
        for (int64_t e = e0; e < e1;) {
            const int64_t t = e / F, end = std::min(e1, (t + 1) * F);
            for (int64_t i = e - t * F; e < end; ++e, ++i) {
                const float g = load(t * 2 * F + i), u = load(t * 2 * F + F + i);
                store(e, g / (1.0f + std::exp(-g)) * u);
            }
        }
    });
}

}  // namespace

at::Tensor siluMul(const at::Tensor& gateUp) {
    const int64_t T = gateUp.size(0), F = gateUp.size(1) / 2;
    const bool cpuBody = gateUp.device().is_cpu() && gateUp.is_contiguous() &&
                         (gateUp.scalar_type() == at::kFloat || gateUp.scalar_type() == at::kBFloat16);
    if (!cpuBody) {
        at::Tensor g = gateUp.narrow(1, 0, F).to(at::kFloat), u = gateUp.narrow(1, F, F).to(at::kFloat);
        return (at::silu(g) * u).to(gateUp.scalar_type());
    }
    at::Tensor out = at::empty({T, F}, gateUp.options());
    if (gateUp.scalar_type() == at::kBFloat16) {
        const auto* in = reinterpret_cast<const uint16_t*>(gateUp.data_ptr<at::BFloat16>());
        auto* o = reinterpret_cast<uint16_t*>(out.data_ptr<at::BFloat16>());
        siluMulRows(
            T, F, [in](int64_t i) { return bf16ToFloat(in[i]); },
            [o](int64_t i, float v) { o[i] = floatToBf16(v); });
    } else {
        const float* in = gateUp.data_ptr<float>();
        float* o = out.data_ptr<float>();
        siluMulRows(
            T, F, [in](int64_t i) { return in[i]; }, [o](int64_t i, float v) { o[i] = v; });
    }
    return out;
}

}  // namespace kvlens::kernels
