// Expected Attention (Devoto, Jeblick and Jégou, 2025, "Expected Attention: KV Cache
// Compression by Estimating Attention from Future Queries Distribution"): the attention
// future queries would pay each key, in closed form from the prompt's queries taken as
// a Gaussian, times the value's norm; each KV head keeps the first `sinks` positions and
// its B - sinks best scores (presses::expectedAttentionScores). The statistics come from
// the prefill (Capture::queryStatistics), so selecting costs no second pass.
#pragma once

#include "engine/compress/presses/Press.h"

namespace kvlens {

class ExpectedAttentionPress : public Press {
public:
    std::vector<std::vector<float>> scores(const Capture& capture, const PressParams& params,
                                           int64_t layer) const override;
protected:
    void fill(const Capture& capture, const PressParams& params, int64_t budget,
              Selection& selection) const override;
};

}  // namespace kvlens
