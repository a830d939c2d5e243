#include "engine/compress/presses/KnormPress.h"

#include "engine/compress/presses/PressScores.h"

namespace kvlens {

void KnormPress::fill(const Capture& capture, const PressParams&, int64_t budget, Selection& s) const {
    for (int64_t l = 0; l < capture.layers(); ++l) {
        const presses::HeadScores scores = presses::keyNormScores(capture, l);
        for (size_t h = 0; h < scores.size(); ++h) s.kept[l][h] = presses::topPositions(scores[h], budget);
    }
}

std::vector<std::vector<float>> KnormPress::scores(const Capture& capture, const PressParams&, int64_t layer) const {
    return presses::keyNormScores(capture, layer);
}

}  // namespace kvlens
