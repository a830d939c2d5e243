#include "kernels/CausalAttention.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "kernels/AttentionGroup.h"
#include "kernels/CpuFeatures.h"
#include "kernels/CpuMath.h"


#ifdef KVLENS_WITH_CUDA_KERNELS
#include <c10/cuda/CUDAGuard.h>

#include "kernels/CudaInterop.h"
#include "kernels/cuda/RaggedAttentionCuda.h"
#endif

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

// One query row against S keys/values (rows `ks1`/`vs1` apart): scores, fp32
// softmax, weighted values, written to `o`. Both the contiguous-cache and the
// ragged entry points run exactly this, so a compressed cache that kept
// everything decodes bit-identically to the full cache.
// DK > 0: the head dimension fixed at compile time, so the loops unroll and vectorise.
template <typename T, int DK>
void attendRow(const T* q, int64_t D_, float scale, const T* kr, int64_t ks1, const T* vr,
               int64_t vs1, int64_t S, std::vector<float>& scores, std::vector<float>& qf,
               std::vector<float>& acc, T* o) {
    const int64_t D = DK > 0 ? DK : D_;
    for (int64_t d = 0; d < D; ++d) qf[d] = toFloat(q[d]) * scale;
    scores.resize(S);
    float mx = -std::numeric_limits<float>::infinity();
    for (int64_t j = 0; j < S; ++j, kr += ks1) {
        float dot = 0.0f;
        for (int64_t d = 0; d < D; ++d) dot += qf[d] * toFloat(kr[d]);
        scores[j] = dot;
        mx = std::max(mx, dot);
    }
    float z = 0.0f;
    for (int64_t j = 0; j < S; ++j) z += (scores[j] = std::exp(scores[j] - mx));
    std::fill(acc.begin(), acc.begin() + D, 0.0f);
    for (int64_t j = 0; j < S; ++j, vr += vs1) {
        const float p = scores[j];
        for (int64_t d = 0; d < D; ++d) acc[d] += p * toFloat(vr[d]);
    }
    const float inv = 1.0f / z;
    for (int64_t d = 0; d < D; ++d) o[d] = fromFloat<T>(acc[d] * inv);
}

// The GQA group kernel (AttentionGroup.h) this CPU runs for head dimension D, or
// nullptr (the scalar rows). The contiguous and ragged entry points share it, so a
// compressed cache that kept everything decodes bit-identically to the full cache.
template <typename T>
AttentionGroupFn<T> groupKernel(int64_t D) {
    const CpuFeatures& f = CpuFeatures::detect();
    const AttentionGroupTable* t = f.avx512f ? attentionGroupAvx512() : f.avx2 ? attentionGroupAvx2() : nullptr;
    if (t == nullptr) return nullptr;
    if constexpr (std::is_same_v<T, float>) {
        return D == 64 ? t->f32d64 : D == 128 ? t->f32d128 : nullptr;
    } else {
        return D == 64 ? t->bf16d64 : D == 128 ? t->bf16d128 : nullptr;
    }
}

// G query heads (rows `qs` apart) through `kernel`: queries widened and scaled as
// attendRow does, outputs (G consecutive heads of D at o) back in T.
template <typename T>
void attendGroupWith(AttentionGroupFn<T> kernel, const T* q, int64_t qs, int64_t G, int64_t D, float scale,
                     const T* kr, int64_t ks1, const T* vr, int64_t vs1, int64_t S, std::vector<float>& scores,
                     std::vector<float>& qf, std::vector<float>& out, T* o) {
    scores.resize(static_cast<size_t>(G * S));
    qf.resize(static_cast<size_t>(G * D));
    out.resize(static_cast<size_t>(G * D));
    for (int64_t g = 0; g < G; ++g)
        for (int64_t d = 0; d < D; ++d) qf[static_cast<size_t>(g * D + d)] = toFloat(q[g * qs + d]) * scale;
    kernel(qf.data(), static_cast<int>(G), kr, ks1, vr, vs1, S, scores.data(), out.data());
    for (int64_t i = 0; i < G * D; ++i) o[i] = fromFloat<T>(out[static_cast<size_t>(i)]);
}

// Scratch rows of one worker thread, kept from call to call: a decode step's
// attention allocates nothing once the longest head has been seen.
struct Scratch {
    std::vector<float> scores, qf, acc;
};
Scratch& threadScratch(int64_t D) {
    thread_local Scratch s;
    if (static_cast<int64_t>(s.qf.size()) < D) {
        s.qf.resize(static_cast<size_t>(D));
        s.acc.resize(static_cast<size_t>(D));
    }
    return s;
}

// Most query heads one KV head serves (GQA groups are at most this large here).
constexpr int kMaxGroup = 64;

// Calls f.template operator()<DK>() with DK the compile-time head dimension (0: any).
template <typename F>
void withHeadDim(int64_t D, F&& f) {
    switch (D) {
        case 8: return f(std::integral_constant<int, 8>());
        case 16: return f(std::integral_constant<int, 16>());
        case 32: return f(std::integral_constant<int, 32>());
        case 64: return f(std::integral_constant<int, 64>());
        case 128: return f(std::integral_constant<int, 128>());
        default: return f(std::integral_constant<int, 0>());
    }
}

template <typename T>
void attendCausal(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, int64_t p0,
                  at::Tensor& out) {
    const int64_t Tq = q.size(0), H = q.size(1), D = q.size(2), KV = k.size(0), G = H / KV;
    const T* qp = reinterpret_cast<const T*>(q.data_ptr());
    const T* kp = reinterpret_cast<const T*>(k.data_ptr());
    const T* vp = reinterpret_cast<const T*>(v.data_ptr());
    T* op = reinterpret_cast<T*>(out.data_ptr());
    const float scale = 1.0f / std::sqrt(float(D));
    if (const AttentionGroupFn<T> group = G <= kMaxGroup ? groupKernel<T>(D) : nullptr) {
        // One task per (query, KV head): its G query heads in one pass over the keys.
        const int64_t grain = std::max<int64_t>(1, 65536 / ((p0 + Tq) * D * G));
        at::parallel_for(0, Tq * KV, grain, [&](int64_t b, int64_t e) {
            auto& [scores, qf, acc] = threadScratch(D);
            for (int64_t task = b; task < e; ++task) {
                const int64_t t = task / KV, kv = task % KV;
                attendGroupWith<T>(group, qp + t * q.stride(0) + kv * G * q.stride(1), q.stride(1), G, D, scale,
                                   kp + kv * k.stride(0), k.stride(1), vp + kv * v.stride(0), v.stride(1), p0 + t + 1,
                                   scores, qf, acc, op + t * H * D + kv * G * D);
            }
        });
        return;
    }
    const int64_t grain = std::max<int64_t>(1, 65536 / ((p0 + Tq) * D));
    withHeadDim(D, [&](auto dk) {
        constexpr int DK = decltype(dk)::value;
        at::parallel_for(0, Tq * H, grain, [&](int64_t b, int64_t e) {
            auto& [scores, qf, acc] = threadScratch(D);
            for (int64_t row = b; row < e; ++row) {
                const int64_t t = row / H, h = row % H, kv = h / G;
                attendRow<T, DK>(qp + t * q.stride(0) + h * q.stride(1), D, scale,
                                 kp + kv * k.stride(0), k.stride(1), vp + kv * v.stride(0),
                                 v.stride(1), p0 + t + 1, scores, qf, acc, op + t * H * D + h * D);
            }
        });
    });
}

template <typename T>
void attendRagged(const at::Tensor& q, const std::vector<at::Tensor>& keys,
                  const std::vector<at::Tensor>& values, const std::vector<int64_t>& headOf,
                  at::Tensor& out) {
    const int64_t H = q.size(1), D = q.size(2);
    const T* qp = reinterpret_cast<const T*>(q.data_ptr());
    T* op = reinterpret_cast<T*>(out.data_ptr());
    const float scale = 1.0f / std::sqrt(float(D));
    int64_t longest = 1;
    for (const at::Tensor& kk : keys) longest = std::max<int64_t>(longest, kk.size(0));
    if (const AttentionGroupFn<T> group = groupKernel<T>(D)) {
        // Runs of consecutive query heads on one cache head (a KV-head cache's GQA
        // groups; a query-head cache has runs of one) share one pass over it.
        std::vector<std::pair<int64_t, int64_t>> runs;  // first head, heads
        for (int64_t h = 0; h < H; ++h) {
            if (!runs.empty() && headOf[h] == headOf[runs.back().first] && runs.back().second < kMaxGroup &&
                runs.back().first + runs.back().second == h) {
                ++runs.back().second;
            } else {
                runs.push_back({h, 1});
            }
        }
        const int64_t grain = std::max<int64_t>(1, 65536 / (longest * D * (H / int64_t(runs.size()))));
        at::parallel_for(0, static_cast<int64_t>(runs.size()), grain, [&](int64_t b, int64_t e) {
            auto& [scores, qf, acc] = threadScratch(D);
            for (int64_t r = b; r < e; ++r) {
                const auto [h, G] = runs[static_cast<size_t>(r)];
                const at::Tensor& kk = keys[headOf[h]];
                const at::Tensor& vv = values[headOf[h]];
                attendGroupWith<T>(group, qp + h * q.stride(1), q.stride(1), G, D, scale,
                                   reinterpret_cast<const T*>(kk.data_ptr()), kk.stride(0),
                                   reinterpret_cast<const T*>(vv.data_ptr()), vv.stride(0), kk.size(0), scores, qf,
                                   acc, op + h * D);
            }
        });
        return;
    }
    const int64_t grain = std::max<int64_t>(1, 65536 / (longest * D));
    withHeadDim(D, [&](auto dk) {
        constexpr int DK = decltype(dk)::value;
        at::parallel_for(0, H, grain, [&](int64_t b, int64_t e) {
            auto& [scores, qf, acc] = threadScratch(D);
            for (int64_t h = b; h < e; ++h) {
                const at::Tensor& kk = keys[headOf[h]];
                const at::Tensor& vv = values[headOf[h]];
                attendRow<T, DK>(qp + h * q.stride(1), D, scale,
                                 reinterpret_cast<const T*>(kk.data_ptr()), kk.stride(0),
                                 reinterpret_cast<const T*>(vv.data_ptr()), vv.stride(0), kk.size(0),
                                 scores, qf, acc, op + h * D);
            }
        });
    });
}

bool cpuType(const at::Tensor& t) {
    return t.device().is_cpu() && (t.scalar_type() == at::kFloat || t.scalar_type() == at::kBFloat16);
}

#ifdef KVLENS_WITH_CUDA_KERNELS
// The CUDA body, when it takes these tensors: one query per head on one GPU,
// rows with unit stride, and heads within the launcher's table.
bool raggedCuda(const at::Tensor& q, const std::vector<at::Tensor>& keys,
                const std::vector<at::Tensor>& values, const std::vector<int64_t>& headOf,
                at::Tensor& out) {
    const int64_t H = q.size(1), D = q.size(2), C = static_cast<int64_t>(keys.size());
    const auto type = cuda::elementTypeOf(q.scalar_type());
    if (!q.is_cuda() || !type || q.size(0) != 1 || q.stride(2) != 1 || H > cuda::kMaxRaggedQueryHeads ||
        C > cuda::kMaxRaggedCacheHeads || C < 1 || D > cuda::kMaxRaggedHeadDim ||
        values.size() != keys.size() || int64_t(headOf.size()) != H) {
        return false;
    }
    cuda::RaggedProblem p;
    for (int64_t c = 0; c < C; ++c) {
        const at::Tensor& k = keys[c];
        const at::Tensor& v = values[c];
        if (k.device() != q.device() || v.device() != q.device() || k.scalar_type() != q.scalar_type() ||
            v.scalar_type() != q.scalar_type() || k.dim() != 2 || v.dim() != 2 || k.size(1) != D ||
            v.size(1) != D || k.stride(1) != 1 || v.stride(1) != 1 || v.size(0) != k.size(0)) {
            return false;
        }
        p.heads[c].keys = k.data_ptr();
        p.heads[c].values = v.data_ptr();
        p.heads[c].keyRowStride = k.stride(0);
        p.heads[c].valueRowStride = v.stride(0);
        p.heads[c].length = k.size(0);
    }
    for (int64_t h = 0; h < H; ++h) {
        if (headOf[h] < 0 || headOf[h] >= C) return false;
        p.headOf[h] = static_cast<uint8_t>(headOf[h]);
    }
    const c10::cuda::CUDAGuard guard(q.device());
    out = at::empty({1, H * D}, q.options());
    p.query = q.data_ptr();
    p.queryHeadStride = q.stride(1);
    p.out = out.data_ptr();
    p.type = *type;
    p.queryHeads = static_cast<int>(H);
    p.cacheHeads = static_cast<int>(C);
    p.headDim = static_cast<int>(D);
    at::Tensor work = at::empty({static_cast<int64_t>(cuda::raggedAttentionWorkspaceBytes(p))},
                                q.options().dtype(at::kByte));
    cuda::check(cuda::launchRaggedAttention(p, work.data_ptr(), cuda::currentStream(q.device())),
                "ragged attention");
    return true;
}
#endif

}  // namespace

at::Tensor queryKeyScores(const at::Tensor& q, const at::Tensor& k) {
    const int64_t H = q.size(0), D = q.size(1), KV = k.size(0), S = k.size(1), G = H / KV;
    const CpuFeatures& f = CpuFeatures::detect();
    const AttentionGroupTable* t = !k.is_cuda() && k.stride(2) == 1
                                       ? (f.avx512f ? attentionGroupAvx512() : f.avx2 ? attentionGroupAvx2() : nullptr)
                                       : nullptr;
    const bool bf16 = k.scalar_type() == at::kBFloat16;
    const GroupScoresFn<float> f32 = t == nullptr || k.scalar_type() != at::kFloat ? nullptr
                                     : D == 64 ? t->scoresF32d64 : D == 128 ? t->scoresF32d128 : nullptr;
    const GroupScoresFn<uint16_t> b16 = t == nullptr || !bf16 ? nullptr
                                        : D == 64 ? t->scoresBf16d64 : D == 128 ? t->scoresBf16d128 : nullptr;
    if (f32 == nullptr && b16 == nullptr) {
        const at::Tensor qg = q.reshape({KV, G, D}).to(at::kFloat);
        return at::bmm(qg, k.to(at::kFloat).transpose(1, 2)).view({H, S});
    }
    const at::Tensor qf = q.to(at::kCPU, at::kFloat).contiguous();
    at::Tensor out = at::empty({H, S}, qf.options());
    const float* qp = qf.data_ptr<float>();
    float* op = out.data_ptr<float>();
    at::parallel_for(0, KV, 1, [&](int64_t b, int64_t e) {
        for (int64_t kv = b; kv < e; ++kv) {
            if (b16 != nullptr) {
                const auto* kr = reinterpret_cast<const uint16_t*>(k.data_ptr()) + kv * k.stride(0);
                b16(qp + kv * G * D, static_cast<int>(G), kr, k.stride(1), S, op + kv * G * S);
            } else {
                const float* kr = k.data_ptr<float>() + kv * k.stride(0);
                f32(qp + kv * G * D, static_cast<int>(G), kr, k.stride(1), S, op + kv * G * S);
            }
        }
    });
    return out;
}

bool useFusedAttention(const at::Tensor& q, const at::Tensor& k) {
    return cpuType(q) && q.size(0) <= kMaxFusedQueries && k.scalar_type() == q.scalar_type() &&
           q.stride(2) == 1 && k.stride(2) == 1;
}

at::Tensor causalAttention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                           int64_t firstPosition) {
    const int64_t T = q.size(0), H = q.size(1), D = q.size(2);
    at::Tensor out = at::empty({T, H * D}, q.options());
    if (q.scalar_type() == at::kBFloat16) {
        attendCausal<uint16_t>(q, k, v, firstPosition, out);
    } else {
        attendCausal<float>(q, k, v, firstPosition, out);
    }
    return out;
}

void softcapLogits(at::Tensor& logits, double cap) {
    if (cap > 0.0) logits.div_(cap).tanh_().mul_(cap);
}

at::Tensor raggedAttention(const at::Tensor& q, const std::vector<at::Tensor>& keys,
                           const std::vector<at::Tensor>& values, const std::vector<int64_t>& headOf,
                           double softcap) {
    const int64_t H = q.size(1), D = q.size(2);
#ifdef KVLENS_WITH_CUDA_KERNELS
    if (at::Tensor out; softcap <= 0.0 && raggedCuda(q, keys, values, headOf, out)) return out;
#endif
    bool cpu = softcap <= 0.0 && cpuType(q) && q.size(0) == 1 && q.stride(2) == 1;
    for (size_t c = 0; c < keys.size() && cpu; ++c) {
        cpu = keys[c].scalar_type() == q.scalar_type() && keys[c].stride(1) == 1 &&
              values[c].stride(1) == 1 && keys[c].size(0) > 0;
    }
    if (!cpu) {
        // Composite body (any device): one small attention per query head.
        std::vector<at::Tensor> outs;
        for (int64_t h = 0; h < H; ++h) {
            at::Tensor qh = q.select(1, h).to(at::kFloat);  // [1, D]
            at::Tensor kk = keys[headOf[h]].to(at::kFloat), vv = values[headOf[h]].to(at::kFloat);
            at::Tensor logits = at::matmul(qh, kk.t()) / std::sqrt(double(D));
            softcapLogits(logits, softcap);
            at::Tensor p = at::softmax(logits, -1);
            outs.push_back(at::matmul(p, vv));
        }
        return at::cat(outs, 1).to(q.scalar_type());
    }
    at::Tensor out = at::empty({1, H * D}, q.options());
    if (q.scalar_type() == at::kBFloat16) {
        attendRagged<uint16_t>(q, keys, values, headOf, out);
    } else {
        attendRagged<float>(q, keys, values, headOf, out);
    }
    return out;
}

}  // namespace kvlens::kernels
