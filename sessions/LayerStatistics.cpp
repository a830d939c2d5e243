#include "sessions/LayerStatistics.h"

namespace kvlens::sessions {

std::vector<LayerStatistic> LayerStatistics::of(const std::vector<LayerAttentionSummary>& layers) {
    std::vector<LayerStatistic> rows;
    for (size_t l = 0; l < layers.size(); ++l) {
        const int32_t layer = static_cast<int32_t>(l);
        auto add = [&](int32_t head, const HeadAttentionSummary& h) {
            rows.push_back({"entropy", layer, head, h.entropy});
            rows.push_back({"effective_positions", layer, head, h.effectivePositions});
            rows.push_back({"positions_90pct", layer, head, h.positions90});
            rows.push_back({"sink_mass", layer, head, h.sinkMass});
            rows.push_back({"local_mass", layer, head, h.localMass});
        };
        add(-1, layers[l].mean);
        for (size_t h = 0; h < layers[l].heads.size(); ++h) add(static_cast<int32_t>(h), layers[l].heads[h]);
    }
    return rows;
}

}  // namespace kvlens::sessions
