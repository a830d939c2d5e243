#include "engine/compress/presses/LagKvPress.h"

#include <algorithm>

#include "engine/compress/presses/PressScores.h"

namespace kvlens {

std::vector<int32_t> LagKvPress::keepHead(const float* scores, int64_t n, int64_t sinks, int64_t L,
                                          int64_t tailStart, int64_t budget) {
    const int64_t scored = (tailStart - sinks) / L;
    const int64_t spare = budget - sinks - (n - tailStart);
    std::vector<int32_t> kept;
    for (int64_t i = 0; i < sinks; ++i) kept.push_back(int32_t(i));
    for (int64_t part = 0; part < scored; ++part) {
        const int64_t take = spare / scored + (part < spare % scored ? 1 : 0);
        const float* from = scores + sinks + part * L;
        for (int32_t i : presses::topPositions(std::vector<float>(from, from + L), std::min(take, L)))
            kept.push_back(int32_t(sinks + part * L + i));
    }
    for (int64_t i = tailStart; i < n; ++i) kept.push_back(int32_t(i));
    return kept;
}

void LagKvPress::fill(const Capture& capture, const PressParams& p, int64_t budget,
                      Selection& s) const {
    const int64_t T = capture.promptLength(), tailStart = p.lagTailStart(T);
    // validate() made sure the budget holds the sinks and the tail.
    for (int64_t l = 0; l < capture.layers(); ++l) {
        const presses::HeadScores scores = presses::lagKvScores(capture, l, p);
        for (size_t h = 0; h < scores.size(); ++h)
            s.kept[l][h] = keepHead(scores[h].data(), T, p.sinks, p.lag, tailStart, budget);
    }
}

std::vector<std::vector<float>> LagKvPress::scores(const Capture& capture, const PressParams& p, int64_t layer) const {
    return presses::lagKvScores(capture, layer, p);  // ranked within each partition
}

}  // namespace kvlens
