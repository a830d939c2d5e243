#include "engine/compress/presses/KeyDiffPress.h"

#include "engine/compress/presses/PressScores.h"

namespace kvlens {

void KeyDiffPress::fill(const Capture& capture, const PressParams&, int64_t budget, Selection& s) const {
    for (int64_t l = 0; l < capture.layers(); ++l) {
        const presses::HeadScores scores = presses::keyDiffScores(capture, l);
        for (size_t h = 0; h < scores.size(); ++h) s.kept[l][h] = presses::topPositions(scores[h], budget);
    }
}

std::vector<std::vector<float>> KeyDiffPress::scores(const Capture& capture, const PressParams&, int64_t layer) const {
    return presses::keyDiffScores(capture, layer);
}

}  // namespace kvlens
