// KeyDiff (Park et al., 2025, "KeyDiff: Key Similarity-Based KV Cache Eviction"): each
// KV head keeps the B positions whose keys are least similar to the anchor, the mean
// of the head's unit-normalised keys (score -cos(k_t, anchor)). Applied once to the
// whole prompt; the paper also runs it block by block while prefilling a prompt longer
// than the cache (kvpress's BlockPress), which needs a prefill with eviction.
#pragma once

#include "engine/compress/presses/Press.h"

namespace kvlens {

class KeyDiffPress : public Press {
public:
    std::vector<std::vector<float>> scores(const Capture& capture, const PressParams& params,
                                           int64_t layer) const override;
protected:
    void fill(const Capture& capture, const PressParams& params, int64_t budget,
              Selection& selection) const override;
};

}  // namespace kvlens
