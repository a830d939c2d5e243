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

void AdaKvPress::normaliseRow(std::vector<float>& row) {
    double sum = 0.0;
    int64_t n = 0;
    for (float v : row)
        if (!std::isnan(v)) sum += v, ++n;
    for (float& v : row)
        if (!std::isnan(v)) v = sum > 0.0 ? float(v / sum) : 1.0f / float(n);
}

std::vector<std::vector<int32_t>> AdaKvPress::keepLayer(presses::HeadScores& scores, int64_t budget, double alpha,
                                                        bool normalise) {
    const int64_t heads = static_cast<int64_t>(scores.size());
    std::vector<std::vector<int32_t>> kept(heads);
    std::vector<std::vector<char>> taken(heads);
    // Each head's pool P beside what it always keeps (the window, the scorer's sinks: the
    // same count on every head of a prompt; while decoding, LagKV's tail may differ).
    int64_t remaining = 0;
    for (int64_t h = 0; h < heads; ++h) {
        const int64_t P = std::max<int64_t>(0, budget - presses::alwaysKept(scores[h])), floorPerHead = safeguard(alpha, P);
        remaining += P - floorPerHead;
        std::vector<float>& row = scores[h];
        if (normalise) normaliseRow(row);
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
    remaining = std::min<int64_t>(remaining, int64_t(rest.size()));
    auto better = [](const Candidate& a, const Candidate& b) {
        if (a.score != b.score) return a.score > b.score;
        return a.head != b.head ? a.head < b.head : a.pos < b.pos;
    };
    std::nth_element(rest.begin(), rest.begin() + remaining, rest.end(), better);
    for (int64_t i = 0; i < remaining; ++i) kept[rest[i].head].push_back(rest[i].pos);
    for (int64_t h = 0; h < heads; ++h) std::sort(kept[h].begin(), kept[h].end());
    return kept;
}

std::vector<std::vector<float>> AdaKvPress::scores(const Capture& capture, const PressParams& p, int64_t layer) const {
    // What the heads compete with: SnapKV's votes normalised per head, as keepLayer ranks them.
    presses::HeadScores rows = presses::scorerScoresOrNone(capture, layer, p);
    if (p.scorerInEffect() == "snapkv")
        for (auto& row : rows) normaliseRow(row);
    return rows;
}

}  // namespace kvlens
