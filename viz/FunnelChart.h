// The attention funnel chart that inspect and the report both draw: per layer,
// how widely the prompt's last queries attend (effective positions exp(H),
// positions holding 90% of the attention) against each method's entries per
// head in that layer, and below it the attention mass on the sinks and on the
// most recent positions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "viz/ChartSeries.h"
#include "viz/SvgChart.h"

namespace kvlens::viz {

struct FunnelChartData {
    int64_t layers = 0, promptLength = 0;
    // Layer means; an empty vector is left out of the chart.
    std::vector<double> effectivePositions, positions90, sinkMass, localMass;
    int64_t sinkPositions = 4, localPositions = 64;
    struct Budget {
        std::string label;  // e.g. "snapkv B=128 budget"
        std::vector<double> perLayer;
        LineStyle style = LineStyle::Dashed;
        int color = -1;  // MethodColor::of(method)
    };
    std::vector<Budget> budgets;
};

class FunnelChart {
public:
    // `minPanelHeight`: the panels grow past it to fit the legend's lines.
    static SvgChart build(const FunnelChartData& data, int width, int minPanelHeight,
                          const std::string& title, const std::string& subtitle);
};

}  // namespace kvlens::viz
