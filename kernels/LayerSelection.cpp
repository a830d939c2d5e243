#include "kernels/LayerSelection.h"

#include "kernels/CausalAttention.h"

#include <ATen/Parallel.h>
#include <c10/core/InferenceMode.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>

#ifdef KVLENS_WITH_CUDA_KERNELS
#include <c10/cuda/CUDAGuard.h>

#include "kernels/CudaInterop.h"
#include "kernels/cuda/LayerSelectionCuda.h"
#endif

namespace kvlens::kernels {
namespace {

void checkShapes(const at::Tensor& windowQueries, const at::Tensor& keys, int64_t window) {
    if (windowQueries.dim() != 3 || keys.dim() != 3 || windowQueries.size(2) != keys.size(2) ||
        keys.size(0) < 1 || windowQueries.size(0) % keys.size(0) != 0) {
        throw std::invalid_argument(
            "layer selection: window queries [H, W, D] and keys [KV, T, D] "
            "with H a multiple of KV are needed");
    }
    if (window < 1 || window > windowQueries.size(1) || window >= keys.size(1)) {
        throw std::invalid_argument("layer selection: window " + std::to_string(window) +
                                    " needs 1 .. " + std::to_string(windowQueries.size(1)) +
                                    " window queries and a longer prompt than " +
                                    std::to_string(keys.size(1)));
    }
}

#ifdef KVLENS_WITH_CUDA_KERNELS
bool cudaServes(const at::Tensor& keys) {
    return keys.is_cuda() && cuda::elementTypeOf(keys.scalar_type()) && keys.stride(2) == 1 &&
           keys.size(2) <= cuda::kMaxVoteHeadDim;
}

// The fused CUDA scores [heads, T - W] fp32 on the keys' device.
at::Tensor cudaScores(const at::Tensor& windowQueries, const at::Tensor& keys,
                      const VoteSpec& spec) {
    const c10::cuda::CUDAGuard guard(keys.device());
    const int64_t W = spec.window;
    const at::Tensor q = windowQueries.narrow(1, windowQueries.size(1) - W, W)
                             .to(keys.device(), at::kFloat)
                             .contiguous();
    cuda::VoteProblem p;
    p.queries = q.data_ptr<float>();
    p.keys = keys.data_ptr();
    p.keyType = *cuda::elementTypeOf(keys.scalar_type());
    p.keyHeadStride = keys.stride(0);
    p.keyRowStride = keys.stride(1);
    p.queryHeads = static_cast<int>(q.size(0));
    p.kvHeads = static_cast<int>(keys.size(0));
    p.headDim = static_cast<int>(keys.size(2));
    p.window = static_cast<int>(W);
    p.promptLength = keys.size(1);
    p.kernel = static_cast<int>(spec.kernel);
    p.maxPool = spec.pooling == VotePooling::Max;
    p.perQueryHead = spec.perQueryHead;
    const auto byteOptions = keys.options().dtype(at::kByte);
    at::Tensor scores = at::empty({p.heads(), p.prefix()}, keys.options().dtype(at::kFloat));
    at::Tensor work =
        at::empty({static_cast<int64_t>(cuda::layerScoresWorkspaceBytes(p))}, byteOptions);
    cuda::check(cuda::launchLayerScores(p, scores.data_ptr<float>(), work.data_ptr(),
                                        cuda::currentStream(keys.device())),
                "layer selection");
    return scores;
}
#endif

}  // namespace

at::Tensor attentionMask(int64_t first, int64_t rows, int64_t keys, int64_t slidingWindow,
                         const at::Device& device) {
    const auto opts = at::TensorOptions().dtype(at::kLong).device(device);
    const at::Tensor qpos = at::arange(first, first + rows, opts).unsqueeze(1), kpos = at::arange(0, keys, opts).unsqueeze(0);
    at::Tensor masked = kpos > qpos;  // [rows, keys]
    if (slidingWindow > 0) masked.logical_or_(kpos <= qpos - slidingWindow);
    return masked;
}

at::Tensor windowVotes(const at::Tensor& windowQueries, const at::Tensor& keys, int64_t window,
                       const at::Tensor& rowWeights, int64_t slidingWindow, double softcap) {
    c10::InferenceMode guard;
    checkShapes(windowQueries, keys, window);
    const int64_t T = keys.size(1), H = windowQueries.size(0), KV = keys.size(0), D = keys.size(2);
    const int64_t G = H / KV;
    const at::Tensor& wq = windowQueries;
    at::Tensor q = wq.narrow(1, wq.size(1) - window, window)
                       .to(keys.device(), at::kFloat)
                       .reshape({KV, G * window, D});
    at::Tensor k = keys.to(at::kFloat);  // [KV, T, D]
    at::Tensor scores = at::bmm(q, k.transpose(1, 2)).mul_(1.0 / std::sqrt(double(D)));
    softcapLogits(scores, softcap);  // before the mask, as the model's attention
    // Query i of the window sits at position T - window + i and sees keys up to it (and,
    // with a sliding window, after its position - slidingWindow).
    const at::Tensor masked = attentionMask(T - window, window, T, slidingWindow, k.device());  // [window, T]
    scores = scores.view({KV, G, window, T})
                 .masked_fill_(masked, -std::numeric_limits<float>::infinity());
    at::Tensor probs = at::softmax(scores, -1);
    if (rowWeights.defined()) probs.mul_(rowWeights.to(probs.device(), at::kFloat).view({1, 1, window, 1}));
    return probs.sum(2).reshape({H, T}).narrow(1, 0, T - window).contiguous();
}

at::Tensor groupVotes(const at::Tensor& votes, int64_t kvHeads, bool perQueryHead) {
    if (perQueryHead) return votes;
    const int64_t H = votes.size(0), n = votes.size(1);
    return votes.view({kvHeads, H / kvHeads, n}).mean(1);
}

std::vector<float> pool1d(const float* scores, int64_t n, int64_t kernel, VotePooling pooling) {
    const int64_t pad = kernel / 2;
    std::vector<float> out(n);
    if (pooling == VotePooling::Avg) {
        // Each window summed on its own, left to right, in double with TwoSum
        // compensation (exact for any window of floats short of denormal spreads),
        // divided by the kernel (pads count as zeros). A running sum would leave
        // residues (+-1e-17 where the window holds only zeros) that break the
        // "equal scores: lower position wins" rule; this costs n * kernel adds.
        for (int64_t i = 0; i < n; ++i) {
            double sum = 0.0, compensation = 0.0;
            for (int64_t j = std::max<int64_t>(0, i - pad); j <= std::min(n - 1, i + pad); ++j) {
                // Knuth's TwoSum: the rounding error of sum + x, without a branch.
                const double x = scores[j];
                const double t = sum + x;
                const double back = t - sum;
                compensation += (sum - (t - back)) + (x - back);
                sum = t;
            }
            out[i] = static_cast<float>((sum + compensation) / double(kernel));
        }
        return out;
    }
    for (int64_t i = 0; i < n; ++i) {
        float m = -std::numeric_limits<float>::infinity();
        for (int64_t j = std::max<int64_t>(0, i - pad); j <= std::min(n - 1, i + pad); ++j) {
            m = std::max(m, scores[j]);
        }
        out[i] = m;
    }
    return out;
}

namespace {

template <typename Real>
std::vector<int32_t> topOf(const Real* scores, int64_t n, int64_t k) {
    k = std::clamp<int64_t>(k, 0, n);
    std::vector<int32_t> idx(n);
    std::iota(idx.begin(), idx.end(), 0);
    // NaN (never produced from finite inputs) ranks below everything, keeping
    // the order strict-weak so nth_element stays defined.
    auto key = [&](int32_t i) {
        return std::isnan(scores[i]) ? -std::numeric_limits<Real>::infinity() : scores[i];
    };
    auto before = [&](int32_t a, int32_t b) {
        const Real ka = key(a), kb = key(b);
        return ka > kb || (ka == kb && a < b);
    };
    if (k < n) std::nth_element(idx.begin(), idx.begin() + k, idx.end(), before);
    idx.resize(k);
    std::sort(idx.begin(), idx.end());
    return idx;
}

}  // namespace

std::vector<int32_t> topPositions(const float* scores, int64_t n, int64_t k) { return topOf(scores, n, k); }

std::vector<int32_t> topPositions(const double* scores, int64_t n, int64_t k) { return topOf(scores, n, k); }

namespace {

// Rows per thread: a thread start costs about what pooling or ranking 64K
// scores does, so short selections stay on one thread.
int64_t rowGrain(int64_t n) {
    return std::max<int64_t>(1, (int64_t(1) << 16) / std::max<int64_t>(n, 1));
}

// pool1d of every row of grouped votes [heads, n] -> [heads, n] fp32 on the CPU.
at::Tensor poolRows(const at::Tensor& votes, const VoteSpec& spec) {
    const at::Tensor v = votes.to(at::kCPU, at::kFloat).contiguous();
    const int64_t heads = v.size(0), n = v.size(1);
    at::Tensor pooled = at::empty({heads, n}, at::kFloat);
    const float* vp = v.data_ptr<float>();
    float* pp = pooled.data_ptr<float>();
    at::parallel_for(0, heads, rowGrain(n), [&](int64_t h0, int64_t h1) {
        for (int64_t h = h0; h < h1; ++h) {
            const std::vector<float> row = pool1d(vp + h * n, n, spec.kernel, spec.pooling);
            std::copy(row.begin(), row.end(), pp + h * n);
        }
    });
    return pooled;
}

}  // namespace

at::Tensor keptPositions(const at::Tensor& scores, int64_t k, int64_t window) {
    c10::InferenceMode guard;
    if (scores.dim() != 2 || window < 0) {
        throw std::invalid_argument(
            "kept positions: scores [rows, n] and a window >= 0 are needed");
    }
    const int64_t rows = scores.size(0), n = scores.size(1), take = std::clamp<int64_t>(k, 0, n);
#ifdef KVLENS_WITH_CUDA_KERNELS
    if (scores.is_cuda() && rows > 0) {
        const c10::cuda::CUDAGuard deviceGuard(scores.device());
        const at::Tensor s = scores.to(at::kFloat).contiguous();
        at::Tensor kept = at::empty({rows, take + window}, s.options().dtype(at::kInt));
        cuda::check(cuda::launchTopPositions(s.data_ptr<float>(), static_cast<int>(rows), n, take,
                                             static_cast<int>(window), kept.data_ptr<int32_t>(),
                                             cuda::currentStream(s.device())),
                    "kept positions");
        return kept.to(at::kCPU);
    }
#endif
    const at::Tensor s = scores.to(at::kCPU, at::kFloat).contiguous();
    at::Tensor kept = at::empty({rows, take + window}, at::kInt);
    const float* sp = s.data_ptr<float>();
    int32_t* kp = kept.data_ptr<int32_t>();
    at::parallel_for(0, rows, rowGrain(n), [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
            const std::vector<int32_t> top = topPositions(sp + r * n, n, take);
            int32_t* row = kp + r * (take + window);
            std::copy(top.begin(), top.end(), row);
            for (int64_t w = 0; w < window; ++w) row[take + w] = static_cast<int32_t>(n + w);
        }
    });
    return kept;
}

at::Tensor selectFromVotes(const at::Tensor& groupedVotes, const VoteSpec& spec,
                           int64_t prefixBudget) {
    return keptPositions(poolRows(groupedVotes, spec), prefixBudget, spec.window);
}

at::Tensor layerScores(const at::Tensor& windowQueries, const at::Tensor& keys,
                       const VoteSpec& spec) {
    c10::InferenceMode guard;
    checkShapes(windowQueries, keys, spec.window);
#ifdef KVLENS_WITH_CUDA_KERNELS
    // The fused kernel has no sliding window: a local layer takes the LibTorch steps.
    if (spec.slidingWindow == 0 && spec.softcap == 0.0 && cudaServes(keys)) return cudaScores(windowQueries, keys, spec);
#endif
    const at::Tensor votes = windowVotes(windowQueries, keys, spec.window, {}, spec.slidingWindow, spec.softcap);
    return poolRows(groupVotes(votes, keys.size(0), spec.perQueryHead), spec).to(keys.device());
}

at::Tensor layerSelection(const at::Tensor& windowQueries, const at::Tensor& keys,
                          const VoteSpec& spec, int64_t prefixBudget) {
    return keptPositions(layerScores(windowQueries, keys, spec), prefixBudget, spec.window);
}

bool hasCudaBodies() {
#ifdef KVLENS_WITH_CUDA_KERNELS
    return true;
#else
    return false;
#endif
}

}  // namespace kvlens::kernels
