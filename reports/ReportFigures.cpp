#include "reports/ReportFigures.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "reports/Base64.h"
#include "reports/ReportText.h"
#include "core/SelectionOverlap.h"
#include "reports/SvgRasterizer.h"
#include "viz/CategoricalPalette.h"
#include "viz/Colormap.h"
#include "viz/FunnelChart.h"
#include "viz/HeatmapFigure.h"
#include "viz/KeptPositionsFigure.h"
#include "viz/MethodColor.h"
#include "viz/Png.h"
#include "viz/Scale.h"
#include "viz/SvgChart.h"

namespace kvlens {
namespace {

constexpr int kChartWidth = 880;
constexpr int kMapWidth = 1400;

// A panel tall enough for a legend of `entries` lines (SvgChart puts one every 20 px).
int panelHeight(size_t entries, int base) { return std::max(base, int(20 * entries) + 16); }

std::vector<double> layerAxis(int64_t layers) {
    std::vector<double> x;
    for (int64_t l = 0; l < layers; ++l) x.push_back(double(l));
    return x;
}

std::string context(const ReportData& d) {
    return ReportText::sanitize(d.model.spec) + " · " + std::to_string(d.promptLength()) + "-token prompt · session " +
           ReportText::sanitize(d.session.name);
}

ReportFigure chartFigure(const std::string& name, const std::string& title, const std::string& caption,
                         const viz::SvgChart& chart) {
    ReportFigure f;
    f.name = name;
    f.title = title;
    f.caption = caption;
    f.svg = chart.svg();
    f.csv = chart.csv();
    f.width = chart.width();
    f.height = chart.height();
    if (SvgRasterizer::available()) f.png = SvgRasterizer::png(f.svg, 2.0);
    return f;
}

// The stored per-layer statistic `name` (layer mean, head -1) of a run; NaN where missing.
std::vector<double> layerStatistic(const sessions::RunRecord& run, const std::string& name, int64_t layers) {
    std::vector<double> v(size_t(layers), std::nan(""));
    bool any = false;
    for (const auto& s : run.layerStats) {
        if (s.name == name && s.head == -1 && s.layer >= 0 && s.layer < layers) {
            v[size_t(s.layer)] = s.value;
            any = true;
        }
    }
    return any ? v : std::vector<double>{};
}

// Line style of a run among the runs of its method: budgets in increasing order get
// dashed, dotted, solid (colour says the method, style the budget).
viz::LineStyle budgetStyle(const ReportData& d, size_t run) {
    std::set<int64_t> budgets;
    for (const auto& r : d.runs) {
        if (r.params.method == d.runs[run].params.method) budgets.insert(d.budgetEntries(r));
    }
    const auto rank = std::distance(budgets.begin(), budgets.find(d.budgetEntries(d.runs[run])));
    static const viz::LineStyle styles[] = {viz::LineStyle::Dashed, viz::LineStyle::Dotted, viz::LineStyle::Solid};
    return styles[rank % 3];
}

}  // namespace

ReportFigure ReportFigures::funnel(const ReportData& d) {
    int64_t layers = d.model.layers;
    for (const auto& r : d.runs) layers = std::max<int64_t>(layers, int64_t(r.selection.layerBudgets.size()));
    const std::vector<double> x = layerAxis(layers);
    const sessions::RunRecord& first = d.runs.front();
    viz::FunnelChartData f;
    f.layers = layers;
    f.promptLength = d.promptLength();
    f.effectivePositions = layerStatistic(first, "effective_positions", layers);
    f.positions90 = layerStatistic(first, "positions_90pct", layers);
    f.sinkMass = layerStatistic(first, "sink_mass", layers);
    f.localMass = layerStatistic(first, "local_mass", layers);
    for (size_t i = 0; i < d.runs.size(); ++i) {
        const auto& r = d.runs[i];
        if (r.params.isFull() || r.selection.layerBudgets.empty()) continue;
        viz::FunnelChartData::Budget b;
        b.label = ReportData::label(r) + " budget";
        for (int64_t v : r.selection.layerBudgets) b.perLayer.push_back(double(v));
        b.style = budgetStyle(d, i);
        b.color = viz::MethodColor::of(r.params.method);
        f.budgets.push_back(std::move(b));
    }
    const viz::SvgChart chart = viz::FunnelChart::build(
        f, kChartWidth, 260, "Attention funnel and every run's budget per layer",
        context(d) + " · prompt statistics: last window queries, mean over heads");
    return chartFigure("funnel", "Attention funnel and layer budgets",
                       "Upper panel: how widely each layer of the prompt attends (from the statistics stored with "
                       "run #" + std::to_string(first.id) +
                           ") against the entries per head each run kept in that layer (colour: method, "
                           "dash: budget). Lower panel: attention mass on the first and the most recent positions.",
                       chart);
}

std::vector<ReportFigure> ReportFigures::keptMaps(const ReportData& d) {
    std::vector<ReportFigure> out;
    const std::vector<size_t> runs = d.selectionRuns();
    if (runs.empty()) return out;
    const int64_t T = d.promptLength() > 0 ? d.promptLength() : d.runs[runs.front()].selection.promptLength;
    int64_t maxHeads = 1;
    for (size_t i : runs) maxHeads = std::max(maxHeads, d.runs[i].selection.headsPerLayer());
    for (int64_t layer : d.mapLayers()) {
        std::vector<size_t> drawn;
        for (size_t i : runs) {
            const Selection& s = d.runs[i].selection;
            if (layer < s.layers() && s.promptLength == T && int64_t(s.kept[layer].size()) == s.headsPerLayer()) {
                drawn.push_back(i);
            }
        }
        if (drawn.empty()) continue;
        // The end each run keeps whole is shaded: the observation window, or LagKV's tail (one
        // legend entry: the name they share, or both).
        bool window = false, tail = false;
        for (size_t i : drawn) {
            const PressParams& p = d.runs[i].params;
            if (p.keptEndStart(T) < T) (p.keptEndIsLagTail(T) ? tail : window) = true;
        }
        const std::string endName = !tail ? "observation window" : !window ? "LagKV's tail" : "window or LagKV's tail";
        const int panelH = int(std::clamp<int64_t>(maxHeads * 12, 30, 120));
        const int height = int(std::min<int64_t>(170 + int64_t(drawn.size()) * (panelH + 12), 16000));
        // Exact categories when every position gets a pixel column; otherwise each pixel
        // shows the share of its positions kept, on one 0..1 scale for every run.
        auto build = [&](bool categories) {
            viz::HeatmapFigure fig(kMapWidth, height);
            fig.setXAxis("prompt position", "token");
            fig.setYAxis("head", "");
            viz::KeptPositionsFigure::setScale(fig, categories, endName);
            for (size_t i : drawn) {
                const auto& r = d.runs[i];
                const int64_t windowStart = r.params.keptEndStart(T);
                viz::KeptPositionsFigure::addLayer(fig, r.selection, layer, windowStart, categories,
                                                   ReportData::label(r));
            }
            return fig;
        };
        const bool exact = T <= build(true).plotWidth();
        viz::HeatmapFigure fig = build(exact);
        const std::string how = exact ? "each column one prompt position"
                                      : "each pixel column ~" + ReportText::number("%.1f", double(T) / fig.plotWidth()) +
                                            " positions, coloured by the share kept (one scale for all runs)";
        // The raster font has no middle dot: " | " separates the subtitle's parts.
        std::string sub = context(d) + " · " + how;
        for (size_t at = sub.find(" · "); at != std::string::npos; at = sub.find(" · ", at)) sub.replace(at, 4, " | ");
        fig.setTitle("Positions each run keeps in layer " + std::to_string(layer), sub);
        ReportFigure f;
        f.name = "kept_L" + std::to_string(layer);
        f.title = "Kept positions, layer " + std::to_string(layer);
        f.caption = "One panel per run, rows are heads, the same prompt positions across. " +
                    std::string(exact ? "Blue: kept; orange: kept " +
                                            std::string(!tail     ? "observation window"
                                                        : !window ? "as LagKV's tail"
                                                                  : "observation window (LagKV's tail where LagKV ranks)") +
                                            "; grey: dropped."
                                      : "Colour: share of the positions under a pixel that the head kept.");
        f.raster = true;
        f.png = viz::encodePng(fig.render());
        // The data drawn, compactly: every head's kept positions (a cell per position
        // would be runs x heads x prompt rows).
        f.csv = viz::CsvTable({"run", "method", "budget", "layer", "head", "kept", "positions"});
        for (size_t i : drawn) {
            const auto& r = d.runs[i];
            for (int64_t h = 0; h < r.selection.headsPerLayer(); ++h) {
                f.csv.addRow({std::to_string(r.id), r.params.method, ReportData::budgetText(r.params),
                              std::to_string(layer), std::to_string(h),
                              std::to_string(r.selection.kept[layer][h].size()),
                              viz::KeptPositionsFigure::positionList(r.selection.kept[layer][h])});
            }
        }
        f.width = fig.width();
        f.height = fig.height();
        f.svg = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" "
                "xmlns:xlink=\"http://www.w3.org/1999/xlink\" version=\"1.1\" width=\"" +
                std::to_string(f.width) + "\" height=\"" + std::to_string(f.height) + "\" viewBox=\"0 0 " +
                std::to_string(f.width) + " " + std::to_string(f.height) + "\">\n<title>" + ReportText::xml(f.title) +
                "</title>\n<image x=\"0\" y=\"0\" width=\"" + std::to_string(f.width) + "\" height=\"" +
                std::to_string(f.height) + "\" xlink:href=\"data:image/png;base64," + Base64::encode(f.png) +
                "\"/>\n</svg>\n";
        out.push_back(std::move(f));
    }
    return out;
}

bool ReportFigures::hasOverlap(const ReportData& d) {
    const std::vector<size_t> runs = d.selectionRuns();
    for (size_t k = 1; k < runs.size(); ++k) {
        if (SelectionOverlap::comparable(d.runs[runs[0]].selection, d.runs[runs[k]].selection)) return true;
    }
    return false;
}

ReportFigure ReportFigures::overlap(const ReportData& d) {
    const std::vector<size_t> runs = d.selectionRuns();
    const auto& ref = d.runs[runs.front()];
    const std::vector<double> x = layerAxis(ref.selection.layers());
    viz::SvgChart chart(kChartWidth, panelHeight(runs.size() - 1, 260));
    chart.setTitle("Overlap of each run's kept positions with " + ReportData::label(ref) + "'s",
                   "Jaccard |A ∩ B| / |A ∪ B| per query head, mean over heads · " + context(d));
    chart.setXAxis("layer", "", true);
    viz::ChartPanel& panel = chart.addPanel("Jaccard overlap", "fraction").setYRange(0, 1);
    for (size_t k = 1; k < runs.size(); ++k) {
        const auto& r = d.runs[runs[k]];
        if (!SelectionOverlap::comparable(ref.selection, r.selection)) continue;
        panel.addLine({ReportData::label(r), x, SelectionOverlap::jaccardPerLayer(ref.selection, r.selection),
                       budgetStyle(d, runs[k]), true, viz::MethodColor::of(r.params.method)});
    }
    return chartFigure("overlap", "Selection overlap per layer",
                       "Per layer, how many of the positions " + ReportData::label(ref) +
                           " keeps each other run keeps too (1: the same positions). The table after it has "
                           "every pair, averaged over layers.",
                       chart);
}

bool ReportFigures::hasHitRate(const ReportData& d) {
    for (const auto& r : d.runs) {
        if (!ReportData::hitRatePerLayer(r.metrics).empty()) return true;
    }
    return false;
}

ReportFigure ReportFigures::hitRate(const ReportData& d) {
    int64_t k = 0, steps = 0;
    for (const auto& r : d.runs) {
        if (!ReportData::hitRatePerLayer(r.metrics).empty() && r.metrics.hitK > 0) {
            k = r.metrics.hitK, steps = r.metrics.hitSteps;
            break;
        }
    }
    size_t lines = 0;
    for (const auto& r : d.runs) lines += !ReportData::hitRatePerLayer(r.metrics).empty();
    viz::SvgChart chart(kChartWidth, panelHeight(lines, 240));
    chart.setTitle("Hit rate per layer: share of each head's top-" + (k ? std::to_string(k) + " " : "") +
                       "attended prompt positions each run kept",
                   (steps ? std::to_string(steps) + " greedy decode steps with the full cache · " : std::string()) +
                       context(d));
    chart.setXAxis("layer", "", true);
    viz::ChartPanel& panel = chart.addPanel("hit rate", "%").setYRange(0, 100);
    for (size_t i = 0; i < d.runs.size(); ++i) {
        const auto& r = d.runs[i];
        const std::vector<double> per = ReportData::hitRatePerLayer(r.metrics);
        if (per.empty()) continue;
        std::vector<double> y;
        for (double v : per) y.push_back(100.0 * v);
        panel.addLine({ReportData::label(r), layerAxis(int64_t(per.size())), y, budgetStyle(d, i), true,
                       viz::MethodColor::of(r.params.method)});
    }
    return chartFigure("hitrate", "Hit rate per layer",
                       "The SnapKV paper's hit rate: of each query head's most attended prompt positions during "
                       "full-cache decoding, the share the run kept.",
                       chart);
}

bool ReportFigures::hasSweep(const ReportData& d) {
    std::map<std::string, std::set<int64_t>> budgets;
    for (const auto& r : d.runs) {
        if (!r.params.isFull()) budgets[r.params.method].insert(d.budgetEntries(r));
    }
    for (const auto& [method, b] : budgets) {
        if (b.size() >= 2) return true;
    }
    return false;
}

ReportFigure ReportFigures::sweep(const ReportData& d) {
    // Per method, its runs by budget (methods with one budget have no line to draw).
    std::map<std::string, std::vector<size_t>> byMethod;
    for (size_t i = 0; i < d.runs.size(); ++i) {
        if (!d.runs[i].params.isFull()) byMethod[d.runs[i].params.method].push_back(i);
    }
    bool anyHit = false, klPositive = true;
    for (const auto& r : d.runs) {
        if (r.params.isFull()) continue;
        anyHit |= !std::isnan(ReportData::hitRate(r.metrics));
        klPositive &= r.metrics.meanKl > 0;
    }
    viz::SvgChart chart(kChartWidth, 180);
    chart.setTitle("Budget sweeps: each metric against the budget, one line per method", context(d));
    chart.setXAxis("budget", "entries per head", true);
    viz::ChartPanel& agreement = chart.addPanel("token agreement", "%").setYRange(0, 100);
    viz::ChartPanel& top1 = chart.addPanel("top-1 agreement", "%").setYRange(0, 100);
    viz::ChartPanel& kl = chart.addPanel("mean KL", "nats").setLogY(klPositive);
    viz::ChartPanel& ratio = chart.addPanel("KV memory", "% of full").setYRange(0, 100);
    viz::ChartPanel* hit = anyHit ? &chart.addPanel("hit rate", "%").setYRange(0, 100) : nullptr;
    for (auto& [method, idx] : byMethod) {
        std::set<int64_t> distinct;
        for (size_t i : idx) distinct.insert(d.budgetEntries(d.runs[i]));
        if (distinct.size() < 2) continue;
        std::stable_sort(idx.begin(), idx.end(),
                         [&](size_t a, size_t b) { return d.budgetEntries(d.runs[a]) < d.budgetEntries(d.runs[b]); });
        std::vector<double> x, agree, t1, k, rat, h;
        for (size_t i : idx) {
            const RunMetrics& m = d.runs[i].metrics;
            x.push_back(double(d.budgetEntries(d.runs[i])));
            agree.push_back(100.0 * m.tokenAgreement);
            t1.push_back(100.0 * m.top1Agreement);
            k.push_back(m.meanKl);
            rat.push_back(100.0 * m.ratio);
            h.push_back(100.0 * ReportData::hitRate(m));
        }
        const int color = viz::MethodColor::of(method);
        agreement.addLine({method, x, agree, viz::LineStyle::Solid, true, color});
        top1.addLine({method, x, t1, viz::LineStyle::Solid, true, color});
        kl.addLine({method, x, k, viz::LineStyle::Solid, true, color});
        ratio.addLine({method, x, rat, viz::LineStyle::Solid, true, color});
        if (hit) hit->addLine({method, x, h, viz::LineStyle::Solid, true, color});
    }
    return chartFigure("sweep", "Budget sweeps",
                       "Methods the session ran at two budgets or more: quality and memory against the budget.", chart);
}

bool ReportFigures::hasCacheWhileDecoding(const ReportData& d) {
    for (const auto& r : d.runs)
        if (r.metrics.decodeEvery > 0 && !r.metrics.cacheEntries.empty()) return true;
    return false;
}

ReportFigure ReportFigures::cacheWhileDecoding(const ReportData& d) {
    size_t lines = 0;
    std::set<int64_t> budgets;
    for (const auto& r : d.runs) {
        if (r.metrics.decodeEvery <= 0 || r.metrics.cacheEntries.empty()) continue;
        ++lines;
        budgets.insert(r.params.budget);
    }
    viz::SvgChart chart(kChartWidth, panelHeight(lines + budgets.size(), 260));
    chart.setTitle("Cache while decoding: entries per head after each answer token fed", context(d));
    chart.setXAxis("decode step", "", true);
    viz::ChartPanel& panel = chart.addPanel("cache", "entries per head");
    double last = 1.0;
    for (size_t i = 0; i < d.runs.size(); ++i) {
        const auto& r = d.runs[i];
        if (r.metrics.decodeEvery <= 0 || r.metrics.cacheEntries.empty()) continue;
        std::vector<double> x, y;
        for (size_t s = 0; s < r.metrics.cacheEntries.size(); ++s) {
            x.push_back(double(s + 1));
            y.push_back(double(r.metrics.cacheEntries[s]));
        }
        last = std::max(last, x.back());
        panel.addLine({ReportData::label(r) + ", every " + std::to_string(r.metrics.decodeEvery), x, y,
                       budgetStyle(d, i), false, viz::MethodColor::of(r.params.method)});
    }
    for (int64_t b : budgets) {
        panel.addLine({"budget " + std::to_string(b), {1.0, last}, {double(b), double(b)}, viz::LineStyle::Dashed, false,
                       viz::kReferenceGrey});
    }
    return chartFigure("cache", "Cache while decoding",
                       "The cache's entries per head (all its entries over layers and cache heads, rounded up) after "
                       "each answer token fed, for the runs compressed while decoding; grey dashes: their budgets. "
                       "A rule that holds the budget saw-tooths from it to budget + every - 1, and runs that hold it "
                       "alike draw over each other (the last listed on top).",
                       chart);
}

std::vector<ReportFigure> ReportFigures::build(const ReportData& d) {
    std::vector<ReportFigure> out;
    out.push_back(funnel(d));
    for (ReportFigure& f : keptMaps(d)) out.push_back(std::move(f));
    if (hasOverlap(d)) out.push_back(overlap(d));
    if (hasHitRate(d)) out.push_back(hitRate(d));
    if (hasSweep(d)) out.push_back(sweep(d));
    if (hasCacheWhileDecoding(d)) out.push_back(cacheWhileDecoding(d));
    return out;
}

}  // namespace kvlens
