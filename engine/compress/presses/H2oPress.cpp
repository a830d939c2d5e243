#include "engine/compress/presses/H2oPress.h"

#include "engine/compress/presses/PressScores.h"

namespace kvlens {

void H2oPress::fill(const Capture& capture, const PressParams& p, int64_t budget, Selection& s) const {
    const int64_t T = capture.promptLength();
    for (int64_t l = 0; l < capture.layers(); ++l) {
        const presses::HeadScores scores = presses::accumulatedAttention(capture, l, p.window, p.gqa);
        for (size_t h = 0; h < scores.size(); ++h) {
            s.kept[l][h] = presses::withWindow(presses::topPositions(scores[h], budget - p.window), T, p.window);
        }
    }
}

std::vector<std::vector<float>> H2oPress::scores(const Capture& capture, const PressParams& p, int64_t layer) const {
    if (!capture.hasH2oScores()) return {};
    // H2O selects per KV head whatever the GQA mode.
    presses::HeadScores rows = presses::accumulatedAttention(capture, layer, p.window, GqaMode::KvHead);
    for (auto& row : rows) row.resize(static_cast<size_t>(capture.promptLength()), std::nanf(""));
    return rows;
}

}  // namespace kvlens
