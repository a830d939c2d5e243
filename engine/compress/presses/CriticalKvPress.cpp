#include "engine/compress/presses/CriticalKvPress.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/Error.h"
#include "core/Methods.h"
#include "engine/compress/presses/PressScores.h"

namespace kvlens {

std::vector<int32_t> CriticalKvPress::keepHead(const std::vector<float>& row, const double* n, int64_t budget,
                                               int64_t firstAtLeast) {
    std::vector<float> ranked;
    std::vector<int32_t> where, kept;
    for (size_t j = 0; j < row.size(); ++j) {
        if (std::isnan(row[j])) {
            kept.push_back(int32_t(j));
        } else {
            ranked.push_back(row[j]);
            where.push_back(int32_t(j));
        }
    }
    const int64_t k = std::clamp<int64_t>(budget, 0, int64_t(ranked.size()));
    const int64_t first = std::min(k, std::max(firstAtLeast, static_cast<int64_t>(double(k) * kFirstStageRatio)));
    // Stage 1: the scorer's best; stage 2: the rest by the score rescaled by the norm.
    std::vector<char> taken(ranked.size(), 0);
    for (int32_t i : presses::topPositions(ranked, first)) taken[size_t(i)] = 1;
    std::vector<int32_t> candidates;
    std::vector<float> candidateScores;
    for (size_t i = 0; i < ranked.size(); ++i) {
        if (taken[i]) continue;
        candidates.push_back(int32_t(i));
        candidateScores.push_back(float((double(ranked[i]) + kEpsilon) * n[where[i]]));
    }
    for (int32_t c : presses::topPositions(candidateScores, k - first)) taken[size_t(candidates[size_t(c)])] = 1;
    for (size_t i = 0; i < ranked.size(); ++i)
        if (taken[i]) kept.push_back(where[i]);
    std::sort(kept.begin(), kept.end());
    return kept;
}

std::vector<std::vector<float>> CriticalKvPress::secondStage(const std::vector<std::vector<float>>& scores,
                                                             const at::Tensor& norms) {
    std::vector<std::vector<float>> out = scores;
    const int64_t T = norms.size(1);
    for (size_t h = 0; h < out.size(); ++h) {
        const double* n = norms.data_ptr<double>() + int64_t(h) * T;
        for (size_t j = 0; j < out[h].size(); ++j)
            if (!std::isnan(out[h][j])) out[h][j] = float((double(out[h][j]) + kEpsilon) * n[j]);
    }
    return out;
}

at::Tensor CriticalKvPress::headNorms(const Capture& capture, int64_t layer, GqaMode mode, const std::string& method) {
    const int64_t T = capture.promptLength(), G = capture.queryHeads() / capture.kvHeads();
    const at::Tensor norms = capture.outputValueNorms(layer);  // [H, T]; outside memoScores' lock
    if (!norms.defined()) {
        throw Error(capture.prompt().empty()
                        ? "--method " + method + " needs each layer's output projection: give o_proj [E][H*D] in "
                                                 "every --inputs file"
                        : "--method " + method + ": the projected value norms have not been computed "
                                                 "(Capture::keepScoresFor before selecting)");
    }
    // Per selection head: its query head's norms, or the mean of its KV head's group.
    return (mode == GqaMode::QueryHead ? norms : norms.view({capture.kvHeads(), G, T}).mean(1))
        .to(at::kCPU, at::kDouble)
        .contiguous();
}

void CriticalKvPress::kvpressScores(presses::HeadScores& rows, std::vector<std::vector<char>>& padded,
                                    const PressParams& p) {
    const MethodInfo& scorer = methods::named(p.scorerInEffect());
    // kvpress's SnapKV averages the window's attention (mean over its W queries): a W times
    // smaller score, against which the 1e-4 weighs W times more.
    const float perQuery = scorer.id == MethodId::SnapKv ? float(p.window) : 1.0f;
    float top = -std::numeric_limits<float>::infinity();
    padded.assign(rows.size(), {});
    for (size_t h = 0; h < rows.size(); ++h) {
        padded[h].assign(rows[h].size(), 0);
        for (size_t j = 0; j < rows[h].size(); ++j) {
            float& v = rows[h][j];
            if (std::isnan(v)) {
                padded[h][j] = 1;
            } else {
                v /= perQuery;
                top = std::max(top, v);
            }
        }
    }
    // kvpress pads with scores.max().item() + 1 over the whole layer (all heads), or with 1.
    const float pad = scorer.kvpressPad == KvpressPad::One ? 1.0f : top + 1.0f;
    for (size_t h = 0; h < rows.size(); ++h)
        for (size_t j = 0; j < rows[h].size(); ++j)
            if (padded[h][j]) rows[h][j] = pad;
}

CriticalKvPress::KvpressHead CriticalKvPress::keepHeadKvpress(const std::vector<float>& scores, const double* n,
                                                              int64_t kept, int64_t first) {
    const float inf = std::numeric_limits<float>::infinity();
    KvpressHead out;
    out.ranked.resize(scores.size());
    // Stage 2's (scores + epsilon) * projected_norm, in fp32 as kvpress computes it.
    for (size_t j = 0; j < scores.size(); ++j) out.ranked[j] = (scores[j] + float(kEpsilon)) * float(n[j]);
    // Stage 1 (a topk of the scorer's scores), then scattered to finfo.max: ranked first.
    for (int32_t j : presses::topPositions(scores, std::clamp<int64_t>(first, 0, int64_t(scores.size()))))
        out.ranked[size_t(j)] = inf;
    out.kept = presses::topPositions(out.ranked, std::clamp<int64_t>(kept, 0, int64_t(scores.size())));
    return out;
}

std::vector<float> CriticalKvPress::shownKvpress(const std::vector<float>& scores, const std::vector<char>& padded,
                                                 const std::vector<float>& ranked, const double* n) {
    std::vector<float> shown(ranked.size());
    for (size_t j = 0; j < ranked.size(); ++j) {
        const float second = (scores[j] + float(kEpsilon)) * float(n[j]);
        shown[j] = !std::isinf(ranked[j]) ? ranked[j] : padded[j] ? std::numeric_limits<float>::quiet_NaN() : second;
    }
    return shown;
}

void CriticalKvPress::fill(const Capture& capture, const PressParams& p, int64_t budget, Selection& s) const {
    const int64_t T = capture.promptLength();
    if (p.convention == Convention::Kvpress) {
        // kvpress's selection_budget = int((1 - r) * k_len * 0.5): n_kept // 2.
        for (int64_t l = 0; l < capture.layers(); ++l) {
            const at::Tensor perHead = headNorms(capture, l, s.gqa, p.method);
            presses::HeadScores rows = presses::scorerScores(capture, l, p);
            std::vector<std::vector<char>> padded;
            kvpressScores(rows, padded, p);
            for (size_t h = 0; h < rows.size(); ++h)
                s.kept[l][h] = keepHeadKvpress(rows[h], perHead.data_ptr<double>() + h * T, budget, budget / 2).kept;
        }
        return;
    }
    for (int64_t l = 0; l < capture.layers(); ++l) {
        const at::Tensor perHead = headNorms(capture, l, s.gqa, p.method);
        const presses::HeadScores scores = presses::scorerScores(capture, l, p);  // NaN: always kept
        for (size_t h = 0; h < scores.size(); ++h) {
            s.kept[l][h] = keepHead(scores[h], perHead.data_ptr<double>() + h * T, budget - presses::alwaysKept(scores[h]));
        }
    }
}

std::vector<std::vector<float>> CriticalKvPress::scores(const Capture& capture, const PressParams& p,
                                                        int64_t layer) const {
    // The second stage's (score + 1e-4) x ||W_o v||, what fills the rest of each head's budget.
    presses::HeadScores rows = presses::scorerScoresOrNone(capture, layer, p);
    if (rows.empty() || !capture.outputValueNorms(layer).defined()) return {};
    const at::Tensor norms = headNorms(capture, layer, p.gqa, p.method);
    if (p.convention != Convention::Kvpress) return secondStage(rows, norms);
    std::vector<std::vector<char>> padded;
    kvpressScores(rows, padded, p);
    const int64_t T = capture.promptLength(), budget = p.resolveBudget(T);
    std::vector<std::vector<float>> shown(rows.size());
    for (size_t h = 0; h < rows.size(); ++h) {
        const double* n = norms.data_ptr<double>() + int64_t(h) * T;
        shown[h] = shownKvpress(rows[h], padded[h], keepHeadKvpress(rows[h], n, budget, budget / 2).ranked, n);
    }
    return shown;
}

}  // namespace kvlens
