#include "engine/compress/presses/NonCausalReplayWork.h"

#include <algorithm>

#include "core/PressParams.h"
#include "engine/model/LlamaModel.h"

namespace kvlens {
namespace {

// Non-causal chunked attention over a replayed prompt: each query of [lo, hi) against the keys
// of its own chunk in the filled cache.
class NonCausalAccumulator : public ForwardObserver {
public:
    NonCausalAccumulator(const KvCache& cache, int64_t layers, int64_t chunk, int64_t lo, int64_t hi)
        : sums(layers), cache_(cache), chunk_(chunk), lo_(lo), hi_(hi) {}
    void onQueries(int64_t layer, const at::Tensor& q, int64_t p0) override {
        const int64_t a = std::max(p0, lo_), b = std::min(p0 + q.size(0), hi_);
        if (a >= b) return;
        const int64_t H = q.size(1), D = q.size(2);
        const at::Tensor keys = cache_.keys(layer);  // [KV, capacity, D]
        const int64_t KV = keys.size(0), G = H / KV;
        if (!sums[layer].defined()) sums[layer] = at::zeros({H, hi_ - lo_}, q.options().dtype(at::kFloat));
        for (int64_t c0 = a; c0 < b;) {
            const int64_t start = lo_ + (c0 - lo_) / chunk_ * chunk_, end = std::min(start + chunk_, hi_);
            const int64_t c1 = std::min(b, end), m = c1 - c0, kc = end - start;
            // Query head h reads KV head h / G: [m, H, D] -> [KV, G * m, D].
            const at::Tensor qs =
                q.narrow(0, c0 - p0, m).to(at::kFloat).permute({1, 0, 2}).reshape({KV, G * m, D});
            const at::Tensor ks = keys.narrow(1, start, kc).to(at::kFloat);  // [KV, kc, D]
            const at::Tensor prob = at::softmax(at::bmm(qs, ks.transpose(1, 2)), -1);  // [KV, G*m, kc]
            sums[layer].narrow(1, start - lo_, kc).add_(prob.view({KV, G, m, kc}).sum(2).reshape({H, kc}));
            c0 = c1;
        }
    }

    // Per layer [KV, hi - lo]: the short last chunk's padding share added, the query
    // heads of each KV head averaged.
    at::Tensor finished(int64_t layer, int64_t kvHeads) const {
        at::Tensor s = sums[layer].clone();
        const int64_t n = hi_ - lo_, last = n % chunk_;
        if (last > 0) s.narrow(1, n - last, last).add_(double(chunk_ - last) / double(chunk_));
        return s.view({kvHeads, s.size(0) / kvHeads, n}).mean(1);
    }

    std::vector<at::Tensor> sums;  // [H, hi - lo] fp32

private:
    const KvCache& cache_;
    int64_t chunk_, lo_, hi_;
};

}  // namespace

std::string NonCausalReplayWork::key(int64_t chunk, int64_t lo, int64_t hi) {
    return "noncausal:" + std::to_string(chunk) + ":" + std::to_string(lo) + ":" + std::to_string(hi);
}

std::string NonCausalReplayWork::pending(const Capture& capture, const PressParams& params) const {
    const int64_t T = capture.promptLength();
    if (!params.ranksBy("noncausal") || params.resolveBudget(T) >= T) return "";
    // (Bad settings say so in keepScoresFor's validation.)
    const auto [lo, hi] = params.rankedSpan(T);
    if (params.attnChunk < 1 || lo >= hi || capture.nonCausalAttention(0, params.attnChunk, lo, hi).defined())
        return "";
    return "non-causal attention (chunks of " + std::to_string(params.attnChunk) + ", a replay of the prompt)";
}

void NonCausalReplayWork::run(const Capture& capture, LlamaModel& model, const PressParams& params,
                              const ProgressFn& progress) const {
    const auto [lo, hi] = params.rankedSpan(capture.promptLength());
    NonCausalAccumulator acc(capture.cache(), capture.layers(), params.attnChunk, lo, hi);
    model.replay(capture.prompt(), cache(capture), acc, progress);
    std::vector<at::Tensor> done(capture.layers());
    for (int64_t l = 0; l < capture.layers(); ++l) {
        done[l] = acc.finished(l, capture.kvHeads()).contiguous();
        requireFinite(done[l], l, "KV head", "non-causal attention", kPrefill);
    }
    store(capture, key(params.attnChunk, lo, hi), done);
}

}  // namespace kvlens
