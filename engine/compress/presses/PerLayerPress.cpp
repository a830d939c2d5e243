#include "engine/compress/presses/PerLayerPress.h"

#include <algorithm>

#include "core/Error.h"
#include "engine/compress/presses/PressScores.h"

namespace kvlens {

void PerLayerPress::fill(const Capture& capture, const PressParams& p, int64_t budget, Selection& s) const {
    const int64_t L = capture.layers(), T = capture.promptLength(), W = p.window;
    if (!p.layerWeights.empty() && int64_t(p.layerWeights.size()) != L) {
        throw Error("--layer-weights has " + std::to_string(p.layerWeights.size()) +
                    " weights; the model has " + std::to_string(L) + " layers, one weight each");
    }
    const std::vector<double> weights = p.layerWeights.empty() ? std::vector<double>(L, 1.0) : p.layerWeights;
    const int64_t sinks = p.usesSinks() ? std::min(p.sinks, T - W) : 0;
    const int64_t available = T - W - sinks;
    const std::vector<int64_t> budgets = presses::cakeLayerBudgets(weights, (budget - W - sinks) * L, available);
    for (int64_t l = 0; l < L; ++l) {
        const int64_t b = std::clamp<int64_t>(budgets[l], 0, available);
        const presses::HeadScores scores = presses::scorerScores(capture, l, p);  // NaN: always kept
        for (size_t h = 0; h < scores.size(); ++h) s.kept[l][h] = presses::keptWithNaNs(scores[h], b);
        s.layerBudgets[l] = b + W + sinks;
    }
}

}  // namespace kvlens
