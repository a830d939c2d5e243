#include "engine/analysis/AttentionStats.h"

#include <ATen/Parallel.h>
#include <c10/core/InferenceMode.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "engine/compress/Capture.h"
#include "kernels/CausalAttention.h"
#include "kernels/LayerSelection.h"

namespace kvlens {

int64_t AttentionStats::fewestReaching(std::vector<float>& v, double target) {
    // Quickselect on the sum instead of the rank: keep the part of the range
    // that holds the answer, counting everything larger than it.
    size_t lo = 0, hi = v.size();
    int64_t taken = 0;
    // A relative slack absorbs rounding: 90% of a uniform row of 200 is 180 positions.
    double need = target * (1.0 - 1e-9);
    while (lo < hi && need > 0.0) {
        const float a = v[lo], b = v[lo + (hi - lo) / 2], c = v[hi - 1];
        const float pivot = std::max(std::min(a, b), std::min(std::max(a, b), c));
        // Three-way partition of [lo, hi): greater | equal | less.
        auto greaterEnd = std::partition(v.begin() + lo, v.begin() + hi, [&](float x) { return x > pivot; });
        auto equalEnd = std::partition(greaterEnd, v.begin() + hi, [&](float x) { return x == pivot; });
        const size_t nGreater = greaterEnd - (v.begin() + lo), nEqual = equalEnd - greaterEnd;
        if (nGreater + nEqual == 0) break;  // a NaN pivot: nothing left is comparable
        double sumGreater = 0.0;
        for (auto it = v.begin() + lo; it != greaterEnd; ++it) sumGreater += *it;
        if (sumGreater >= need && nGreater > 0) {
            hi = lo + nGreater;
            continue;
        }
        need -= sumGreater;
        taken += static_cast<int64_t>(nGreater);
        const double sumEqual = double(pivot) * double(nEqual);
        if (pivot > 0.0f && sumEqual >= need) {
            // Some of the equal values finish it.
            const double k = std::ceil(need / double(pivot));
            return taken + std::clamp<int64_t>(static_cast<int64_t>(k), 1, static_cast<int64_t>(nEqual));
        }
        need -= sumEqual;
        taken += static_cast<int64_t>(nEqual);
        lo += nGreater + nEqual;
    }
    return taken;
}

HeadAttentionSummary AttentionStats::ofRows(const float* probs, int64_t rows, int64_t cols,
                                            int64_t firstQueryPosition) {
    HeadAttentionSummary s;
    if (rows <= 0) return s;
    std::vector<float> row;
    int64_t used = 0;
    for (int64_t r = 0; r < rows; ++r) {
        const float* p = probs + r * cols;
        const int64_t seen = std::min(cols, firstQueryPosition + r + 1);
        double total = 0.0;
        for (int64_t j = 0; j < seen; ++j) total += p[j];
        if (!(total > 0.0)) continue;
        double entropy = 0.0, sink = 0.0, local = 0.0;
        for (int64_t j = 0; j < seen; ++j) {
            const double x = p[j] / total;
            if (x > 0.0) entropy -= x * std::log(x);
            if (j < kSinkPositions) sink += x;
            if (j >= seen - kLocalPositions) local += x;
        }
        row.assign(p, p + seen);
        ++used;
        s.entropy += entropy;
        s.sinkMass += sink;
        s.localMass += local;
        s.positions90 += double(fewestReaching(row, kMassShare * total));
    }
    if (used == 0) return s;  // no row with any attention: nothing to average
    s.entropy /= double(used);
    s.sinkMass /= double(used);
    s.localMass /= double(used);
    s.positions90 /= double(used);
    s.effectivePositions = std::exp(s.entropy);
    return s;
}

std::vector<LayerAttentionSummary> AttentionStats::fromCapture(const Capture& capture,
                                                               const ProgressFn& progress) {
    c10::InferenceMode guard;
    const int64_t L = capture.layers(), T = capture.promptLength(), H = capture.queryHeads(),
                  KV = capture.kvHeads(), D = capture.headDim(), G = H / KV;
    std::vector<LayerAttentionSummary> out(L);
    for (int64_t l = 0; l < L; ++l) {
        if (progress) progress(double(l) / double(L), "attention statistics, layer " + std::to_string(l));
        const at::Tensor& wq = capture.windowQueries(l);  // [H, W, D] fp32
        const int64_t W = wq.size(1);
        at::Tensor k = capture.keys(l).to(at::kFloat);  // [KV, T, D]
        at::Tensor scores = at::bmm(wq.reshape({KV, G * W, D}), k.transpose(1, 2)).mul_(1.0 / std::sqrt(double(D)));
        kernels::softcapLogits(scores, capture.attentionSoftcap());
        const at::Tensor masked = kernels::attentionMask(T - W, W, T, capture.slidingWindow(l), k.device());
        scores = scores.view({KV, G, W, T}).masked_fill_(masked, -std::numeric_limits<float>::infinity());
        at::Tensor probs = at::softmax(scores, -1).reshape({H, W, T}).to(at::kCPU).contiguous();
        const float* base = probs.data_ptr<float>();
        LayerAttentionSummary& layer = out[l];
        layer.heads.resize(H);
        at::parallel_for(0, H, 1, [&](int64_t h0, int64_t h1) {
            for (int64_t h = h0; h < h1; ++h) layer.heads[h] = ofRows(base + h * W * T, W, T, T - W);
        });
        for (const HeadAttentionSummary& h : layer.heads) {
            layer.mean.entropy += h.entropy / double(H);
            layer.mean.effectivePositions += h.effectivePositions / double(H);
            layer.mean.sinkMass += h.sinkMass / double(H);
            layer.mean.localMass += h.localMass / double(H);
            layer.mean.positions90 += h.positions90 / double(H);
        }
    }
    if (progress) progress(1.0, "attention statistics");
    return out;
}

}  // namespace kvlens
