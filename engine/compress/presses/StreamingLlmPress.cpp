#include "engine/compress/presses/StreamingLlmPress.h"

namespace kvlens {

void StreamingLlmPress::fill(const Capture& capture, const PressParams& p, int64_t budget,
                             Selection& s) const {
    const int64_t T = capture.promptLength();
    std::vector<int32_t> kept;
    for (int64_t i = 0; i < p.sinks; ++i) kept.push_back(static_cast<int32_t>(i));
    for (int64_t i = T - (budget - p.sinks); i < T; ++i) kept.push_back(static_cast<int32_t>(i));
    for (auto& layer : s.kept)
        for (auto& head : layer) head = kept;
}

}  // namespace kvlens
