#include "engine/compress/presses/SimLayerKvPress.h"

#include <algorithm>
#include <numeric>

#include "engine/compress/presses/PressScores.h"

namespace kvlens {

void SimLayerKvPress::fill(const Capture& capture, const PressParams& p, int64_t budget, Selection& s) const {
    const int64_t T = capture.promptLength(), sinks = std::min(p.sinks, budget);
    // validate() made sure the budget holds the sinks.
    std::vector<int32_t> lazyKeeps;
    for (int64_t i = 0; i < sinks; ++i) lazyKeeps.push_back(int32_t(i));
    for (int64_t i = T - (budget - sinks); i < T; ++i) lazyKeeps.push_back(int32_t(i));
    std::vector<int32_t> all(T);
    std::iota(all.begin(), all.end(), 0);
    for (int64_t l = 0; l < capture.layers(); ++l) {
        const std::vector<float> a = presses::lastQueryAttention(capture, l);
        double share = 0.0;
        for (int32_t i : lazyKeeps) share += a[i];
        const bool lazy = share > p.lazy;
        for (auto& head : s.kept[l]) head = lazy ? lazyKeeps : all;
        s.layerBudgets[l] = lazy ? budget : T;
    }
}

}  // namespace kvlens
