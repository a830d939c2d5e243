#include "engine/compress/presses/CriticalAdaKvPress.h"

#include <algorithm>
#include <cmath>

#include "engine/compress/presses/AdaKvPress.h"
#include "engine/compress/presses/CriticalKvPress.h"
#include "engine/compress/presses/PressScores.h"

namespace kvlens {

std::vector<std::vector<int32_t>> CriticalAdaKvPress::keepLayer(const presses::HeadScores& scores,
                                                                 const std::vector<const double*>& norms,
                                                                 int64_t budget, double alpha, bool normalise) {
    // AdaKV's allocation, on the scores normalised as it ranks them; the two stages on the
    // scores as CriticalKV ranks them (the same scale in stage 2's score + 1e-4).
    presses::HeadScores forAllocation = scores;
    std::vector<std::vector<int32_t>> kept = AdaKvPress::keepLayer(forAllocation, budget, alpha, normalise);
    for (size_t h = 0; h < scores.size(); ++h) {
        // The head's window and the scorer's sinks (LagKV's tail, while decoding).
        const int64_t fixed = presses::alwaysKept(scores[h]);
        const int64_t safeguard = AdaKvPress::safeguard(alpha, std::max<int64_t>(0, budget - fixed));
        kept[h] = CriticalKvPress::keepHead(scores[h], norms[h], static_cast<int64_t>(kept[h].size()) - fixed, safeguard);
    }
    return kept;
}

void CriticalAdaKvPress::fill(const Capture& capture, const PressParams& p, int64_t budget, Selection& s) const {
    const int64_t T = capture.promptLength();
    for (int64_t l = 0; l < capture.layers(); ++l) {
        const at::Tensor norms = CriticalKvPress::headNorms(capture, l, s.gqa, p.method);
        const presses::HeadScores scores = presses::scorerScores(capture, l, p);  // NaN: always kept
        std::vector<const double*> perHead;
        for (size_t h = 0; h < scores.size(); ++h) perHead.push_back(norms.data_ptr<double>() + int64_t(h) * T);
        s.kept[l] = keepLayer(scores, perHead, budget, p.alpha, p.scorerInEffect() == "snapkv");
    }
}

std::vector<std::vector<float>> CriticalAdaKvPress::scores(const Capture& capture, const PressParams& p,
                                                           int64_t layer) const {
    // CriticalKV's second stage within each head's share: the stages rank the scorer's scores
    // as they are (the allocation's normalisation aside), so its (score + 1e-4) x ||W_o v||.
    const presses::HeadScores rows = presses::scorerScoresOrNone(capture, layer, p);
    if (rows.empty() || !capture.outputValueNorms(layer).defined()) return {};
    return CriticalKvPress::secondStage(rows, CriticalKvPress::headNorms(capture, layer, p.gqa, p.method));
}

}  // namespace kvlens
