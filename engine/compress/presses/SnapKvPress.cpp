#include "engine/compress/presses/SnapKvPress.h"

#include "engine/compress/presses/PressScores.h"

namespace kvlens {

void SnapKvPress::fill(const Capture& capture, const PressParams& p, int64_t budget,
                       Selection& s) const {
    for (int64_t l = 0; l < capture.layers(); ++l) {
        s.kept[l] = presses::voteSelection(capture, l, p, budget - p.window);
    }
}

std::vector<std::vector<float>> SnapKvPress::scores(const Capture& capture, const PressParams& p, int64_t layer) const {
    return presses::windowRankedVotes(capture, layer, p);
}

}  // namespace kvlens
