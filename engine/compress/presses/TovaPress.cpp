#include "engine/compress/presses/TovaPress.h"

#include <limits>

#include "engine/compress/presses/PressScores.h"

namespace kvlens {

void TovaPress::fill(const Capture& capture, const PressParams& p, int64_t budget, Selection& s) const {
    for (int64_t l = 0; l < capture.layers(); ++l) {
        // kvpress's TOVAPress keeps the last position whole (NaN) and ranks the rest for B - 1.
        const std::vector<float> row = scores(capture, p, l)[0];
        const std::vector<int32_t> kept = p.keepsOwn(Keep::Last)
                                              ? presses::keptWithNaNs(row, budget - presses::alwaysKept(row))
                                              : presses::topPositions(row, budget);
        for (auto& head : s.kept[l]) head = kept;
    }
}

std::vector<std::vector<float>> TovaPress::scores(const Capture& capture, const PressParams& p, int64_t layer) const {
    std::vector<float> row = presses::lastQueryAttention(capture, layer);
    if (p.keepsOwn(Keep::Last)) row.back() = std::numeric_limits<float>::quiet_NaN();
    return presses::HeadScores(static_cast<size_t>(capture.kvHeads()), row);
}

}  // namespace kvlens
