#include "engine/compress/presses/ExpectedAttentionPress.h"

#include "engine/compress/presses/PressScores.h"

namespace kvlens {

void ExpectedAttentionPress::fill(const Capture& capture, const PressParams& p, int64_t budget,
                                  Selection& s) const {
    for (int64_t l = 0; l < capture.layers(); ++l) {
        const presses::HeadScores scores = presses::expectedAttentionScores(capture, l, p);
        for (size_t h = 0; h < scores.size(); ++h) {
            // The sinks' scores are NaN, which ranks below every number: the top
            // B - sinks are all after them.
            std::vector<int32_t> kept = presses::topPositions(scores[h], budget - p.sinks);
            for (int32_t i = int32_t(p.sinks) - 1; i >= 0; --i) kept.insert(kept.begin(), i);
            s.kept[l][h] = std::move(kept);
        }
    }
}

std::vector<std::vector<float>> ExpectedAttentionPress::scores(const Capture& capture, const PressParams& p,
                                                               int64_t layer) const {
    // With no query after the sinks there are no statistics, and so no scores.
    if (p.sinks >= capture.promptLength() || !capture.queryStatistics()) return {};
    return presses::expectedAttentionScores(capture, layer, p);
}

}  // namespace kvlens
