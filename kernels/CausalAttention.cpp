#include "kernels/CausalAttention.h"

#include <ATen/Parallel.h>

#include <cmath>
#include <limits>
#include <vector>

#include "kernels/CpuMath.h"

namespace kvlens::kernels {
namespace {

constexpr int64_t kMaxFusedQueries = 8;

template <typename T>
float toFloat(T v);
template <>
inline float toFloat<float>(float v) {
    return v;
}
template <>
inline float toFloat<uint16_t>(uint16_t v) {
    return bf16ToFloat(v);
}
template <typename T>
T fromFloat(float v);
template <>
inline float fromFloat<float>(float v) {
    return v;
}
template <>
inline uint16_t fromFloat<uint16_t>(float v) {
    return floatToBf16(v);
}

// DK > 0: the head dimension fixed at compile time, so the per-key loops
// unroll and vectorise; DK == 0: any head dimension.
template <typename T, int DK>
void attend(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, int64_t p0,
            at::Tensor& out) {
    const int64_t Tq = q.size(0), H = q.size(1), KV = k.size(0);
    const int64_t D = DK > 0 ? DK : q.size(2);
    const int64_t G = H / KV;
    const T* qp = reinterpret_cast<const T*>(q.data_ptr());
    const T* kp = reinterpret_cast<const T*>(k.data_ptr());
    const T* vp = reinterpret_cast<const T*>(v.data_ptr());
    T* op = reinterpret_cast<T*>(out.data_ptr());
    const int64_t qs0 = q.stride(0), qs1 = q.stride(1);
    const int64_t ks0 = k.stride(0), ks1 = k.stride(1), vs0 = v.stride(0), vs1 = v.stride(1);
    const float scale = 1.0f / std::sqrt(float(D));
    const int64_t grain = std::max<int64_t>(1, 65536 / ((p0 + Tq) * D));
    at::parallel_for(0, Tq * H, grain, [&](int64_t b, int64_t e) {
        std::vector<float> scores(p0 + Tq), qf(D), acc(D);
        for (int64_t row = b; row < e; ++row) {
            const int64_t t = row / H, h = row % H, kv = h / G;
            const int64_t S = p0 + t + 1;
            for (int64_t d = 0; d < D; ++d) qf[d] = toFloat(qp[t * qs0 + h * qs1 + d]) * scale;
            float mx = -std::numeric_limits<float>::infinity();
            const T* kr = kp + kv * ks0;
            for (int64_t j = 0; j < S; ++j, kr += ks1) {
                float dot = 0.0f;
                for (int64_t d = 0; d < D; ++d) dot += qf[d] * toFloat(kr[d]);
                scores[j] = dot;
                mx = std::max(mx, dot);
            }
            float z = 0.0f;
            for (int64_t j = 0; j < S; ++j) z += (scores[j] = std::exp(scores[j] - mx));
            std::fill(acc.begin(), acc.end(), 0.0f);
            const T* vr = vp + kv * vs0;
            for (int64_t j = 0; j < S; ++j, vr += vs1) {
                const float p = scores[j];
                for (int64_t d = 0; d < D; ++d) acc[d] += p * toFloat(vr[d]);
            }
            const float inv = 1.0f / z;
            T* o = op + t * H * D + h * D;
            for (int64_t d = 0; d < D; ++d) o[d] = fromFloat<T>(acc[d] * inv);
        }
    });
}

template <typename T>
void attendAnyDim(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, int64_t p0,
                  at::Tensor& out) {
    switch (q.size(2)) {
        case 8: return attend<T, 8>(q, k, v, p0, out);
        case 16: return attend<T, 16>(q, k, v, p0, out);
        case 32: return attend<T, 32>(q, k, v, p0, out);
        case 64: return attend<T, 64>(q, k, v, p0, out);
        case 128: return attend<T, 128>(q, k, v, p0, out);
        default: return attend<T, 0>(q, k, v, p0, out);
    }
}

}  // namespace

bool useFusedAttention(const at::Tensor& q, const at::Tensor& k) {
    const auto type = q.scalar_type();
    return q.device().is_cpu() && q.size(0) <= kMaxFusedQueries && k.scalar_type() == type &&
           (type == at::kFloat || type == at::kBFloat16) && q.stride(2) == 1 && k.stride(2) == 1;
}

at::Tensor causalAttention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                           int64_t firstPosition) {
    const int64_t T = q.size(0), H = q.size(1), D = q.size(2);
    at::Tensor out = at::empty({T, H * D}, q.options());
    if (q.scalar_type() == at::kBFloat16) {
        attendAnyDim<uint16_t>(q, k, v, firstPosition, out);
    } else {
        attendAnyDim<float>(q, k, v, firstPosition, out);
    }
    return out;
}

}  // namespace kvlens::kernels
