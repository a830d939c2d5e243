// Non-causal attention (Compactor's attention half; kvpress's NonCausalAttnPress): each KV
// head keeps the B positions of highest presses::nonCausalScores, the attention every
// position gets from the queries of its chunk, before and after it, times its value norm.
// Its first use on a capture replays the prompt (as H2O's does).
#pragma once

#include "engine/compress/presses/Press.h"

namespace kvlens {

class NonCausalAttentionPress : public Press {
public:
    std::vector<std::vector<float>> scores(const Capture& capture, const PressParams& params,
                                           int64_t layer) const override;
protected:
    void fill(const Capture& capture, const PressParams& params, int64_t budget,
              Selection& selection) const override;
};

}  // namespace kvlens
