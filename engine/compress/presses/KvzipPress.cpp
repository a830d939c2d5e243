#include "engine/compress/presses/KvzipPress.h"

#include <algorithm>
#include <cmath>
#include <functional>

#include "engine/compress/presses/PressScores.h"

namespace kvlens {

void KvzipPress::fill(const Capture& capture, const PressParams& p, int64_t budget, Selection& s) const {
    const int64_t L = capture.layers(), T = capture.promptLength();
    // The share of every head: its sinks (NaN) beside B - sinks of the pool over all layers.
    int64_t pool = 0;
    std::vector<float> ranked;  // every ranked score, 4 bytes an entry (L x KV x T at most)
    ranked.reserve(size_t(L * capture.kvHeads() * T));
    for (int64_t l = 0; l < L; ++l) {
        for (const std::vector<float>& row : presses::reconstructionScores(capture, l, p)) {
            int64_t fixed = 0;
            for (float v : row) {
                if (std::isnan(v)) {
                    ++fixed;
                } else {
                    ranked.push_back(v);
                }
            }
            pool += std::max<int64_t>(0, budget - fixed);
        }
    }
    const int64_t take = std::min<int64_t>(pool, int64_t(ranked.size()));
    // The take-th highest score: everything above it is kept, and of the scores equal to it
    // the first ones in (layer, head, position) order.
    float threshold = 0.0f;
    int64_t ties = 0;
    if (take > 0) {
        std::nth_element(ranked.begin(), ranked.begin() + (take - 1), ranked.end(), std::greater<float>());
        threshold = ranked[size_t(take - 1)];
        ties = take - std::count_if(ranked.begin(), ranked.end(), [&](float v) { return v > threshold; });
    }
    ranked = std::vector<float>();
    for (int64_t l = 0; l < L; ++l) {
        const presses::HeadScores scores = presses::reconstructionScores(capture, l, p);
        for (size_t h = 0; h < scores.size(); ++h) {
            std::vector<int32_t>& kept = s.kept[l][h];
            for (size_t j = 0; j < scores[h].size(); ++j) {
                const float v = scores[h][j];
                if (std::isnan(v) || (take > 0 && v > threshold)) {
                    kept.push_back(int32_t(j));
                } else if (take > 0 && v == threshold && ties > 0) {
                    kept.push_back(int32_t(j));
                    --ties;
                }
            }
        }
    }
}

std::vector<std::vector<float>> KvzipPress::scores(const Capture& capture, const PressParams& p, int64_t layer) const {
    return presses::scorerScoresOrNone(capture, layer, p);  // shared over layers and heads
}

}  // namespace kvlens
