// A standalone SVG chart: a title and subtitle over one or more vertically stacked panels
// (ChartPanel) that share one x axis. Each panel has its y label with unit, nice ticks and
// gridlines, its line series (solid/dashed/dotted, optional markers), grouped bar series,
// or a heatmap with a colour bar, and a legend to its right. Series colours come from the
// Okabe-Ito palette (colour-blind safe), and markers differ in shape as well as colour.
// All text is XML-escaped. csv() gives the plotted data in long form, one row per point:
//
//   panel,series,<x label (x unit)>,value,unit
//
// (for a heatmap, one row per cell, series "<name>: <row label>"). write() writes the SVG
// and that CSV beside it (funnel.svg -> funnel.csv).
//
//   SvgChart chart;
//   chart.setTitle("Hit rate per layer", "SnapKV vs H2O, budget 512");
//   chart.setXAxis("layer", "", true);
//   chart.addPanel("hit rate", "%").setYRange(0, 100).addLine({"SnapKV", layers, rates});
//   chart.write("hitrate.svg");
#pragma once

#include <deque>
#include <string>

#include "viz/ChartPanel.h"
#include "viz/CsvTable.h"

namespace kvlens::viz {

class SvgChart {
public:
    // width: whole SVG; panelHeight: the plot area of each panel (pixels).
    explicit SvgChart(int width = 820, int panelHeight = 240);

    void setTitle(const std::string& title, const std::string& subtitle = "");
    // integerTicks: x ticks at whole numbers only (layers, heads, positions).
    void setXAxis(const std::string& label, const std::string& unit, bool integerTicks = false);
    // Adds a panel under the previous ones; the reference stays valid for the chart's life.
    ChartPanel& addPanel(const std::string& yLabel, const std::string& yUnit);

    size_t panelCount() const { return panels_.size(); }
    int width() const { return width_; }
    // The total height svg() will have.
    int height() const;

    // Throws kvlens::Error when there are no panels, the width leaves no room to plot, or a
    // series is malformed (x and y of different lengths, heatmap of the wrong size).
    std::string svg() const;
    CsvTable csv() const;
    void writeSvg(const std::string& path) const;
    void writeCsv(const std::string& path) const;
    // writeSvg(svgPath) and writeCsv(csvPathBeside(svgPath)).
    void write(const std::string& svgPath) const;

private:
    int width_, panelHeight_;
    std::string title_, subtitle_;
    std::string xLabel_, xUnit_;
    bool xInteger_ = false;
    std::deque<ChartPanel> panels_;
};

}  // namespace kvlens::viz
