#include "engine/compress/presses/AdaKvPress.h"

#include <algorithm>
#include <cmath>

#include "engine/compress/presses/PressScores.h"

namespace kvlens {

void AdaKvPress::fill(const Capture& capture, const PressParams& p, int64_t budget, Selection& s) const {
    const bool normalise = p.scorerInEffect() == "snapkv";
    for (int64_t l = 0; l < capture.layers(); ++l) {
        presses::HeadScores scores = presses::scorerScores(capture, l, p);  // NaN: always kept
        std::vector<std::vector<int32_t>> kept = keepLayer(scores, budget, p.alpha, normalise);
        for (size_t h = 0; h < kept.size(); ++h) s.kept[l][h] = std::move(kept[h]);
    }
}

std::vector<std::vector<int32_t>> AdaKvPress::keepLayer(presses::HeadScores& scores, int64_t budget, double alpha,
                                                        bool normalise) {
    const int64_t heads = static_cast<int64_t>(scores.size());
    std::vector<std::vector<int32_t>> kept(heads);
    std::vector<std::vector<char>> taken(heads);
    int64_t fixed = 0;  // the same on every head: the window and the scorer's sinks
    for (float v : scores[0]) fixed += std::isnan(v) ? 1 : 0;
    const int64_t P = std::max<int64_t>(0, budget - fixed);
    const int64_t floorPerHead = safeguard(alpha, P);
    for (int64_t h = 0; h < heads; ++h) {
        std::vector<float>& row = scores[h];
        if (normalise) {
            double sum = 0.0;
            int64_t n = 0;
            for (float v : row)
                if (!std::isnan(v)) sum += v, ++n;
            for (float& v : row)
                if (!std::isnan(v)) v = sum > 0.0 ? float(v / sum) : 1.0f / float(n);
        }
        kept[h] = presses::keptWithNaNs(row, floorPerHead);  // the fixed ones and the safeguard
        taken[h].assign(row.size(), 0);
        for (int32_t pos : kept[h]) taken[h][pos] = 1;
    }
    // The rest of the layer's pool goes to the best scores of any head.
    struct Candidate {
        float score;
        int32_t head, pos;
    };
    std::vector<Candidate> rest;
    for (int64_t h = 0; h < heads; ++h)
        for (size_t j = 0; j < scores[h].size(); ++j)
            if (!taken[h][j]) rest.push_back({scores[h][j], int32_t(h), int32_t(j)});
    const int64_t remaining = std::min<int64_t>(heads * (P - floorPerHead), int64_t(rest.size()));
    auto better = [](const Candidate& a, const Candidate& b) {
        if (a.score != b.score) return a.score > b.score;
        return a.head != b.head ? a.head < b.head : a.pos < b.pos;
    };
    std::nth_element(rest.begin(), rest.begin() + remaining, rest.end(), better);
    for (int64_t i = 0; i < remaining; ++i) kept[rest[i].head].push_back(rest[i].pos);
    for (int64_t h = 0; h < heads; ++h) std::sort(kept[h].begin(), kept[h].end());
    return kept;
}

}  // namespace kvlens
