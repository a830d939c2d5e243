// Funnel chart: one log-scale panel of positions, one panel of attention mass.
#include "viz/FunnelChart.h"

#include <algorithm>
#include <cmath>

namespace kvlens::viz {

SvgChart FunnelChart::build(const FunnelChartData& d, int width, int minPanelHeight,
                            const std::string& title, const std::string& subtitle) {
    std::vector<double> x;
    for (int64_t l = 0; l < d.layers; ++l) x.push_back(double(l));
    // SvgChart puts a legend line every 20 px.
    const int height = std::max(minPanelHeight, int(20 * (d.budgets.size() + 3)) + 16);
    SvgChart chart(width, height);
    chart.setTitle(title, subtitle);
    chart.setXAxis("layer", "", true);
    ChartPanel& top = chart.addPanel("attended positions", "positions").setLogY();
    // Colours 0 (full's, never a budget) and 7 (no method's) for the prompt's own lines.
    if (!d.effectivePositions.empty())
        top.addLine({"effective positions exp(entropy)", x, d.effectivePositions, LineStyle::Solid,
                     true, 0});
    if (!d.positions90.empty())
        top.addLine(
            {"positions holding 90% of attention", x, d.positions90, LineStyle::Solid, true, 7});
    for (const FunnelChartData::Budget& b : d.budgets) {
        std::vector<double> y = b.perLayer;
        y.resize(x.size(), std::nan(""));
        top.addLine({b.label, x, y, b.style, false, b.color});
    }
    top.addLine({"prompt length", x, std::vector<double>(x.size(), double(d.promptLength)),
                 LineStyle::Dotted, false, 7});
    if (!d.sinkMass.empty() || !d.localMass.empty()) {
        ChartPanel& mass = chart.addPanel("attention mass", "fraction").setYRange(0, 1);
        if (!d.sinkMass.empty())
            mass.addLine({"on the first " + std::to_string(d.sinkPositions) + " positions (sinks)",
                          x, d.sinkMass});
        if (!d.localMass.empty())
            mass.addLine({"on the last " + std::to_string(d.localPositions) + " positions (local)",
                          x, d.localMass});
    }
    return chart;
}

}  // namespace kvlens::viz
