#include "engine/analysis/HitRate.h"

#include <c10/core/InferenceMode.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "engine/compress/Capture.h"
#include "engine/compress/CompressedCache.h"
#include "core/Error.h"
#include "engine/model/LlamaModel.h"
#include "engine/model/Sampler.h"
#include "engine/compress/presses/Press.h"
#include "kernels/CausalAttention.h"

namespace kvlens {
namespace {

// Records, for one decode step, the top-k prompt positions of every layer and query head.
class TopPositionsObserver : public ForwardObserver {
public:
    TopPositionsObserver(const Capture& capture, int64_t k, std::vector<int32_t>& top)
        : capture_(capture), k_(k), top_(top) {}

    void beginStep(int64_t step) { step_ = step; }

    void onQueries(int64_t layer, const at::Tensor& q, int64_t position) override {
        const int64_t H = capture_.queryHeads(), D = capture_.headDim();
        // Each query head's fp32 logits over the prompt keys, read where they lie.
        at::Tensor logits = kernels::queryKeyScores(q.reshape({H, D}), capture_.keys(layer));  // [H, T]
        const int64_t w = capture_.slidingWindow(layer);
        const int64_t hidden = w > 0 ? std::clamp<int64_t>(position - w + 1, 0, logits.size(1)) : 0;
        if (hidden > 0) logits.narrow(1, 0, hidden).fill_(-std::numeric_limits<float>::infinity());
        auto [values, indices] = logits.topk(k_, -1, true, true);
        // A local layer's query reaches only its window: a top-k place it cannot fill is -1.
        if (hidden > 0) indices.masked_fill_(values.isinf(), -1);
        at::Tensor idx = indices.to(at::kInt).to(at::kCPU).contiguous();
        int32_t* dst = top_.data() + ((step_ * capture_.layers() + layer) * H) * k_;
        std::copy(idx.data_ptr<int32_t>(), idx.data_ptr<int32_t>() + H * k_, dst);
    }

private:
    const Capture& capture_;
    int64_t k_;
    std::vector<int32_t>& top_;
    int64_t step_ = 0;
};

}  // namespace

HitRate::HitRate(std::shared_ptr<const Capture> capture, int64_t steps, int64_t k)
    : capture_(std::move(capture)), steps_(steps), k_(k) {
    const Capture& c = *capture_;
    layers_ = c.layers();
    heads_ = c.queryHeads();
    if (c.prompt().empty()) throw Error("the hit rate needs a capture made by a model prefill");
    if (steps_ < 1) throw Error("the hit rate needs at least 1 decode step");
    if (k_ < 1 || k_ > c.promptLength()) {
        throw Error("--hit-k " + std::to_string(k_) + " must be between 1 and the prompt's " +
                    std::to_string(c.promptLength()) + " tokens");
    }
    top_.assign(steps_ * layers_ * heads_ * k_, 0);
    observer_ = std::make_unique<TopPositionsObserver>(c, k_, top_);
}

HitRate::~HitRate() = default;

ForwardObserver* HitRate::stepObserver(int64_t step) {
    if (step < 0 || step >= steps_) throw Error("hit rate: step " + std::to_string(step) + " is out of range");
    static_cast<TopPositionsObserver*>(observer_.get())->beginStep(step);
    return observer_.get();
}

HitRate::HitRate(LlamaModel& model, std::shared_ptr<const Capture> capture, int64_t steps, int64_t k,
                 const ProgressFn& progress)
    : HitRate(std::move(capture), steps, k) {
    c10::InferenceMode guard;
    const Capture& c = *capture_;
    const int64_t room = model.config().contextLength - c.promptLength();
    if (steps_ > room) {
        throw Error("-n " + std::to_string(steps_) + " does not fit: the prompt leaves " + std::to_string(room) +
                    " tokens of the model's context");
    }
    PressParams full;
    full.method = "full";
    CompressedCache cache(c, Press::create("full")->select(c, full), steps_);
    int32_t token = Sampler::argmax(c.lastLogits().data_ptr<float>(), c.lastLogits().numel());
    for (int64_t s = 0; s < steps_; ++s) {
        if (progress) progress(double(s) / double(steps_), "hit rate: decode step " + std::to_string(s + 1));
        at::Tensor logits = model.decode(token, cache, stepObserver(s));
        token = Sampler::argmax(logits.data_ptr<float>(), logits.numel());
    }
    if (progress) progress(1.0, "hit rate");
}

const int32_t* HitRate::topPositions(int64_t step, int64_t layer, int64_t head) const {
    return top_.data() + ((step * layers_ + layer) * heads_ + head) * k_;
}

HitRate::Result HitRate::of(const Selection& selection, int64_t window) const {
    const int64_t T = capture_->promptLength();
    if (selection.layers() != layers_ || selection.queryHeads != heads_ || selection.promptLength != T) {
        throw Error("the selection was made on another prompt or model than the hit rate's");
    }
    const int64_t windowStart = T - std::clamp<int64_t>(window, 0, T);
    Result r;
    std::vector<uint8_t> kept(T);
    for (int64_t l = 0; l < layers_; ++l) {
        int64_t hits = 0, total = 0, outsideHits = 0, outsideTotal = 0;
        for (int64_t h = 0; h < heads_; ++h) {
            std::fill(kept.begin(), kept.end(), 0);
            for (int32_t p : selection.kept[l][selection.headOf(h)]) kept[p] = 1;
            for (int64_t s = 0; s < steps_; ++s) {
                const int32_t* top = topPositions(s, l, h);
                for (int64_t i = 0; i < k_; ++i) {
                    if (top[i] < 0) continue;  // past a local layer's window
                    const bool hit = kept[top[i]] != 0;
                    hits += hit;
                    ++total;
                    if (top[i] < windowStart) {
                        outsideHits += hit;
                        ++outsideTotal;
                    }
                }
            }
        }
        r.perLayer.push_back(total ? double(hits) / double(total) : 1.0);  // a window past the prompt: nothing to miss
        // No top-k position outside the window: nothing to miss there.
        r.perLayerOutsideWindow.push_back(outsideTotal ? double(outsideHits) / double(outsideTotal) : 1.0);
        r.mean += r.perLayer.back() / double(layers_);
        r.meanOutsideWindow += r.perLayerOutsideWindow.back() / double(layers_);
    }
    return r;
}

}  // namespace kvlens
