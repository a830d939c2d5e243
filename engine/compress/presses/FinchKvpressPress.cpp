#include "engine/compress/presses/FinchKvpressPress.h"

#include "engine/compress/presses/PressScores.h"

namespace kvlens {

void FinchKvpressPress::fill(const Capture& capture, const PressParams& p, int64_t budget, Selection& s) const {
    const int64_t T = capture.promptLength();
    for (int64_t l = 0; l < capture.layers(); ++l) {
        const presses::HeadScores scores = presses::finchPressScores(capture, l, p.window);
        for (size_t h = 0; h < scores.size(); ++h)
            s.kept[l][h] = presses::withWindow(presses::topPositions(scores[h], budget - p.window), T, p.window);
    }
}

std::vector<std::vector<float>> FinchKvpressPress::scores(const Capture& capture, const PressParams& p,
                                                          int64_t layer) const {
    presses::HeadScores rows = presses::finchPressScores(capture, layer, p.window);  // per KV head
    for (auto& row : rows) row.resize(static_cast<size_t>(capture.promptLength()), std::nanf(""));
    return rows;
}

}  // namespace kvlens
