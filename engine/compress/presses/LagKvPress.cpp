#include "engine/compress/presses/LagKvPress.h"

#include "engine/compress/presses/PressScores.h"

namespace kvlens {

void LagKvPress::fill(const Capture& capture, const PressParams& p, int64_t budget,
                      Selection& s) const {
    const int64_t T = capture.promptLength(), L = p.lag, tailStart = p.lagTailStart(T);
    const int64_t scored = (tailStart - p.sinks) / L;
    // validate() made sure the budget holds the sinks and the tail.
    const int64_t spare = budget - p.sinks - (T - tailStart);
    for (int64_t l = 0; l < capture.layers(); ++l) {
        const presses::HeadScores scores = presses::lagKvScores(capture, l, p);
        for (size_t h = 0; h < scores.size(); ++h) {
            std::vector<int32_t> kept;
            for (int64_t i = 0; i < p.sinks; ++i) kept.push_back(int32_t(i));
            for (int64_t part = 0; part < scored; ++part) {
                const int64_t take = spare / scored + (part < spare % scored ? 1 : 0);
                const auto from = scores[h].begin() + p.sinks + part * L;
                for (int32_t i : presses::topPositions(std::vector<float>(from, from + L), take))
                    kept.push_back(int32_t(p.sinks + part * L + i));
            }
            for (int64_t i = tailStart; i < T; ++i) kept.push_back(int32_t(i));
            s.kept[l][h] = std::move(kept);
        }
    }
}

}  // namespace kvlens
