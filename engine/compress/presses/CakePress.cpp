#include "engine/compress/presses/CakePress.h"

#include <algorithm>
#include <cmath>

#include "engine/compress/presses/PressScores.h"

namespace kvlens {

void CakePress::fill(const Capture& capture, const PressParams& p, int64_t budget, Selection& s) const {
    const int64_t L = capture.layers(), T = capture.promptLength(), W = p.window;
    const int64_t sinks = p.usesSinks() ? std::min(p.sinks, T - W) : 0;
    const int64_t available = T - W - sinks;
    std::vector<double> preferences(L);
    for (int64_t l = 0; l < L; ++l) {
        const presses::CakeDispersion d = presses::cakeDispersion(capture, l, p);
        preferences[l] = std::pow(d.entropy, 1.0 / p.tau1) * std::pow(d.variance, 1.0 / p.tau2);
    }
    const std::vector<int64_t> budgets =
        presses::cakeLayerBudgets(preferences, (budget - W - sinks) * L, available);
    for (int64_t l = 0; l < L; ++l) {
        const int64_t b = std::clamp<int64_t>(budgets[l], 0, available);
        const presses::HeadScores scores = presses::scorerScores(capture, l, p);  // NaN: always kept
        for (size_t h = 0; h < scores.size(); ++h) s.kept[l][h] = presses::keptWithNaNs(scores[h], b);
        s.layerBudgets[l] = b + W + sinks;
    }
}

}  // namespace kvlens
