#include "engine/compress/presses/CompactorPress.h"

#include <cmath>

#include "engine/compress/presses/CompactorScores.h"

namespace kvlens {

void CompactorPress::fill(const Capture& capture, const PressParams& p, int64_t budget, Selection& s) const {
    for (int64_t l = 0; l < capture.layers(); ++l) {
        const presses::HeadScores scores = presses::compactorScores(capture, l, p);  // NaN: always kept
        for (size_t h = 0; h < scores.size(); ++h) {
            s.kept[l][h] = presses::keptWithNaNs(scores[h], budget - presses::alwaysKept(scores[h]));
        }
    }
}

std::vector<std::vector<float>> CompactorPress::scores(const Capture& capture, const PressParams& p,
                                                       int64_t layer) const {
    return presses::scorerScoresOrNone(capture, layer, p);
}

}  // namespace kvlens
