// CriticalKV (Feng et al., 2025, "Identify Critical KV Cache in LLM Inference from an Output
// Perturbation Perspective"), as kvpress's CriticalKVPress wraps a scorer: per head, the window
// and the scorer's sinks, then of the B - W - sinks ranked entries the first half by the
// scorer alone (first_stage_ratio 0.5, truncated), the rest by (score + 1e-4) x ||W_o v||_1,
// the value's L1 norm through the head's slice of the output projection (averaged over a KV
// head's query heads). The norms come from the model's weights (Capture::keepScoresFor).
#pragma once

#include <string>
#include <vector>

#include "engine/compress/presses/Press.h"

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

public:
    std::vector<std::vector<float>> scores(const Capture& capture, const PressParams& params,
                                           int64_t layer) const override;
protected:
    void fill(const Capture& capture, const PressParams& params, int64_t budget,
              Selection& selection) const override;
};

}  // namespace kvlens
