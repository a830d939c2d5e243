#include "kernels/CausalAttention.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/CpuFeatures.h"
#include "kernels/CpuMath.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

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

// A group of G query heads reading one KV head (GQA): the keys and values are read once
// for all of them, each key's fp32 dot with every query of the group in vector
// registers, then each row's fp32 softmax and weighted values. Each row's arithmetic
// does not depend on the group around it, so a head decodes the same alone (a
// per-query-head compressed cache) as in its group (the full cache); the contiguous
// and ragged entry points share these, so a compressed cache that kept everything
// decodes bit-identically to the full cache. AVX2 and AVX-512 bodies for head
// dimensions 64 and 128 (what Llama, Mistral and Qwen use), chosen at run time; the
// scalar attendRow otherwise.
template <typename T>
// scores: G * S floats, qf and acc: G * D each (scratch); o: G rows of D.
using GroupFn = void (*)(const T* q, int64_t qHeadStride, int G, float scale, const T* kr, int64_t ks1, const T* vr,
                         int64_t vs1, int64_t S, float* scores, float* qf, float* acc, T* o);

#if defined(__x86_64__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#define KVLENS_AVX2 __attribute__((target("avx2,fma,f16c")))
#define KVLENS_AVX512 __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma,f16c")))

KVLENS_AVX2 inline __m256 load8(const float* p) { return _mm256_loadu_ps(p); }
KVLENS_AVX2 inline __m256 load8(const uint16_t* p) {
    return _mm256_castsi256_ps(
        _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))), 16));
}
KVLENS_AVX2 inline float hsum8(__m256 a) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}
KVLENS_AVX512 inline __m512 load16(const float* p) { return _mm512_loadu_ps(p); }
KVLENS_AVX512 inline __m512 load16(const uint16_t* p) {
    return _mm512_castsi512_ps(
        _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))), 16));
}

// exp(x) for x <= 0 (scores less their maximum), as Cephes' expf: x = n ln2 + r with
// |r| <= ln2 / 2, a degree-6 polynomial for e^r (relative error ~1e-7), times 2^n;
// below -87.3 the result is the smallest normal float's neighbourhood, never a NaN.
#define KVLENS_EXP_BODY(V, set1, add, mul, fma, floorf, cvt, castI, shift, addI)            \
    x = V##max_ps(x, set1(-87.3f));                                                            \
    const auto n = floorf(fma(x, set1(1.44269504088896341f), set1(0.5f)));                  \
    x = fma(n, set1(-0.693359375f), x);                                                      \
    x = fma(n, set1(2.12194440e-4f), x);                                                     \
    auto p = set1(1.9875691500e-4f);                                                         \
    p = fma(p, x, set1(1.3981999507e-3f));                                                   \
    p = fma(p, x, set1(8.3334519073e-3f));                                                   \
    p = fma(p, x, set1(4.1665795894e-2f));                                                   \
    p = fma(p, x, set1(1.6666665459e-1f));                                                   \
    p = fma(p, x, set1(5.0000001201e-1f));                                                   \
    p = fma(p, mul(x, x), add(x, set1(1.0f)));                                               \
    return mul(p, castI(shift(addI(cvt(n)), 23)));

KVLENS_AVX2 inline __m256 exp8(__m256 x) {
#define KVLENS_ADD127_8(i) _mm256_add_epi32(i, _mm256_set1_epi32(127))
#define KVLENS_FLOOR8(v) _mm256_floor_ps(v)
    KVLENS_EXP_BODY(_mm256_, _mm256_set1_ps, _mm256_add_ps, _mm256_mul_ps, _mm256_fmadd_ps, KVLENS_FLOOR8,
                    _mm256_cvtps_epi32, _mm256_castsi256_ps, _mm256_slli_epi32, KVLENS_ADD127_8)
}
KVLENS_AVX512 inline __m512 exp16(__m512 x) {
#define KVLENS_ADD127_16(i) _mm512_add_epi32(i, _mm512_set1_epi32(127))
#define KVLENS_FLOOR16(v) _mm512_roundscale_ps(v, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC)
    KVLENS_EXP_BODY(_mm512_, _mm512_set1_ps, _mm512_add_ps, _mm512_mul_ps, _mm512_fmadd_ps, KVLENS_FLOOR16,
                    _mm512_cvtps_epi32, _mm512_castsi512_ps, _mm512_slli_epi32, KVLENS_ADD127_16)
}

// Each of G rows of S scores turned into exp(score - max) in place, with 1 / sum in inv.
KVLENS_AVX2 void softmaxRowsAvx2(float* scores, int G, int64_t S, float* inv) {
    for (int g = 0; g < G; ++g) {
        float* row = scores + g * S;
        float mx = -std::numeric_limits<float>::infinity();
        for (int64_t j = 0; j < S; ++j) mx = std::max(mx, row[j]);
        const __m256 m = _mm256_set1_ps(mx);
        __m256 z = _mm256_setzero_ps();
        int64_t j = 0;
        for (; j + 8 <= S; j += 8) {
            const __m256 e = exp8(_mm256_sub_ps(_mm256_loadu_ps(row + j), m));
            _mm256_storeu_ps(row + j, e);
            z = _mm256_add_ps(z, e);
        }
        if (j < S) {  // the tail through a padded lane set, the padding's lanes dropped
            alignas(32) float tail[8];
            for (int i = 0; i < 8; ++i) tail[i] = j + i < S ? row[j + i] : mx;
            const __m256 e = exp8(_mm256_sub_ps(_mm256_load_ps(tail), m));
            _mm256_store_ps(tail, e);
            for (int i = 0; j + i < S; ++i) row[j + i] = tail[i];
            const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
            const __m256 keep = _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32(int(S - j)), lane));
            z = _mm256_add_ps(z, _mm256_and_ps(e, keep));
        }
        inv[g] = 1.0f / hsum8(z);
    }
}

KVLENS_AVX512 void softmaxRowsAvx512(float* scores, int G, int64_t S, float* inv) {
    for (int g = 0; g < G; ++g) {
        float* row = scores + g * S;
        float mx = -std::numeric_limits<float>::infinity();
        for (int64_t j = 0; j < S; ++j) mx = std::max(mx, row[j]);
        const __m512 m = _mm512_set1_ps(mx);
        __m512 z = _mm512_setzero_ps();
        int64_t j = 0;
        for (; j + 16 <= S; j += 16) {
            const __m512 e = exp16(_mm512_sub_ps(_mm512_loadu_ps(row + j), m));
            _mm512_storeu_ps(row + j, e);
            z = _mm512_add_ps(z, e);
        }
        if (j < S) {
            const __mmask16 k = static_cast<__mmask16>((1u << (S - j)) - 1u);
            const __m512 e = exp16(_mm512_sub_ps(_mm512_mask_loadu_ps(m, k, row + j), m));
            _mm512_mask_storeu_ps(row + j, k, e);
            z = _mm512_add_ps(z, _mm512_maskz_mov_ps(k, e));
        }
        inv[g] = 1.0f / _mm512_reduce_add_ps(z);
    }
}

template <typename T, int DK>
KVLENS_AVX2 void attendGroupAvx2(const T* q, int64_t qs, int G, float scale, const T* kr, int64_t ks1, const T* vr,
                                 int64_t vs1, int64_t S, float* scores, float* qf, float* acc, T* o) {
    constexpr int NV = DK / 8;
    for (int g = 0; g < G; ++g)
        for (int d = 0; d < DK; ++d) qf[g * DK + d] = toFloat(q[g * qs + d]) * scale;
    for (int64_t j = 0; j < S; ++j) {
        __m256 k[NV];
        for (int v = 0; v < NV; ++v) k[v] = load8(kr + j * ks1 + 8 * v);
        for (int g = 0; g < G; ++g) {
            __m256 a = _mm256_mul_ps(load8(qf + g * DK), k[0]);
            for (int v = 1; v < NV; ++v) a = _mm256_fmadd_ps(load8(qf + g * DK + 8 * v), k[v], a);
            scores[g * S + j] = hsum8(a);
        }
    }
    float inv[64];
    softmaxRowsAvx2(scores, G, S, inv);
    // Each value row is read once for the whole group: the G rows' sums live in acc
    // (L1), each summed in the same order as alone.
    for (int i = 0; i < G * DK; i += 8) _mm256_storeu_ps(acc + i, _mm256_setzero_ps());
    for (int64_t j = 0; j < S; ++j) {
        __m256 vj[NV];
        for (int v = 0; v < NV; ++v) vj[v] = load8(vr + j * vs1 + 8 * v);
        for (int g = 0; g < G; ++g) {
            const __m256 pj = _mm256_set1_ps(scores[g * S + j]);
            float* a = acc + g * DK;
            for (int v = 0; v < NV; ++v) _mm256_storeu_ps(a + 8 * v, _mm256_fmadd_ps(pj, vj[v], _mm256_loadu_ps(a + 8 * v)));
        }
    }
    for (int g = 0; g < G; ++g) {
        const __m256 s = _mm256_set1_ps(inv[g]);
        float* a = acc + g * DK;
        for (int v = 0; v < NV; ++v) _mm256_storeu_ps(a + 8 * v, _mm256_mul_ps(_mm256_loadu_ps(a + 8 * v), s));
        for (int d = 0; d < DK; ++d) o[g * DK + d] = fromFloat<T>(a[d]);
    }
}

template <typename T, int DK>
KVLENS_AVX512 void attendGroupAvx512(const T* q, int64_t qs, int G, float scale, const T* kr, int64_t ks1,
                                     const T* vr, int64_t vs1, int64_t S, float* scores, float* qf, float* acc, T* o) {
    constexpr int NV = DK / 16;
    for (int g = 0; g < G; ++g)
        for (int d = 0; d < DK; ++d) qf[g * DK + d] = toFloat(q[g * qs + d]) * scale;
    for (int64_t j = 0; j < S; ++j) {
        __m512 k[NV];
        for (int v = 0; v < NV; ++v) k[v] = load16(kr + j * ks1 + 16 * v);
        for (int g = 0; g < G; ++g) {
            __m512 a = _mm512_mul_ps(load16(qf + g * DK), k[0]);
            for (int v = 1; v < NV; ++v) a = _mm512_fmadd_ps(load16(qf + g * DK + 16 * v), k[v], a);
            scores[g * S + j] = _mm512_reduce_add_ps(a);
        }
    }
    float inv[64];
    softmaxRowsAvx512(scores, G, S, inv);
    for (int i = 0; i < G * DK; i += 16) _mm512_storeu_ps(acc + i, _mm512_setzero_ps());
    for (int64_t j = 0; j < S; ++j) {
        __m512 vj[NV];
        for (int v = 0; v < NV; ++v) vj[v] = load16(vr + j * vs1 + 16 * v);
        for (int g = 0; g < G; ++g) {
            const __m512 pj = _mm512_set1_ps(scores[g * S + j]);
            float* a = acc + g * DK;
            for (int v = 0; v < NV; ++v)
                _mm512_storeu_ps(a + 16 * v, _mm512_fmadd_ps(pj, vj[v], _mm512_loadu_ps(a + 16 * v)));
        }
    }
    for (int g = 0; g < G; ++g) {
        const __m512 s = _mm512_set1_ps(inv[g]);
        float* a = acc + g * DK;
        for (int v = 0; v < NV; ++v) _mm512_storeu_ps(a + 16 * v, _mm512_mul_ps(_mm512_loadu_ps(a + 16 * v), s));
        for (int d = 0; d < DK; ++d) o[g * DK + d] = fromFloat<T>(a[d]);
    }
}
#pragma GCC diagnostic pop
#endif

// The group kernel this CPU runs for head dimension D (nullptr: the scalar rows).
template <typename T>
GroupFn<T> groupKernel(int64_t D) {
#if defined(__x86_64__)
    const CpuFeatures& f = CpuFeatures::detect();
    if (f.avx512f && D == 64) return &attendGroupAvx512<T, 64>;
    if (f.avx512f && D == 128) return &attendGroupAvx512<T, 128>;
    if (f.avx2 && D == 64) return &attendGroupAvx2<T, 64>;
    if (f.avx2 && D == 128) return &attendGroupAvx2<T, 128>;
#endif
    (void)D;
    return nullptr;
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
    if (const GroupFn<T> group = G <= kMaxGroup ? groupKernel<T>(D) : nullptr) {
        // One task per (query, KV head): its G query heads in one pass over the keys.
        const int64_t grain = std::max<int64_t>(1, 65536 / ((p0 + Tq) * D * G));
        at::parallel_for(0, Tq * KV, grain, [&](int64_t b, int64_t e) {
            std::vector<float> scores, qf(G * D), acc(G * D);
            for (int64_t task = b; task < e; ++task) {
                const int64_t t = task / KV, kv = task % KV, S = p0 + t + 1;
                scores.resize(static_cast<size_t>(G * S));
                group(qp + t * q.stride(0) + kv * G * q.stride(1), q.stride(1), static_cast<int>(G), scale,
                      kp + kv * k.stride(0), k.stride(1), vp + kv * v.stride(0), v.stride(1), S, scores.data(),
                      qf.data(), acc.data(), op + t * H * D + kv * G * D);
            }
        });
        return;
    }
    const int64_t grain = std::max<int64_t>(1, 65536 / ((p0 + Tq) * D));
    withHeadDim(D, [&](auto dk) {
        constexpr int DK = decltype(dk)::value;
        at::parallel_for(0, Tq * H, grain, [&](int64_t b, int64_t e) {
            std::vector<float> scores, qf(D), acc(D);
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
    if (const GroupFn<T> group = groupKernel<T>(D)) {
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
            std::vector<float> scores, qf, acc;
            for (int64_t r = b; r < e; ++r) {
                const auto [h, G] = runs[static_cast<size_t>(r)];
                const at::Tensor& kk = keys[headOf[h]];
                const at::Tensor& vv = values[headOf[h]];
                const int64_t S = kk.size(0);
                scores.resize(static_cast<size_t>(G * S));
                qf.resize(static_cast<size_t>(G * D));
                acc.resize(static_cast<size_t>(G * D));
                group(qp + h * q.stride(1), q.stride(1), static_cast<int>(G), scale,
                      reinterpret_cast<const T*>(kk.data_ptr()), kk.stride(0), reinterpret_cast<const T*>(vv.data_ptr()),
                      vv.stride(0), S, scores.data(), qf.data(), acc.data(), op + h * D);
            }
        });
        return;
    }
    const int64_t grain = std::max<int64_t>(1, 65536 / (longest * D));
    withHeadDim(D, [&](auto dk) {
        constexpr int DK = decltype(dk)::value;
        at::parallel_for(0, H, grain, [&](int64_t b, int64_t e) {
            std::vector<float> scores, qf(D), acc(D);
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

at::Tensor raggedAttention(const at::Tensor& q, const std::vector<at::Tensor>& keys,
                           const std::vector<at::Tensor>& values, const std::vector<int64_t>& headOf) {
    const int64_t H = q.size(1), D = q.size(2);
#ifdef KVLENS_WITH_CUDA_KERNELS
    if (at::Tensor out; raggedCuda(q, keys, values, headOf, out)) return out;
#endif
    bool cpu = cpuType(q) && q.size(0) == 1 && q.stride(2) == 1;
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
            at::Tensor p = at::softmax(at::matmul(qh, kk.t()) / std::sqrt(double(D)), -1);
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
