// The prompt's per-layer attention statistics (core/AttentionSummary.h) as
// the rows a run stores: five figures for each layer's mean (head -1) and each query head.
#pragma once

#include <vector>

#include "core/AttentionSummary.h"
#include "sessions/StoreRecords.h"

namespace kvlens::sessions {

class LayerStatistics {
public:
    // Names: entropy, effective_positions, positions_90pct, sink_mass, local_mass.
    static std::vector<LayerStatistic> of(const std::vector<LayerAttentionSummary>& layers);
};

}  // namespace kvlens::sessions
