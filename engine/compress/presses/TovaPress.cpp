#include "engine/compress/presses/TovaPress.h"

#include "engine/compress/presses/PressScores.h"

namespace kvlens {

void TovaPress::fill(const Capture& capture, const PressParams&, int64_t budget, Selection& s) const {
    for (int64_t l = 0; l < capture.layers(); ++l) {
        const std::vector<int32_t> kept = presses::topPositions(presses::lastQueryAttention(capture, l), budget);
        for (auto& head : s.kept[l]) head = kept;
    }
}

std::vector<std::vector<float>> TovaPress::scores(const Capture& capture, const PressParams&, int64_t layer) const {
    return presses::HeadScores(static_cast<size_t>(capture.kvHeads()), presses::lastQueryAttention(capture, layer));
}

}  // namespace kvlens
