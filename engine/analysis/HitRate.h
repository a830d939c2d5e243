// The SnapKV paper's hit rate: decode with the full cache and, at every step,
// take each query head's k most-attended prompt positions; a method's hit rate
// is the share of those its selection kept. The decode runs once; any number
// of selections are then scored against it.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "engine/model/ModelWeights.h"
#include "core/Selection.h"

namespace kvlens {

class Capture;
class ForwardObserver;
class LlamaModel;

class HitRate {
public:
    struct Result {
        std::vector<double> perLayer;               // hits / (steps * heads * k), per layer
        std::vector<double> perLayerOutsideWindow;  // counting only top-k positions before the window
        double mean = 0.0, meanOutsideWindow = 0.0;  // over layers
    };

    // Greedy-decodes `steps` tokens after the prompt on the full cache and
    // records each step's top-`k` prompt positions per layer and query head
    // (ranked by the attention logit, which orders them as the softmax does).
    HitRate(LlamaModel& model, std::shared_ptr<const Capture> capture, int64_t steps, int64_t k,
            const ProgressFn& progress = {});
    // Without a decode of its own: the caller decodes `steps` tokens on a full
    // cache after the prompt and passes stepObserver(s) to step s's decode.
    HitRate(std::shared_ptr<const Capture> capture, int64_t steps, int64_t k);
    ~HitRate();
    HitRate(const HitRate&) = delete;  // its observer points into it
    HitRate& operator=(const HitRate&) = delete;
    ForwardObserver* stepObserver(int64_t step);

    // The hit rate of `selection` (made on the same capture). Positions at or
    // after promptLength - `window` are the observation window that window
    // methods always keep; the outside-window figure leaves them out.
    Result of(const Selection& selection, int64_t window) const;

    int64_t steps() const { return steps_; }
    int64_t k() const { return k_; }
    // The recorded top-k positions of one step, layer and query head.
    const int32_t* topPositions(int64_t step, int64_t layer, int64_t head) const;

private:
    std::shared_ptr<const Capture> capture_;
    int64_t steps_, k_, layers_, heads_;
    std::vector<int32_t> top_;  // [steps, layers, heads, k]
    std::unique_ptr<ForwardObserver> observer_;
};

}  // namespace kvlens
