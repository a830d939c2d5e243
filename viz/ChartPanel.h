// One panel of an SvgChart: a y axis (label, unit, linear or log, optional fixed range)
// and the series drawn against it. Panels of a chart share the x axis.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "viz/ChartSeries.h"

namespace kvlens::viz {

class ChartPanel {
public:
    ChartPanel(std::string yLabel, std::string yUnit)
        : yLabel_(std::move(yLabel)), yUnit_(std::move(yUnit)) {}

    // Log y axis (decades); values <= 0 are not drawn.
    ChartPanel& setLogY(bool log = true) { logY_ = log; return *this; }
    // A fixed y range (e.g. 0..1 for fractions, 0..100 for percentages) instead of the data's.
    ChartPanel& setYRange(double lo, double hi) { yRange_ = std::make_pair(lo, hi); return *this; }
    ChartPanel& addLine(LineSeries s) { lines_.push_back(std::move(s)); return *this; }
    ChartPanel& addBars(BarSeries s) { bars_.push_back(std::move(s)); return *this; }
    // A heatmap panel draws only its heatmap (line and bar series are ignored).
    ChartPanel& setHeatmap(HeatmapSeries s) { heatmap_ = std::move(s); return *this; }

    const std::string& yLabel() const { return yLabel_; }
    const std::string& yUnit() const { return yUnit_; }
    bool logY() const { return logY_; }
    const std::optional<std::pair<double, double>>& yRange() const { return yRange_; }
    const std::vector<LineSeries>& lines() const { return lines_; }
    const std::vector<BarSeries>& bars() const { return bars_; }
    const std::optional<HeatmapSeries>& heatmap() const { return heatmap_; }

private:
    std::string yLabel_, yUnit_;
    bool logY_ = false;
    std::optional<std::pair<double, double>> yRange_;
    std::vector<LineSeries> lines_;
    std::vector<BarSeries> bars_;
    std::optional<HeatmapSeries> heatmap_;
};

}  // namespace kvlens::viz
