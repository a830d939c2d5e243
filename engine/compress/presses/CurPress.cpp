#include "engine/compress/presses/CurPress.h"

#include "engine/compress/presses/PressScores.h"

namespace kvlens {

void CurPress::fill(const Capture& capture, const PressParams& p, int64_t budget, Selection& s) const {
    const int64_t T = capture.promptLength(), sinks = std::min<int64_t>(p.sinks, T);
    // validate() made sure the budget holds the sinks.
    for (int64_t l = 0; l < capture.layers(); ++l) {
        const presses::HeadScores scores = presses::curScores(capture, l, p);
        for (size_t h = 0; h < scores.size(); ++h) {
            std::vector<int32_t> kept;
            for (int64_t i = 0; i < sinks; ++i) kept.push_back(int32_t(i));
            const std::vector<float> rest(scores[h].begin() + sinks, scores[h].end());
            for (int32_t i : presses::topPositions(rest, budget - sinks)) kept.push_back(int32_t(sinks + i));
            s.kept[l][h] = std::move(kept);
        }
    }
}

std::vector<std::vector<float>> CurPress::scores(const Capture& capture, const PressParams& p, int64_t layer) const {
    return presses::curScores(capture, layer, p);
}

}  // namespace kvlens
