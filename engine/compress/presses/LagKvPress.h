// LagKV (Liang et al., 2025, "LagKV: Lag-Relative Information of the KV Cache Tells
// Which Tokens Are Important"): attention-free. After the sinks the prompt falls into
// partitions of `lag` positions; each is scored against the next one's range
// (presses::lagKvScores) and keeps its own top share, while the sinks and the last full
// partition with the remainder stay whole. With a budget B, the B - sinks - tail
// entries left are shared evenly among the scored partitions, the earlier ones taking
// one more while any are left over (the authors' code keeps int(ratio x lag) in each).
#pragma once

#include "engine/compress/presses/Press.h"

namespace kvlens {

class LagKvPress : public Press {
protected:
    void fill(const Capture& capture, const PressParams& params, int64_t budget,
              Selection& selection) const override;
};

}  // namespace kvlens
