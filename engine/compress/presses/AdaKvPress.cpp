#include "engine/compress/presses/AdaKvPress.h"

#include <algorithm>
#include <cmath>

#include "core/Methods.h"
#include "engine/compress/presses/PressScores.h"

namespace kvlens {

namespace {

struct Candidate {
    float score;
    int32_t head, pos;
};

// The best `count` of `rest` (ties: the lower head, then the lower position) join their heads' sets.
void keepBestAcrossHeads(std::vector<Candidate>& rest, int64_t count, std::vector<std::vector<int32_t>>& kept) {
    count = std::clamp<int64_t>(count, 0, int64_t(rest.size()));
    auto better = [](const Candidate& a, const Candidate& b) {
        if (a.score != b.score) return a.score > b.score;
        return a.head != b.head ? a.head < b.head : a.pos < b.pos;
    };
    std::nth_element(rest.begin(), rest.begin() + count, rest.end(), better);
    for (int64_t i = 0; i < count; ++i) kept[rest[i].head].push_back(rest[i].pos);
    for (auto& head : kept) std::sort(head.begin(), head.end());
}

}  // namespace

void AdaKvPress::fill(const Capture& capture, const PressParams& p, int64_t budget, Selection& s) const {
    const bool kvpress = p.convention == Convention::Kvpress;
    const bool normalise = !kvpress && methods::named(p.scorerInEffect()).id == MethodId::SnapKv;
    for (int64_t l = 0; l < capture.layers(); ++l) {
        presses::HeadScores scores = presses::scorerScores(capture, l, p);  // NaN: always kept
        std::vector<std::vector<int32_t>> kept =
            kvpress ? keepLayerKvpress(scores, budget, p.alpha) : keepLayer(scores, budget, p.alpha, normalise);
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
    std::vector<Candidate> rest;
    for (int64_t h = 0; h < heads; ++h)
        for (size_t j = 0; j < scores[h].size(); ++j)
            if (!taken[h][j]) rest.push_back({scores[h][j], int32_t(h), int32_t(j)});
    keepBestAcrossHeads(rest, remaining, kept);
    return kept;
}

std::vector<std::vector<int32_t>> AdaKvPress::keepLayerKvpress(const presses::HeadScores& scores, int64_t kept,
                                                               double alpha) {
    const int64_t heads = static_cast<int64_t>(scores.size());
    // kvpress: n_safe = int(n_kept * alpha) of each head's best are kept; what the scorer keeps
    // whole (its padded maximum, NaN here) ranks first among them.
    const int64_t safe = static_cast<int64_t>(double(kept) * alpha);
    std::vector<std::vector<int32_t>> out(heads);
    std::vector<Candidate> rest;
    int64_t taken = 0;
    for (int64_t h = 0; h < heads; ++h) {
        const std::vector<float>& row = scores[h];
        out[h] = presses::keptWithNaNs(row, std::max<int64_t>(0, safe - presses::alwaysKept(row)));
        taken += static_cast<int64_t>(out[h].size());
        std::vector<char> in(row.size(), 0);
        for (int32_t pos : out[h]) in[pos] = 1;
        for (size_t j = 0; j < row.size(); ++j)
            if (!in[j]) rest.push_back({row[j], int32_t(h), int32_t(j)});
    }
    // Then the layer's heads x n_kept in all, by the raw scores across heads.
    keepBestAcrossHeads(rest, heads * kept - taken, out);
    return out;
}

std::vector<std::vector<float>> AdaKvPress::scores(const Capture& capture, const PressParams& p, int64_t layer) const {
    // What the heads compete with: SnapKV's votes normalised per head, as keepLayer ranks them
    // (kvpress's form: the scorer's scores as they are).
    presses::HeadScores rows = presses::scorerScoresOrNone(capture, layer, p);
    if (p.convention == Convention::Paper && methods::named(p.scorerInEffect()).id == MethodId::SnapKv)
        for (auto& row : rows) normaliseRow(row);
    return rows;
}

}  // namespace kvlens
