// Per-layer, per-head attention statistics of a prompt, from what the capture
// keeps: the causal attention of the last (up to 64) prompt queries over every
// prompt key. See AttentionSummary.h for what each number means.
#pragma once

#include <cstdint>
#include <vector>

#include "core/AttentionSummary.h"
#include "engine/model/ModelWeights.h"

namespace kvlens {

class Capture;

class AttentionStats {
public:
    static constexpr int64_t kSinkPositions = 4;
    static constexpr int64_t kLocalPositions = 64;
    static constexpr double kMassShare = 0.9;

    // Statistics of `rows` attention rows over `cols` keys (row-major), the
    // first row being the query at position `firstQueryPosition`; row r sees
    // keys 0 .. firstQueryPosition + r. Rows are normalised to sum to 1; rows
    // with no positive mass are left out of the means.
    static HeadAttentionSummary ofRows(const float* probs, int64_t rows, int64_t cols,
                                       int64_t firstQueryPosition);

    // Every layer and query head of a capture (all of its window queries).
    static std::vector<LayerAttentionSummary> fromCapture(const Capture& capture,
                                                          const ProgressFn& progress = {});

    // Fewest of `values` (non-negative, reordered in place) whose sum reaches
    // `target`; all of them when they never do. Expected linear time.
    static int64_t fewestReaching(std::vector<float>& values, double target);
};

}  // namespace kvlens
