#include "app/InspectFigures.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "engine/analysis/AttentionStats.h"
#include "engine/compress/Capture.h"
#include "viz/CategoricalPalette.h"
#include "viz/Colormap.h"
#include "viz/CsvTable.h"
#include "viz/FunnelChart.h"
#include "viz/HeatmapFigure.h"
#include "viz/KeptPositionsFigure.h"
#include "viz/MethodColor.h"
#include "viz/OutputFile.h"
#include "viz/Scale.h"
#include "viz/SvgChart.h"
#include "viz/ValueRange.h"

namespace kvlens {
namespace {

constexpr int kSelectionWidth = 1400;

std::vector<double> layerAxis(int64_t layers) {
    std::vector<double> x;
    for (int64_t l = 0; l < layers; ++l) x.push_back(double(l));
    return x;
}

std::string fmt(const char* format, double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, format, v);
    return buf;
}

std::string budgetText(const PressParams& p) {
    return p.budget > 0 ? std::to_string(p.budget) : fmt("%g", 100.0 * p.budgetRatio) + "%";
}

// The kept positions of layers [first, last] as a compact table: one row per head.
viz::CsvTable keptTable(const Selection& s, int64_t first, int64_t last) {
    viz::CsvTable table({"layer", s.gqa == GqaMode::KvHead ? "kv_head" : "query_head", "kept", "positions"});
    for (int64_t l = first; l <= last; ++l) {
        for (int64_t h = 0; h < s.headsPerLayer(); ++h) {
            table.addRow({std::to_string(l), std::to_string(h), std::to_string(s.kept[l][h].size()),
                          viz::KeptPositionsFigure::positionList(s.kept[l][h])});
        }
    }
    return table;
}

}  // namespace

InspectFigures::InspectFigures(const InspectData& data, std::string outDir) : data_(data), dir_(std::move(outDir)) {}

std::string InspectFigures::path(const std::string& name) const {
    return (std::filesystem::path(dir_) / name).string();
}

std::vector<std::string> InspectFigures::writeFunnel() const {
    const InspectData& d = data_;
    viz::FunnelChartData f;
    f.layers = d.layers;
    f.promptLength = d.promptLength;
    f.sinkPositions = AttentionStats::kSinkPositions;
    f.localPositions = AttentionStats::kLocalPositions;
    for (const LayerAttentionSummary& s : d.stats) {
        f.effectivePositions.push_back(s.mean.effectivePositions);
        f.positions90.push_back(s.mean.positions90);
        f.sinkMass.push_back(s.mean.sinkMass);
        f.localMass.push_back(s.mean.localMass);
    }
    const Selection& sel = d.chosen().selection;
    viz::FunnelChartData::Budget budget;
    budget.label = d.chosen().params.method + " holds per head";
    budget.color = viz::MethodColor::of(d.chosen().params.method);
    for (int64_t l = 0; l < d.layers; ++l)
        budget.perLayer.push_back(l < int64_t(sel.layerBudgets.size()) ? double(sel.layerBudgets[l]) : double(d.promptLength));
    f.budgets.push_back(budget);
    const viz::SvgChart chart = viz::FunnelChart::build(
        f, 880, 250, "Attention funnel: how widely each layer attends, and what " + d.chosen().params.method + " keeps",
        d.context() + " · last " + std::to_string(std::min<int64_t>(Capture::kMaxWindow, d.promptLength)) +
            " queries, mean over heads · " + d.methodLabel);
    const std::string svg = path("funnel.svg");
    chart.write(svg);
    // The chart draws layer means; every head's own figures go beside them.
    viz::CsvTable heads({"layer", "query_head", "entropy_nats", "effective_positions", "positions_90pct",
                         "sink_mass", "local_mass"});
    for (int64_t l = 0; l < d.layers; ++l) {
        for (size_t h = 0; h < d.stats[l].heads.size(); ++h) {
            const HeadAttentionSummary& s = d.stats[l].heads[h];
            heads.addRow({std::to_string(l), std::to_string(h), viz::CsvTable::number(s.entropy),
                          viz::CsvTable::number(s.effectivePositions), viz::CsvTable::number(s.positions90),
                          viz::CsvTable::number(s.sinkMass), viz::CsvTable::number(s.localMass)});
        }
    }
    const std::string headsCsv = path("funnel_heads.csv");
    heads.write(headsCsv);
    return {svg, viz::csvPathBeside(svg), headsCsv};
}

std::vector<std::string> InspectFigures::writeSelection() const {
    const InspectData& d = data_;
    const Selection& sel = d.chosen().selection;
    const PressParams& p = d.chosen().params;
    const int64_t T = d.promptLength, heads = sel.headsPerLayer();
    // The end the method keeps whole: its observation window, or LagKV's tail.
    const int64_t windowStart = p.keptEndStart(T);
    const std::string endName = p.keptEndName(T);
    // One pixel or more per position: exact categories. Fewer: each pixel shows
    // the share of its positions kept (a "highest wins" colour would overstate it).
    auto plotWidth = [&](bool categories) {
        return viz::KeptPositionsFigure::plotWidth(sel, kSelectionWidth, 400, categories);
    };
    const bool exact = T <= plotWidth(true);
    const std::string how = exact ? "each column one prompt position"
                                  : "each pixel column ~" + fmt("%.1f", double(T) / plotWidth(false)) +
                                        " positions, coloured by the share kept";
    const std::string window = windowStart < T ? "; positions " + std::to_string(windowStart) + "-" +
                                                     std::to_string(T - 1) + " are " +
                                                     (p.keptEndIsLagTail(T) ? "" : "the ") + endName
                                               : "";
    auto setUp = [&](viz::HeatmapFigure& fig, const std::string& title) {
        fig.setTitle(title, d.methodLabel + " | " + d.context() + " | " + how + window);
        fig.setXAxis("prompt position", "token");
        fig.setYAxis(viz::KeptPositionsFigure::headAxis(sel), "");
        viz::KeptPositionsFigure::setScale(fig, exact, endName);
    };
    auto addLayer = [&](viz::HeatmapFigure& fig, int64_t l, const std::string& name) {
        viz::KeptPositionsFigure::addLayer(fig, sel, l, windowStart, exact, name);
    };
    std::vector<std::string> written;
    const int layerHeight = int(std::clamp<int64_t>(170 + heads * 28, 300, 1100));
    for (int64_t l = 0; l < d.layers; ++l) {
        viz::HeatmapFigure fig(kSelectionWidth, layerHeight);
        const int64_t kept = sel.entries(l);
        setUp(fig, "Positions " + p.method + " keeps in layer " + std::to_string(l) + ": " + std::to_string(kept) +
                       " of " + std::to_string(heads * T) + " (" + fmt("%.1f", 100.0 * double(kept) / double(heads * T)) +
                       "%)");
        addLayer(fig, l, "L" + std::to_string(l));
        const std::string png = path("selection_L" + std::to_string(l) + ".png");
        fig.writePng(png);
        keptTable(sel, l, l).write(viz::csvPathBeside(png));
        written.push_back(png);
        written.push_back(viz::csvPathBeside(png));
    }
    // All layers stacked, and beside it the kept positions themselves.
    const int rowsPerLayer = int(std::clamp<int64_t>(heads * 6, 18, 64));
    viz::HeatmapFigure overview(kSelectionWidth, int(std::min<int64_t>(200 + d.layers * (rowsPerLayer + 4), 30000)));
    setUp(overview, "Positions " + p.method + " keeps, all " + std::to_string(d.layers) + " layers: " +
                        std::to_string(sel.entries()) + " of " + std::to_string(d.layers * heads * T) + " (" +
                        fmt("%.1f", 100.0 * double(sel.entries()) / double(d.layers * heads * T)) + "%)");
    for (int64_t l = 0; l < d.layers; ++l) addLayer(overview, l, "L" + std::to_string(l));
    const std::string png = path("selection_overview.png");
    overview.writePng(png);
    keptTable(sel, 0, d.layers - 1).write(viz::csvPathBeside(png));
    written.push_back(png);
    written.push_back(viz::csvPathBeside(png));
    return written;
}

std::vector<std::string> InspectFigures::writeAttention() const {
    const InspectData& d = data_;
    // One colour scale for every map, so that they compare.
    std::vector<viz::ValueRange> ranges;
    for (const InspectData::Map& m : d.maps) {
        const auto& level0 = m.pyramid.levels().front();
        ranges.push_back(viz::ValueRange::of(level0.max.data(), level0.max.size()));
    }
    const viz::Scale scale = viz::Scale::shared(ranges, viz::Scale::Kind::Log, 5);
    std::vector<std::string> written;
    const int64_t group = d.queryHeads / d.kvHeads;
    for (const InspectData::Map& m : d.maps) {
        const int64_t T = m.pyramid.rows();
        viz::HeatmapFigure fig(1000, 940);
        fig.setTitle("Attention of layer " + std::to_string(m.layer) + ", query head " + std::to_string(m.head) +
                         " (KV head " + std::to_string(m.head / group) + ") over the whole prompt",
                     d.context() + " | pixel = max of its cells | log scale shared by this run's maps | "
                                   "above the diagonal: future keys");
        fig.setXAxis("key position", "token");
        fig.setYAxis("query position", "token");
        fig.setColorBar(viz::Colormap::magma(), scale, "attention weight", "");
        fig.addPyramidPanel(m.pyramid, viz::CellRegion::all(T, T), viz::Reduction::Max);
        const std::string png = path("attention_L" + std::to_string(m.layer) + "_H" + std::to_string(m.head) + ".png");
        fig.write(png);
        written.push_back(png);
        written.push_back(viz::csvPathBeside(png));
    }
    return written;
}

std::vector<std::string> InspectFigures::writeHitRate() const {
    const InspectData& d = data_;
    const std::vector<double> x = layerAxis(d.layers);
    viz::SvgChart chart(880, 240);
    const PressParams& p = d.chosen().params;
    const std::string budget = budgetText(p);
    chart.setTitle("Hit rate: share of each head's top-" + std::to_string(d.hitK) +
                       " attended prompt positions the method kept",
                   "budget " + budget + " per head · " + std::to_string(d.hitSteps) +
                       " greedy decode steps with the full cache · " + d.context());
    chart.setXAxis("layer", "", true);
    viz::ChartPanel& all = chart.addPanel("hit rate", "%").setYRange(0, 100);
    viz::ChartPanel& outside = chart.addPanel("outside the last " + std::to_string(p.window) + " positions", "%")
                                   .setYRange(0, 100);
    for (const InspectData::MethodResult& r : d.methods) {
        std::vector<double> a, o;
        for (double v : r.hitRate.perLayer) a.push_back(100.0 * v);
        for (double v : r.hitRate.perLayerOutsideWindow) o.push_back(100.0 * v);
        const bool chosen = &r == &d.chosen();
        const auto style = chosen ? viz::LineStyle::Solid : viz::LineStyle::Dashed;
        all.addLine({r.params.method, x, a, style, chosen, viz::MethodColor::of(r.params.method)});
        outside.addLine({r.params.method, x, o, style, chosen, viz::MethodColor::of(r.params.method)});
    }
    const std::string svg = path("hitrate.svg");
    chart.write(svg);
    return {svg, viz::csvPathBeside(svg)};
}

std::vector<std::string> InspectFigures::writeOverlap() const {
    const InspectData& d = data_;
    const std::vector<double> x = layerAxis(d.layers);
    viz::SvgChart chart(880, 260);
    chart.setTitle("Overlap of each method's kept positions with " + d.chosen().params.method + "'s, budget " +
                       budgetText(d.chosen().params),
                   "Jaccard |A ∩ B| / |A ∪ B| per query head, mean over heads · " + d.context());
    chart.setXAxis("layer", "", true);
    viz::ChartPanel& panel = chart.addPanel("Jaccard overlap", "fraction").setYRange(0, 1);
    for (size_t i = 1; i < d.methods.size(); ++i) {
        const std::string& method = d.methods[i].params.method;
        panel.addLine({method, x, d.methods[i].overlap, viz::LineStyle::Solid, true, viz::MethodColor::of(method)});
    }
    if (d.methods.size() == 1) panel.addLine({d.chosen().params.method + " (itself)", x, d.chosen().overlap});
    const std::string svg = path("overlap.svg");
    chart.write(svg);
    return {svg, viz::csvPathBeside(svg)};
}

std::vector<std::string> InspectFigures::writeMemory() const {
    const InspectData& d = data_;
    const Selection& sel = d.chosen().selection;
    int64_t fullTotal = 0, keptTotal = 0;
    for (int64_t l = 0; l < d.layers; ++l) {
        fullTotal += d.fullBytes(l);
        keptTotal += d.keptBytes(sel, l);
    }
    // MB for real models, KB for toy ones.
    const bool mb = d.fullBytes(0) >= 1000000;
    const double unit = mb ? 1e6 : 1e3;
    std::vector<double> x = layerAxis(d.layers), full, kept;
    for (int64_t l = 0; l < d.layers; ++l) {
        full.push_back(double(d.fullBytes(l)) / unit);
        kept.push_back(double(d.keptBytes(sel, l)) / unit);
    }
    viz::SvgChart chart(880, 280);
    const std::string u = mb ? " MB" : " KB";
    chart.setTitle("KV cache per layer: " + fmt("%.2f", double(fullTotal) / unit) + u + " full → " +
                       fmt("%.2f", double(keptTotal) / unit) + u + " kept by " + d.chosen().params.method + " (" +
                       fmt("%.1f", 100.0 * double(keptTotal) / double(fullTotal)) + "%)",
                   "K+V of the prompt, " + std::to_string(d.elementBytes) + " B per element · " +
                       d.methodLabel + " · " + d.context());
    chart.setXAxis("layer", "", true);
    chart.addPanel("KV bytes", mb ? "MB" : "KB")
        .addBars({"full cache", x, full, 0})
        .addBars({d.chosen().params.method + " kept", x, kept, std::max(1, viz::MethodColor::of(d.chosen().params.method))});
    const std::string svg = path("memory.svg");
    chart.write(svg);
    return {svg, viz::csvPathBeside(svg)};
}

}  // namespace kvlens
