// The figures of a comparison report, each as an SVG, a PNG and the CSV of its data:
//   funnel        per layer: the prompt's effective attended positions and the
//                 positions holding 90% of the attention, every run's layer budgets;
//                 attention mass on sinks and local positions
//   kept_L<l>     kept positions of every run in layer l (first, middle, last), one
//                 panel per run, side by side on one shared scale (PNG; its SVG wraps it;
//                 its CSV lists every head's kept positions)
//   overlap       per layer, each run's Jaccard overlap with the first run's selection
//   hitrate       per layer, each run's hit rate (runs that measured it)
//   sweep         when a method ran at two budgets or more: metric against budget,
//                 one line per method
// Charts are viz::SvgChart SVGs rasterised by Qt for their PNG; maps are
// viz::HeatmapFigure PNGs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "reports/ReportData.h"
#include "viz/CsvTable.h"

namespace kvlens {

struct ReportFigure {
    std::string name;  // file stem in figures/
    std::string title, caption;
    bool raster = false;       // a PNG figure (its SVG embeds the PNG); else an SVG chart
    std::string svg;           // standalone SVG document
    std::vector<uint8_t> png;  // the same figure as PNG
    int width = 0, height = 0;  // CSS pixels of the figure
    viz::CsvTable csv = viz::CsvTable({});
};

class ReportFigures {
public:
    // Every figure the data supports, in report order.
    static std::vector<ReportFigure> build(const ReportData& data);

    static ReportFigure funnel(const ReportData& data);
    static std::vector<ReportFigure> keptMaps(const ReportData& data);
    static ReportFigure overlap(const ReportData& data);  // needs two selection runs
    static ReportFigure hitRate(const ReportData& data);  // needs a per-layer hit rate
    static ReportFigure sweep(const ReportData& data);    // needs a method at two budgets
    // The cache's entries per head after each decode step of the runs compressed while
    // decoding (--decode-every, the window's "compress every"), their budgets dashed.
    static ReportFigure cacheWhileDecoding(const ReportData& data);  // needs such a run

    static bool hasOverlap(const ReportData& data);
    static bool hasHitRate(const ReportData& data);
    static bool hasSweep(const ReportData& data);
    static bool hasCacheWhileDecoding(const ReportData& data);
};

}  // namespace kvlens
