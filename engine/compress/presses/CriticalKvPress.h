// CriticalKV (Feng et al., 2025, "Identify Critical KV Cache in LLM Inference from an Output
// Perturbation Perspective"), as kvpress's CriticalKVPress wraps a scorer: per head, the window
// and the scorer's sinks, then of the B - W - sinks ranked entries the first half by the
// scorer alone (first_stage_ratio 0.5, truncated), the rest by (score + 1e-4) x ||W_o v||_1,
// the value's L1 norm through the head's slice of the output projection (averaged over a KV
// head's query heads). The norms come from the model's weights (Capture::keepScoresFor).
// --convention kvpress: kvpress's form. Its first stage is int(n_kept x 0.5) of the scorer's
// scores as kvpress gives them (SnapKV's mean votes, its window padded to the largest + 1),
// window included; the rest by (score + 1e-4) x norm over every position not taken.
#pragma once

#include <string>
#include <vector>

#include "engine/compress/presses/Press.h"
#include "engine/compress/presses/PressScores.h"

namespace kvlens {

class CriticalKvPress : public Press {
public:
    static constexpr double kEpsilon = 1e-4;
    static constexpr double kFirstStageRatio = 0.5;

    // One head's kept positions, ascending: those `scores` marks NaN (always kept), then of the
    // `k` ranked ones (at most what is ranked) the first max(firstAtLeast, floor(k x 0.5)) by the
    // score alone and the rest by (score + 1e-4) x norms[j]; ties to the lower position.
    static std::vector<int32_t> keepHead(const std::vector<float>& scores, const double* norms, int64_t k,
                                         int64_t firstAtLeast = 0);
    // The projected value norms per selection head of `layer`, [heads, T] fp64 on the CPU: a
    // query head's own, or the mean of a KV head's group. Throws naming `method` when the
    // capture has none.
    // The second stage's score of every position, (score + kEpsilon) x norm, NaN kept: rows
    // [head][position], norms a [heads, T] double tensor from headNorms.
    static std::vector<std::vector<float>> secondStage(const std::vector<std::vector<float>>& scores,
                                                       const at::Tensor& norms);
    static at::Tensor headNorms(const Capture& capture, int64_t layer, GqaMode mode, const std::string& method);

    // --convention kvpress. The scorer's scores as kvpress's scorer gives them: SnapKV's votes
    // as the mean over the window (here their sum), and what it keeps whole (NaN in `rows`,
    // marked in `padded`) at the value kvpress pads them with (the table's kvpressPad: the
    // layer's largest other score + 1, or 1), so that they compete in stage 2 as kvpress's do.
    static void kvpressScores(presses::HeadScores& rows, std::vector<std::vector<char>>& padded,
                              const PressParams& params);
    // kvpress's two stages on one head: `scores` finite (kvpressScores), the `first` best by the
    // scorer (ties to the lower position), then of the rest the best by (score + 1e-4) x norm
    // in fp32, up to `kept` in all. `ranked`: that second-stage score, the first stage's picks
    // at +inf.
    struct KvpressHead {
        std::vector<int32_t> kept;
        std::vector<float> ranked;
    };
    static KvpressHead keepHeadKvpress(const std::vector<float>& scores, const double* norms, int64_t kept,
                                       int64_t first);
    // What a head's scores show under kvpress: `ranked`, its first-stage picks (+inf) shown as
    // their second-stage score, or NaN where a padded position (kept whole) was picked.
    static std::vector<float> shownKvpress(const std::vector<float>& scores, const std::vector<char>& padded,
                                           const std::vector<float>& ranked, const double* norms);

public:
    std::vector<std::vector<float>> scores(const Capture& capture, const PressParams& params,
                                           int64_t layer) const override;
protected:
    void fill(const Capture& capture, const PressParams& params, int64_t budget,
              Selection& selection) const override;
};

}  // namespace kvlens
