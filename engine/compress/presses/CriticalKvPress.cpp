#include "engine/compress/presses/CriticalKvPress.h"

#include <algorithm>
#include <cmath>

#include "core/Error.h"
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
                        ? "--method " + method + " needs the model's output projection, which tensors given with "
                                                 "--inputs do not have"
                        : "--method " + method + ": the projected value norms have not been computed "
                                                 "(Capture::keepScoresFor before selecting)");
    }
    // Per selection head: its query head's norms, or the mean of its KV head's group.
    return (mode == GqaMode::QueryHead ? norms : norms.view({capture.kvHeads(), G, T}).mean(1))
        .to(at::kCPU, at::kDouble)
        .contiguous();
}

void CriticalKvPress::fill(const Capture& capture, const PressParams& p, int64_t budget, Selection& s) const {
    const int64_t T = capture.promptLength();
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
    const presses::HeadScores rows = presses::scorerScoresOrNone(capture, layer, p);
    if (rows.empty() || !capture.outputValueNorms(layer).defined()) return {};
    return secondStage(rows, headNorms(capture, layer, p.gqa, p.method));
}

}  // namespace kvlens
