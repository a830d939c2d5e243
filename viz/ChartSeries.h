// The data series an SvgChart panel draws: lines, grouped bars, and a heatmap.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "viz/Colormap.h"
#include "viz/HeatmapRaster.h"
#include "viz/Scale.h"

namespace kvlens::viz {

enum class LineStyle { Solid, Dashed, Dotted };

// A series colour outside the palette: mid grey, for reference lines (a budget, a bound)
// drawn beside series that use every palette colour.
constexpr int kReferenceGrey = -2;

// y[i] at x[i]; NaN (or, on a log axis, a value <= 0) leaves a gap in the line.
struct LineSeries {
    std::string name;
    std::vector<double> x, y;
    LineStyle style = LineStyle::Solid;
    bool markers = true;
    int color = -1;  // index into CategoricalPalette::okabeIto(); -1: by series name, in
                     // order of first appearance in the chart (same name, same colour);
                     // kReferenceGrey: grey
};

// One bar per x value; the bar series of a panel are grouped side by side at each x.
struct BarSeries {
    std::string name;
    std::vector<double> x, y;
    int color = -1;  // as LineSeries::color
};

// A rows x cols matrix drawn over the panel's plot area: column c covers x in
// [x0 + c * dx, x0 + (c + 1) * dx), row 0 at the top. A colour bar labelled
// valueLabel (valueUnit) stands in the legend column.
struct HeatmapSeries {
    std::string name;
    std::vector<float> values;  // row-major
    int64_t rows = 0, cols = 0;
    std::vector<std::string> rowLabels;  // optional, one per row
    const Colormap* colormap = &Colormap::viridis();
    Scale scale = Scale::linear(0, 1);
    Reduction reduction = Reduction::Mean;
    std::string valueLabel, valueUnit;
    double x0 = 0, dx = 1;
};

}  // namespace kvlens::viz
