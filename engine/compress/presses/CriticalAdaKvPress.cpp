#include "engine/compress/presses/CriticalAdaKvPress.h"

#include <algorithm>
#include <cmath>

#include "engine/compress/presses/AdaKvPress.h"
#include "engine/compress/presses/CriticalKvPress.h"
#include "engine/compress/presses/PressScores.h"

namespace kvlens {

void CriticalAdaKvPress::fill(const Capture& capture, const PressParams& p, int64_t budget, Selection& s) const {
    const int64_t T = capture.promptLength();
    const bool normalise = p.scorerInEffect() == "snapkv";
    for (int64_t l = 0; l < capture.layers(); ++l) {
        const at::Tensor norms = CriticalKvPress::headNorms(capture, l, s.gqa, p.method);
        const presses::HeadScores scores = presses::scorerScores(capture, l, p);  // NaN: always kept
        // AdaKV's allocation, on the scores normalised as it ranks them; the two stages on the
        // scores as CriticalKV ranks them (the same scale in stage 2's score + 1e-4).
        presses::HeadScores forAllocation = scores;
        const std::vector<std::vector<int32_t>> allocated =
            AdaKvPress::keepLayer(forAllocation, budget, p.alpha, normalise);
        int64_t fixed = 0;  // the same on every head: the window and the scorer's sinks
        for (float v : scores[0]) fixed += std::isnan(v) ? 1 : 0;
        const int64_t safeguard = AdaKvPress::safeguard(p.alpha, std::max<int64_t>(0, budget - fixed));
        for (size_t h = 0; h < scores.size(); ++h) {
            const int64_t headBudget = static_cast<int64_t>(allocated[h].size()) - fixed;
            s.kept[l][h] = CriticalKvPress::keepHead(scores[h], norms.data_ptr<double>() + h * T, headBudget, safeguard);
        }
    }
}

}  // namespace kvlens
