#include "engine/presses/SnapKvPress.h"

#include "engine/presses/PressScores.h"

namespace kvlens {

void SnapKvPress::fill(const Capture& capture, const PressParams& p, int64_t budget,
                       Selection& s) const {
    const int64_t T = capture.promptLength();
    for (int64_t l = 0; l < capture.layers(); ++l) {
        const presses::HeadScores votes = presses::windowVotes(capture, l, p.window, p.gqa);
        for (size_t h = 0; h < votes.size(); ++h) {
            const std::vector<float> pooled = presses::pool1d(votes[h], p.kernel, p.pooling);
            s.kept[l][h] = presses::withWindow(presses::topPositions(pooled, budget - p.window), T, p.window);
        }
    }
}

}  // namespace kvlens
