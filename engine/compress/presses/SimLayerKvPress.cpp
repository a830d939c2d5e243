#include "engine/compress/presses/SimLayerKvPress.h"

#include <algorithm>
#include <numeric>

#include "engine/compress/presses/PressScores.h"

namespace kvlens {

namespace {

// The positions a lazy layer keeps: the first min(sinks, budget) and the rest of the budget's
// most recent.
std::vector<int32_t> lazyKeeps(int64_t T, int64_t sinks, int64_t budget) {
    sinks = std::min(sinks, budget);
    std::vector<int32_t> keeps;
    for (int64_t i = 0; i < sinks; ++i) keeps.push_back(int32_t(i));
    for (int64_t i = T - (budget - sinks); i < T; ++i) keeps.push_back(int32_t(i));
    return keeps;
}

}  // namespace

std::vector<bool> SimLayerKvPress::lazyLayers(const Capture& capture, const PressParams& p, int64_t budget) {
    const std::vector<int32_t> keeps = lazyKeeps(capture.promptLength(), p.sinks, budget);
    std::vector<bool> lazy;
    for (int64_t l = 0; l < capture.layers(); ++l) {
        const std::vector<float> a = presses::lastQueryAttention(capture, l);
        double share = 0.0;
        for (int32_t i : keeps) share += a[size_t(i)];
        lazy.push_back(share > p.lazy);
    }
    return lazy;
}

void SimLayerKvPress::fill(const Capture& capture, const PressParams& p, int64_t budget, Selection& s) const {
    // validate() made sure the budget holds the sinks.
    const int64_t T = capture.promptLength();
    const std::vector<int32_t> keeps = lazyKeeps(T, p.sinks, budget);
    std::vector<int32_t> all(T);
    std::iota(all.begin(), all.end(), 0);
    const std::vector<bool> lazy = lazyLayers(capture, p, budget);
    for (int64_t l = 0; l < capture.layers(); ++l) {
        for (auto& head : s.kept[l]) head = lazy[size_t(l)] ? keeps : all;
    }
}

std::vector<std::vector<float>> SimLayerKvPress::scores(const Capture& capture, const PressParams&,
                                                        int64_t layer) const {
    // What judges the layer lazy (the last query's attention); a lazy layer keeps by recency.
    return presses::HeadScores(static_cast<size_t>(capture.kvHeads()), presses::lastQueryAttention(capture, layer));
}

}  // namespace kvlens
