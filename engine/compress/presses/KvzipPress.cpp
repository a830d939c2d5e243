#include "engine/compress/presses/KvzipPress.h"

#include <algorithm>
#include <cmath>

#include "engine/compress/presses/PressScores.h"

namespace kvlens {

void KvzipPress::fill(const Capture& capture, const PressParams& p, int64_t budget, Selection& s) const {
    const int64_t L = capture.layers();
    struct Candidate {
        float score;
        int32_t layer, head, pos;
    };
    std::vector<Candidate> ranked;
    int64_t pool = 0;
    for (int64_t l = 0; l < L; ++l) {
        const presses::HeadScores scores = presses::reconstructionScores(capture, l, p);  // NaN: the sinks
        for (size_t h = 0; h < scores.size(); ++h) {
            int64_t fixed = 0;
            for (size_t j = 0; j < scores[h].size(); ++j) {
                if (std::isnan(scores[h][j])) {
                    s.kept[l][h].push_back(int32_t(j));
                    ++fixed;
                } else {
                    ranked.push_back({scores[h][j], int32_t(l), int32_t(h), int32_t(j)});
                }
            }
            pool += std::max<int64_t>(0, budget - fixed);
        }
    }
    const int64_t take = std::min<int64_t>(pool, int64_t(ranked.size()));
    auto better = [](const Candidate& a, const Candidate& b) {
        if (a.score != b.score) return a.score > b.score;
        if (a.layer != b.layer) return a.layer < b.layer;
        return a.head != b.head ? a.head < b.head : a.pos < b.pos;
    };
    std::nth_element(ranked.begin(), ranked.begin() + take, ranked.end(), better);
    for (int64_t i = 0; i < take; ++i) s.kept[ranked[i].layer][ranked[i].head].push_back(ranked[i].pos);
    for (int64_t l = 0; l < L; ++l) {
        for (auto& head : s.kept[l]) std::sort(head.begin(), head.end());
        // The funnel's per-layer figure: the layer's mean entries per head.
        const int64_t heads = static_cast<int64_t>(s.kept[l].size());
        s.layerBudgets[l] = heads > 0 ? (s.entries(l) + heads / 2) / heads : 0;
    }
}

}  // namespace kvlens
