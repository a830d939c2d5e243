#include "engine/compress/presses/PressScores.h"

#include "kernels/LayerSelection.h"

#include <cmath>

namespace kvlens::presses {
namespace {

HeadScores toRows(const at::Tensor& scores /*[heads, n]*/) {
    const at::Tensor s = scores.to(at::kCPU, at::kFloat).contiguous();
    HeadScores out(s.size(0));
    const float* p = s.data_ptr<float>();
    for (int64_t h = 0; h < s.size(0); ++h)
        out[h].assign(p + h * s.size(1), p + (h + 1) * s.size(1));
    return out;
}

HeadScores grouped(const at::Tensor& perQueryHead /*[H, n] fp32*/, int64_t kvHeads, GqaMode mode) {
    return toRows(kernels::groupVotes(perQueryHead, kvHeads, mode == GqaMode::QueryHead));
}

// The fused kernel serves captures on a GPU when the build has its CUDA body;
// elsewhere the capture's cached votes make re-selection cheap.
bool fusedOnDevice(const Capture& capture) {
    return kernels::hasCudaBodies() && capture.keys(0).is_cuda();
}

}  // namespace

kernels::VoteSpec voteSpec(const PressParams& p) {
    kernels::VoteSpec spec;
    spec.window = p.window;
    spec.kernel = p.kernel;
    spec.pooling =
        p.pooling == Pooling::Max ? kernels::VotePooling::Max : kernels::VotePooling::Avg;
    spec.perQueryHead = p.gqa == GqaMode::QueryHead;
    return spec;
}

HeadScores windowVotes(const Capture& capture, int64_t layer, int64_t window, GqaMode mode) {
    return grouped(capture.votes(layer, window), capture.kvHeads(), mode);
}

HeadScores pooledVotes(const Capture& capture, int64_t layer, const PressParams& p) {
    if (fusedOnDevice(capture)) {
        return toRows(
            kernels::layerScores(capture.windowQueries(layer), capture.keys(layer), voteSpec(p)));
    }
    HeadScores votes = windowVotes(capture, layer, p.window, p.gqa);
    for (auto& row : votes) row = pool1d(row, p.kernel, p.pooling);
    return votes;
}

std::vector<std::vector<int32_t>> voteSelection(const Capture& capture, int64_t layer,
                                                const PressParams& p, int64_t prefixBudget) {
    const kernels::VoteSpec spec = voteSpec(p);
    const at::Tensor kept =
        fusedOnDevice(capture)
            ? kernels::layerSelection(capture.windowQueries(layer), capture.keys(layer), spec,
                                      prefixBudget)
            : kernels::selectFromVotes(kernels::groupVotes(capture.votes(layer, p.window),
                                                           capture.kvHeads(), spec.perQueryHead),
                                       spec, prefixBudget);
    std::vector<std::vector<int32_t>> rows(kept.size(0));
    const int32_t* k = kept.data_ptr<int32_t>();
    for (int64_t h = 0; h < kept.size(0); ++h)
        rows[h].assign(k + h * kept.size(1), k + (h + 1) * kept.size(1));
    return rows;
}

HeadScores accumulatedAttention(const Capture& capture, int64_t layer, int64_t window,
                                GqaMode mode) {
    const at::Tensor& s = capture.h2oScores(layer);
    return grouped(s.narrow(1, 0, capture.promptLength() - window).contiguous(), capture.kvHeads(),
                   mode);
}

at::Tensor negativeKeyNorms(const at::Tensor& keys) { return keys.to(at::kFloat).norm(2, {-1}).neg(); }

at::Tensor negativeAnchorCosines(const at::Tensor& keys) {
    const at::Tensor k = keys.to(at::kFloat);
    const at::Tensor unit = k / k.norm(2, {-1}, /*keepdim=*/true).clamp_min(1e-12);  // [..., n, D]
    const at::Tensor anchor = unit.mean({-2}, /*keepdim=*/true);                      // [..., 1, D]
    const at::Tensor anchorUnit = anchor / anchor.norm(2, {-1}, true).clamp_min(1e-12);
    return (unit * anchorUnit).sum({-1}).neg();                                      // [..., n]
}

// The key-based and last-query scores depend on the capture alone, not on the budget:
// each layer's is computed once and kept in the capture (Capture::memoScores), so a new
// budget costs only the top-k.
HeadScores keyNormScores(const Capture& capture, int64_t layer) {
    return toRows(capture.memoScores("knorm", layer, [&] {
        return negativeKeyNorms(capture.keys(layer).narrow(1, 0, capture.promptLength()));  // [KV, T]
    }));
}

HeadScores keyDiffScores(const Capture& capture, int64_t layer) {
    return toRows(capture.memoScores("keydiff", layer, [&] {
        return negativeAnchorCosines(capture.keys(layer).narrow(1, 0, capture.promptLength()));  // [KV, T]
    }));
}

std::vector<float> lastQueryAttention(const Capture& capture, int64_t layer) {
    return toRows(capture.memoScores("tova", layer, [&] {
        const int64_t T = capture.promptLength(), H = capture.queryHeads(), KV = capture.kvHeads();
        const at::Tensor& q = capture.windowQueries(layer);  // [H, Wc, D] fp32, the last row is T-1
        const at::Tensor k = capture.keys(layer).narrow(1, 0, T).to(at::kFloat);  // [KV, T, D]
        // Query head h reads KV head h / (H / KV).
        const at::Tensor last = q.select(1, q.size(1) - 1).to(k.device()).view({KV, H / KV, capture.headDim()});
        const at::Tensor logits = at::matmul(last, k.transpose(1, 2)) / std::sqrt(double(capture.headDim()));
        return at::softmax(logits, -1).view({H, T}).mean({0}, /*keepdim=*/true);  // [1, T]
    }))[0];
}

std::vector<float> pool1d(const std::vector<float>& scores, int64_t kernel, Pooling pooling) {
    return kernels::pool1d(
        scores.data(), static_cast<int64_t>(scores.size()), kernel,
        pooling == Pooling::Max ? kernels::VotePooling::Max : kernels::VotePooling::Avg);
}

std::vector<int32_t> topPositions(const std::vector<float>& scores, int64_t k) {
    return kernels::topPositions(scores.data(), static_cast<int64_t>(scores.size()), k);
}

std::vector<int32_t> withWindow(std::vector<int32_t> prefix, int64_t promptLength, int64_t window) {
    prefix.reserve(prefix.size() + window);
    for (int64_t p = promptLength - window; p < promptLength; ++p)
        prefix.push_back(static_cast<int32_t>(p));
    return prefix;
}

}  // namespace kvlens::presses
