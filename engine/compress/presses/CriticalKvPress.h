// CriticalKV (Feng et al., 2025, "Identify Critical KV Cache in LLM Inference from an Output
// Perturbation Perspective"), as kvpress's CriticalKVPress wraps a scorer: per head, the window
// and the scorer's sinks, then of the B - W - sinks ranked entries the first half by the
// scorer alone (first_stage_ratio 0.5, truncated), the rest by (score + 1e-4) x ||W_o v||_1,
// the value's L1 norm through the head's slice of the output projection (averaged over a KV
// head's query heads). The norms come from the model's weights (Capture::keepScoresFor).
#pragma once

#include "engine/compress/presses/Press.h"

namespace kvlens {

class CriticalKvPress : public Press {
public:
    static constexpr double kEpsilon = 1e-4;
    static constexpr double kFirstStageRatio = 0.5;

protected:
    void fill(const Capture& capture, const PressParams& params, int64_t budget,
              Selection& selection) const override;
};

}  // namespace kvlens
