// LagKV (Liang et al., 2025, "LagKV: Lag-Relative Information of the KV Cache Tells
// Which Tokens Are Important"): attention-free. After the sinks the prompt falls into
// partitions of `lag` positions; each is scored against the next one's range
// (presses::lagKvScores) and keeps its own top share, while the sinks and the last full
// partition with the remainder stay whole. With a budget B, the B - sinks - tail
// entries left are shared evenly among the scored partitions, the earlier ones taking
// one more while any are left over (the authors' code keeps int(ratio x lag) in each).
#pragma once

#include <vector>

#include "engine/compress/presses/Press.h"

namespace kvlens {

class LagKvPress : public Press {
public:
    // One head's kept rows of n (ascending) from its scores (fp32 [n], NaN outside the scored
    // partitions): the sinks, each scored partition's share of budget - sinks - tail (its best,
    // ties to the lower row; the earlier partitions one more while any are left over), the tail
    // from `tailStart`. The budget must hold the sinks and the tail.
    static std::vector<int32_t> keepHead(const float* scores, int64_t n, int64_t sinks, int64_t lag,
                                         int64_t tailStart, int64_t budget);

public:
    std::vector<std::vector<float>> scores(const Capture& capture, const PressParams& params,
                                           int64_t layer) const override;
protected:
    void fill(const Capture& capture, const PressParams& params, int64_t budget,
              Selection& selection) const override;
};

}  // namespace kvlens
