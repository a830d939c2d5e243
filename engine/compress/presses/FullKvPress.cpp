#include "engine/compress/presses/FullKvPress.h"

#include <numeric>

namespace kvlens {

void FullKvPress::fill(const Capture& capture, const PressParams&, int64_t, Selection& s) const {
    // Press::select keeps everything when budget >= T, which for full is always.
    std::vector<int32_t> all(capture.promptLength());
    std::iota(all.begin(), all.end(), 0);
    for (auto& layer : s.kept)
        for (auto& head : layer) head = all;
}

}  // namespace kvlens
