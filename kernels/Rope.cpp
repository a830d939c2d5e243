#include "kernels/Rope.h"

#include <ATen/Parallel.h>

#include <cmath>
#include <vector>

#include "kernels/CpuMath.h"

namespace kvlens::kernels {
namespace {

void ropeComposite(at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin, int64_t R,
                   bool halves) {
    const int64_t T = x.size(0), nh = x.size(1);
    at::Tensor rot = x.narrow(2, 0, R).to(at::kFloat);
    at::Tensor out;
    if (!halves) {
        at::Tensor pairs = rot.reshape({T, nh, R / 2, 2});
        at::Tensor x0 = pairs.select(3, 0), x1 = pairs.select(3, 1);
        out = at::stack({x0 * cos - x1 * sin, x0 * sin + x1 * cos}, 3).reshape({T, nh, R});
    } else {
        at::Tensor x0 = rot.narrow(2, 0, R / 2), x1 = rot.narrow(2, R / 2, R / 2);
        out = at::cat({x0 * cos - x1 * sin, x0 * sin + x1 * cos}, 2);
    }
    x.narrow(2, 0, R).copy_(out);
}

template <typename Load, typename Store>
void ropeRows(int64_t T, int64_t nh, int64_t s0, int64_t s1, int64_t R, bool halves,
              const float* cs, const float* sn, Load load, Store store) {
    const int64_t half = R / 2;
    at::parallel_for(0, T * nh, std::max<int64_t>(1, 8192 / R), [&](int64_t b, int64_t e) {
        for (int64_t row = b; row < e; ++row) {
            const int64_t t = row / nh, h = row % nh;
            const int64_t base = t * s0 + h * s1;
            const float* c = cs + t * half;
            const float* s = sn + t * half;
            for (int64_t i = 0; i < half; ++i) {
                const int64_t a = base + (halves ? i : 2 * i);
                const int64_t bIdx = base + (halves ? i + half : 2 * i + 1);
                const float x0 = load(a), x1 = load(bIdx);
                store(a, x0 * c[i] - x1 * s[i]);
                store(bIdx, x0 * s[i] + x1 * c[i]);
            }
        }
    });
}

void ropeCpu(at::Tensor& x, const float* cs, const float* sn, int64_t R, bool halves) {
    const int64_t T = x.size(0), nh = x.size(1), s0 = x.stride(0), s1 = x.stride(1);
    if (x.scalar_type() == at::kFloat) {
        float* p = x.data_ptr<float>();
        ropeRows(
            T, nh, s0, s1, R, halves, cs, sn, [p](int64_t i) { return p[i]; },
            [p](int64_t i, float v) { p[i] = v; });
    } else {
        auto* p = reinterpret_cast<uint16_t*>(x.data_ptr<at::BFloat16>());
        ropeRows(
            T, nh, s0, s1, R, halves, cs, sn, [p](int64_t i) { return bf16ToFloat(p[i]); },
            [p](int64_t i, float v) { p[i] = floatToBf16(v); });
    }
}

}  // namespace

void rope(at::Tensor& q, at::Tensor& k, int64_t firstPosition, const at::Tensor& invFreq,
          int64_t ropeDim, bool halves, float magnitude) {
    const int64_t T = q.size(0), half = ropeDim / 2;
    auto cpuOk = [](const at::Tensor& x) {
        return x.device().is_cpu() && x.stride(2) == 1 &&
               (x.scalar_type() == at::kFloat || x.scalar_type() == at::kBFloat16);
    };
    if (cpuOk(q) && cpuOk(k) && invFreq.device().is_cpu()) {
        const float* inv = invFreq.data_ptr<float>();
        std::vector<float> cs(T * half), sn(T * half);
        for (int64_t t = 0; t < T; ++t) {
            const float pos = static_cast<float>(firstPosition + t);
            for (int64_t i = 0; i < half; ++i) {
                const float angle = pos * inv[i];
                cs[t * half + i] = std::cos(angle) * magnitude;
                sn[t * half + i] = std::sin(angle) * magnitude;
            }
        }
        ropeCpu(q, cs.data(), sn.data(), ropeDim, halves);
        ropeCpu(k, cs.data(), sn.data(), ropeDim, halves);
        return;
    }
    at::Tensor pos = at::arange(firstPosition, firstPosition + T,
                                at::TensorOptions().dtype(at::kFloat).device(q.device()));
    at::Tensor angles = pos.unsqueeze(1) * invFreq.unsqueeze(0);
    at::Tensor cos = (angles.cos() * magnitude).unsqueeze(1), sin = (angles.sin() * magnitude).unsqueeze(1);
    ropeComposite(q, cos, sin, ropeDim, halves);
    ropeComposite(k, cos, sin, ropeDim, halves);
}

void ropeShift(at::Tensor& k, const std::vector<int64_t>& shift, const at::Tensor& invFreq, int64_t ropeDim,
               bool halves) {
    const int64_t T = k.size(0), half = ropeDim / 2;
    TORCH_CHECK(static_cast<int64_t>(shift.size()) == T, "ropeShift: one shift per row");
    if (T == 0) return;
    const at::Tensor inv = invFreq.to(at::kCPU, at::kFloat).contiguous();
    const float* f = inv.data_ptr<float>();
    std::vector<float> cs(T * half), sn(T * half);
    for (int64_t t = 0; t < T; ++t) {
        for (int64_t i = 0; i < half; ++i) {
            const float angle = static_cast<float>(shift[t]) * f[i];
            cs[t * half + i] = std::cos(angle);
            sn[t * half + i] = std::sin(angle);
        }
    }
    if (k.device().is_cpu() && k.stride(2) == 1 &&
        (k.scalar_type() == at::kFloat || k.scalar_type() == at::kBFloat16)) {
        ropeCpu(k, cs.data(), sn.data(), ropeDim, halves);
        return;
    }
    const at::Tensor cos = at::from_blob(cs.data(), {T, 1, half}, at::kFloat).to(k.device());
    const at::Tensor sin = at::from_blob(sn.data(), {T, 1, half}, at::kFloat).to(k.device());
    ropeComposite(k, cos, sin, ropeDim, halves);
}

}  // namespace kvlens::kernels
