#include "engine/compress/presses/CriticalAdaKvPress.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "engine/compress/presses/AdaKvPress.h"
#include "engine/compress/presses/CriticalKvPress.h"
#include "engine/compress/presses/PressScores.h"

namespace kvlens {

std::vector<std::vector<int32_t>> CriticalAdaKvPress::keepLayer(const presses::HeadScores& scores,
                                                                 const std::vector<const double*>& norms,
                                                                 int64_t budget, double alpha, bool normalise) {
    // AdaKV's allocation, on the scores normalised as it ranks them; the two stages on the
    // scores as CriticalKV ranks them (the same scale in stage 2's score + 1e-4).
    presses::HeadScores forAllocation = scores;
    std::vector<std::vector<int32_t>> kept = AdaKvPress::keepLayer(forAllocation, budget, alpha, normalise);
    for (size_t h = 0; h < scores.size(); ++h) {
        // The head's window and the scorer's sinks (LagKV's tail, while decoding).
        const int64_t fixed = presses::alwaysKept(scores[h]);
        const int64_t safeguard = AdaKvPress::safeguard(alpha, std::max<int64_t>(0, budget - fixed));
        kept[h] = CriticalKvPress::keepHead(scores[h], norms[h], static_cast<int64_t>(kept[h].size()) - fixed, safeguard);
    }
    return kept;
}

std::vector<std::vector<int32_t>> CriticalAdaKvPress::keepLayerKvpress(const presses::HeadScores& scores,
                                                                        const std::vector<const double*>& norms,
                                                                        int64_t kept, double alpha,
                                                                        std::vector<std::vector<float>>* ranked) {
    const float inf = std::numeric_limits<float>::infinity();
    const int64_t heads = int64_t(scores.size());
    const int64_t T = heads ? int64_t(scores[0].size()) : 0;
    kept = std::clamp<int64_t>(kept, 0, T);
    const int64_t safe = std::min<int64_t>(T, static_cast<int64_t>(double(kept) * alpha));
    // The safeguard: each head's n_safe best scattered to finfo.max.
    presses::HeadScores budgetScores = scores;
    for (int64_t h = 0; h < heads; ++h)
        for (int32_t j : presses::topPositions(scores[size_t(h)], safe)) budgetScores[size_t(h)][size_t(j)] = inf;
    // Each head's budget: how many of the layer's heads x n_kept best are its.
    std::vector<float> all;
    all.reserve(size_t(heads * T));
    for (const auto& row : budgetScores) all.insert(all.end(), row.begin(), row.end());
    std::vector<int64_t> budgets(static_cast<size_t>(heads), 0);
    for (int32_t i : presses::topPositions(all, heads * kept)) ++budgets[size_t(i / T)];
    std::vector<std::vector<int32_t>> out(static_cast<size_t>(heads));
    if (ranked) ranked->assign(size_t(heads), {});
    for (int64_t h = 0; h < heads; ++h) {
        const std::vector<float>& row = budgetScores[size_t(h)];
        std::vector<float> second(row.size());
        // Stage 2: (scores + epsilon) * projected_norm; the safeguard's finfo.max stays on top.
        for (size_t j = 0; j < row.size(); ++j)
            second[j] = std::isinf(row[j]) ? inf : (row[j] + float(CriticalKvPress::kEpsilon)) * float(norms[size_t(h)][j]);
        // Stage 1: int(b x 0.5) of the safeguarded scores, ranked first.
        for (int32_t j : presses::topPositions(row, static_cast<int64_t>(double(budgets[size_t(h)]) * 0.5)))
            second[size_t(j)] = inf;
        out[size_t(h)] = presses::topPositions(second, budgets[size_t(h)]);
        if (ranked) (*ranked)[size_t(h)] = std::move(second);
    }
    return out;
}

void CriticalAdaKvPress::fill(const Capture& capture, const PressParams& p, int64_t budget, Selection& s) const {
    const int64_t T = capture.promptLength();
    for (int64_t l = 0; l < capture.layers(); ++l) {
        const at::Tensor norms = CriticalKvPress::headNorms(capture, l, s.gqa, p.method);
        const presses::HeadScores scores = presses::scorerScores(capture, l, p);  // NaN: always kept
        std::vector<const double*> perHead;
        for (size_t h = 0; h < scores.size(); ++h) perHead.push_back(norms.data_ptr<double>() + int64_t(h) * T);
        if (p.convention == Convention::Kvpress) {
            presses::HeadScores rows = scores;
            std::vector<std::vector<char>> padded;
            CriticalKvPress::kvpressScores(rows, padded, p);
            s.kept[l] = keepLayerKvpress(rows, perHead, budget, p.alpha);
        } else {
            s.kept[l] = keepLayer(scores, perHead, budget, p.alpha, p.scorerInEffect() == "snapkv");
        }
    }
}

std::vector<std::vector<float>> CriticalAdaKvPress::scores(const Capture& capture, const PressParams& p,
                                                           int64_t layer) const {
    // CriticalKV's second stage within each head's share: the stages rank the scorer's scores
    // as they are (the allocation's normalisation aside), so its (score + 1e-4) x ||W_o v||.
    presses::HeadScores rows = presses::scorerScoresOrNone(capture, layer, p);
    if (rows.empty() || !capture.outputValueNorms(layer).defined()) return {};
    const at::Tensor norms = CriticalKvPress::headNorms(capture, layer, p.gqa, p.method);
    if (p.convention != Convention::Kvpress) return CriticalKvPress::secondStage(rows, norms);
    // kvpress's form: what its stage 2 ranked; its safeguard's and stage 1's picks shown as
    // their second-stage score, or NaN where the scorer keeps the position whole.
    std::vector<std::vector<char>> padded;
    CriticalKvPress::kvpressScores(rows, padded, p);
    const int64_t T = capture.promptLength();
    std::vector<const double*> perHead;
    for (size_t h = 0; h < rows.size(); ++h) perHead.push_back(norms.data_ptr<double>() + int64_t(h) * T);
    std::vector<std::vector<float>> ranked, shown(rows.size());
    keepLayerKvpress(rows, perHead, p.resolveBudget(T), p.alpha, &ranked);
    for (size_t h = 0; h < rows.size(); ++h)
        shown[h] = CriticalKvPress::shownKvpress(rows[h], padded[h], ranked[h], perHead[h]);
    return shown;
}

}  // namespace kvlens
