#include "engine/presses/PressScores.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace kvlens::presses {
namespace {

HeadScores grouped(const at::Tensor& perQueryHead /*[H, n] fp32*/, int64_t kvHeads, GqaMode mode) {
    at::Tensor s = perQueryHead;
    if (mode == GqaMode::KvHead) {
        const int64_t H = s.size(0), n = s.size(1);
        s = s.view({kvHeads, H / kvHeads, n}).mean(1);
    }
    s = s.to(at::kFloat).to(at::kCPU).contiguous();
    HeadScores out(s.size(0));
    const float* p = s.data_ptr<float>();
    for (int64_t h = 0; h < s.size(0); ++h) out[h].assign(p + h * s.size(1), p + (h + 1) * s.size(1));
    return out;
}

}  // namespace

HeadScores windowVotes(const Capture& capture, int64_t layer, int64_t window, GqaMode mode) {
    return grouped(capture.votes(layer, window), capture.kvHeads(), mode);
}

HeadScores accumulatedAttention(const Capture& capture, int64_t layer, int64_t window, GqaMode mode) {
    const at::Tensor& s = capture.h2oScores(layer);
    return grouped(s.narrow(1, 0, capture.promptLength() - window).contiguous(), capture.kvHeads(), mode);
}

std::vector<float> pool1d(const std::vector<float>& scores, int64_t kernel, Pooling pooling) {
    const int64_t n = static_cast<int64_t>(scores.size()), pad = kernel / 2;
    std::vector<float> out(n);
    if (pooling == Pooling::Avg) {
        // Sliding sum in double: the window's sum divided by the kernel (pads are zeros).
        double sum = 0.0;
        for (int64_t j = 0; j < std::min(n, pad + 1); ++j) sum += scores[j];
        for (int64_t i = 0; i < n; ++i) {
            out[i] = static_cast<float>(sum / double(kernel));
            const int64_t enter = i + pad + 1, leave = i - pad;
            if (enter < n) sum += scores[enter];
            if (leave >= 0) sum -= scores[leave];
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

std::vector<int32_t> topPositions(const std::vector<float>& scores, int64_t k) {
    const int64_t n = static_cast<int64_t>(scores.size());
    k = std::clamp<int64_t>(k, 0, n);
    std::vector<int32_t> idx(n);
    std::iota(idx.begin(), idx.end(), 0);
    // NaN (never produced from finite inputs) ranks below everything, keeping
    // the order strict-weak so nth_element stays defined.
    auto key = [&](int32_t i) {
        return std::isnan(scores[i]) ? -std::numeric_limits<float>::infinity() : scores[i];
    };
    auto before = [&](int32_t a, int32_t b) {
        const float ka = key(a), kb = key(b);
        return ka > kb || (ka == kb && a < b);
    };
    if (k < n) std::nth_element(idx.begin(), idx.begin() + k, idx.end(), before);
    idx.resize(k);
    std::sort(idx.begin(), idx.end());
    return idx;
}

std::vector<int32_t> withWindow(std::vector<int32_t> prefix, int64_t promptLength, int64_t window) {
    prefix.reserve(prefix.size() + window);
    for (int64_t p = promptLength - window; p < promptLength; ++p) prefix.push_back(static_cast<int32_t>(p));
    return prefix;
}

}  // namespace kvlens::presses
