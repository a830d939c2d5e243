#include "kernels/SiluMul.h"

#include <ATen/Parallel.h>

#include <cmath>

#include "kernels/CpuMath.h"

namespace kvlens::kernels {
namespace {

template <typename Load, typename Store>
void siluMulRows(int64_t T, int64_t F, Load load, Store store) {
    at::parallel_for(0, T, std::max<int64_t>(1, 32768 / F), [&](int64_t t0, int64_t t1) {
        for (int64_t t = t0; t < t1; ++t) {
            for (int64_t i = 0; i < F; ++i) {
                const float g = load(t * 2 * F + i), u = load(t * 2 * F + F + i);
                store(t * F + i, g / (1.0f + std::exp(-g)) * u);
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
