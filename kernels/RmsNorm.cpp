#include "kernels/RmsNorm.h"

#include <ATen/Parallel.h>

#include <cmath>

#include "kernels/CpuMath.h"

namespace kvlens::kernels {

at::Tensor rmsNorm(const at::Tensor& x, const at::Tensor& weight, double eps,
                   c10::ScalarType outType) {
    const bool cpuBody = x.device().is_cpu() && x.scalar_type() == at::kFloat &&
                         weight.scalar_type() == at::kFloat &&
                         (outType == at::kFloat || outType == at::kBFloat16);
    if (!cpuBody) {
        return (x * at::rsqrt(x.pow(2).mean(-1, true) + eps) * weight).to(outType);
    }
    const at::Tensor xc = x.contiguous(), wc = weight.contiguous();
    const int64_t E = xc.size(-1), T = xc.numel() / E;
    at::Tensor out = at::empty(xc.sizes(), xc.options().dtype(outType));
    const float* xp = xc.data_ptr<float>();
    const float* wp = wc.data_ptr<float>();
    at::parallel_for(0, T, std::max<int64_t>(1, 16384 / E), [&](int64_t t0, int64_t t1) {
        for (int64_t t = t0; t < t1; ++t) {
            const float* row = xp + t * E;
            double ss = 0.0;
            for (int64_t i = 0; i < E; ++i) ss += double(row[i]) * double(row[i]);
            const float r = float(1.0 / std::sqrt(ss / double(E) + eps));
            if (outType == at::kFloat) {
                float* o = out.data_ptr<float>() + t * E;
                for (int64_t i = 0; i < E; ++i) o[i] = row[i] * r * wp[i];
            } else {
                auto* o = reinterpret_cast<uint16_t*>(out.data_ptr<at::BFloat16>()) + t * E;
                for (int64_t i = 0; i < E; ++i) o[i] = floatToBf16(row[i] * r * wp[i]);
            }
        }
    });
    return out;
}

}  // namespace kvlens::kernels
