// How much of a task's needle a selection kept: per layer, the mean over the layer's
// selection heads of the share of the needle's positions the head kept.
#pragma once

#include <cstdint>
#include <vector>

#include "core/Selection.h"

namespace kvlens {

struct NeedleKept {
    std::vector<double> perLayer;  // [layer]: mean over heads of kept / needle positions
    double mean = 0.0;             // over layers
};

// positions: ascending prompt positions (a sample's needlePositions). An empty needle
// is kept whole (1.0).
NeedleKept needleKept(const Selection& selection, const std::vector<int64_t>& positions);

}  // namespace kvlens
