#include "reports/NiahReport.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "core/Methods.h"
#include "core/Error.h"
#include "reports/ReportText.h"
#include "sessions/NiahGrid.h"
#include "reports/SvgRasterizer.h"
#include "viz/OutputFile.h"
#include "viz/CsvTable.h"
#include "viz/MethodColor.h"
#include "viz/SvgChart.h"

namespace kvlens {
namespace {

using sessions::NiahRunRecord;

using RunKind = sessions::NiahGrid::Kind;
using sessions::NiahGrid;

std::string pct(double v) {
    if (!std::isfinite(v)) return "-";
    char b[32];
    std::snprintf(b, sizeof b, "%.1f%%", 100.0 * v);
    return b;
}

void writeText(const std::string& path, const std::string& text) {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f << text;
    if (!f) throw Error(path + ": cannot write");
}

// The chart as SVG, PNG (for viewers without SVG; not in a build without Qt) and the
// CSV of what it draws.
void writeFigure(const viz::SvgChart& chart, const std::string& svgPath, std::vector<std::string>& written) {
    chart.write(svgPath);
    const std::string stem = svgPath.substr(0, svgPath.size() - 4);
    written.insert(written.end(), {svgPath, stem + ".csv"});
    if (!SvgRasterizer::available()) return;
    const std::vector<uint8_t> png = SvgRasterizer::png(chart.svg(), 2.0);
    viz::writeOutputFile(stem + ".png", png.data(), png.size());
    written.push_back(stem + ".png");
}

}  // namespace

std::vector<std::string> NiahReport::write(sessions::SessionStore& store, const std::string& session,
                                           const std::string& dir) {
    const sessions::SessionInfo info = store.session(session);
    const std::vector<NiahRunRecord> all = store.niahRuns(info.id);
    if (all.empty()) throw Error("session '" + session + "' has no niah runs (kvlens niah --save)");
    namespace fs = std::filesystem;
    std::error_code ec;
    fs::create_directories(fs::path(dir) / "figures", ec);
    if (ec) throw Error(dir + ": cannot create the report folder (" + ec.message() + ")");

    const NiahGrid grid(all);
    std::vector<std::string> written;
    viz::CsvTable table({"task", "question", "method", "budget", "runs", "contains", "exact", "needle_kept",
                         "agreement", "mean_kl"});
    std::string html =
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>" + ReportText::xml(session) +
        ": needle in a haystack</title><style>body{font-family:sans-serif;max-width:1000px;margin:2em auto}"
        "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}"
        "th:first-child,td:first-child{text-align:left}</style></head><body>\n<h1>" +
        ReportText::xml(session) + ": needle in a haystack</h1>\n<p>" + std::to_string(all.size()) +
        " runs from " + ReportText::xml(store.path()) +
        ". Accuracy is <i>contains</i> (the share of the expected values in the greedy answer); "
        "needle kept is the share of the needle's token positions each head kept, mean over heads and layers.</p>\n";

    for (const NiahGrid::Group& g : grid.groups()) {
        const std::string task = g.task, mode = g.questionAfter ? "after" : "inside";
        const std::vector<RunKind>& kinds = g.kinds;
        const std::vector<int64_t>& lengths = g.lengths;
        const std::vector<double>& depths = g.depths;
        const auto& overall = g.overall;
        std::string columns;
        for (int64_t L : lengths) columns += (columns.empty() ? "" : ", ") + std::to_string(L);
        std::vector<std::string> depthLabels;
        for (double d : depths) depthLabels.push_back(viz::CsvTable::number(d) + "%");

        html += "<h2>Task " + ReportText::xml(task) + ", question " +
                (g.questionAfter ? "after the compressed context" : "inside the prompt") + "</h2>\n<table><tr><th>method"
                "</th><th>budget</th><th>runs</th><th>contains</th><th>exact</th><th>needle kept</th>"
                "<th>agreement</th><th>mean KL</th></tr>\n";
        for (const RunKind& k : kinds) {
            const sessions::NiahMeans& m = overall.at(k);
            table.addRow({task, mode, k.first, k.second, std::to_string(m.runs), viz::CsvTable::number(m.contains.value()),
                          viz::CsvTable::number(m.exact.value()), viz::CsvTable::number(m.kept.value()),
                          viz::CsvTable::number(m.agreement.value()), viz::CsvTable::number(m.kl.value())});
            char kl[32];
            std::snprintf(kl, sizeof kl, "%.4g", m.kl.value());
            html += "<tr><td>" + ReportText::xml(k.first) + "</td><td>" + ReportText::xml(k.second) + "</td><td>" +
                    std::to_string(m.runs) + "</td><td>" + pct(m.contains.value()) + "</td><td>" + pct(m.exact.value()) +
                    "</td><td>" + pct(m.kept.value()) + "</td><td>" + pct(m.agreement.value()) + "</td><td>" + kl +
                    "</td></tr>\n";
        }
        html += "</table>\n";

        // Heatmaps: one panel per method and budget, depth rows x length columns.
        const std::string stem = "figures/niah_" + task + "_" + mode + "_";
        for (const auto& [metric, label] : {std::make_pair(std::string("contains"), std::string("accuracy (contains)")),
                                            std::make_pair(std::string("needle_kept"), std::string("needle kept"))}) {
            viz::SvgChart chart(820, std::max<int>(110, 16 * static_cast<int>(depths.size())));
            chart.setTitle(label + ", task " + task + ", question " + mode,
                           "one panel per method and budget; rows: needle depth; columns: prompt length " + columns +
                               " tokens; 0 to 1");
            chart.setXAxis("prompt length: columns 1.." + std::to_string(lengths.size()) + " = " + columns, "tokens",
                           true);
            for (const RunKind& k : kinds) {
                viz::HeatmapSeries h;
                h.name = NiahGrid::kindLabel(k);
                h.rows = static_cast<int64_t>(depths.size());
                h.cols = static_cast<int64_t>(lengths.size());
                h.rowLabels = depthLabels;
                h.valueLabel = metric == "contains" ? "accuracy" : "kept";
                h.valueUnit = "";
                h.x0 = 0.5;  // column c centred on c + 1
                h.scale = viz::Scale::linear(0, 1);
                for (double d : depths) {
                    for (int64_t L : lengths) {
                        const NiahGrid::Cell* c = g.cell(k, d, L);
                        const double v = !c                    ? std::nan("")
                                         : metric == "contains" ? c->means.contains.value()
                                                                : c->means.kept.value();
                        h.values.push_back(static_cast<float>(v));
                    }
                }
                chart.addPanel(NiahGrid::kindLabel(k), "").setHeatmap(std::move(h));
            }
            const std::string path = (fs::path(dir) / (stem + metric + ".svg")).string();
            writeFigure(chart, path, written);
            html += "<h3>" + ReportText::xml(label) + "</h3>\n<p><img src=\"" + stem + metric + ".svg\" alt=\"" +
                    ReportText::xml(label) + " heatmaps\"></p>\n";
        }

        // Accuracy against the budget, per method (budgets in entries; FullKV dashed).
        viz::SvgChart curve(820, 260);
        curve.setTitle("Accuracy against the budget, task " + task + ", question " + mode,
                       "mean contains over lengths, depths and samples");
        curve.setXAxis("budget", "entries per head");
        viz::ChartPanel& panel = curve.addPanel("accuracy", "%").setYRange(0, 100);
        std::map<std::string, viz::LineSeries> lines;
        std::vector<std::string> methodOrder;
        double lo = INFINITY, hi = -INFINITY;
        for (const RunKind& k : kinds) {
            char* end = nullptr;
            const double b = std::strtod(k.second.c_str(), &end);
            if (k.first == methods::info(MethodId::Full).name || end == k.second.c_str() || *end != '\0') continue;
            if (!lines.count(k.first)) methodOrder.push_back(k.first);
            viz::LineSeries& s = lines[k.first];
            s.name = k.first;
            s.color = viz::MethodColor::of(k.first);  // as in every other chart of the project
            s.x.push_back(b);
            s.y.push_back(100.0 * overall.at(k).contains.value());
            lo = std::min(lo, b);
            hi = std::max(hi, b);
        }
        if (!methodOrder.empty()) {
            for (const std::string& m : methodOrder) panel.addLine(lines[m]);
            for (const RunKind& k : kinds) {
                if (k.first != methods::info(MethodId::Full).name) continue;
                viz::LineSeries s;
                s.name = "full";
                s.color = viz::MethodColor::of("full");
                s.x = {lo, hi};
                s.y = {100.0 * overall.at(k).contains.value(), 100.0 * overall.at(k).contains.value()};
                s.style = viz::LineStyle::Dashed;
                s.markers = false;
                panel.addLine(s);
            }
            const std::string path = (fs::path(dir) / (stem + "budget.svg")).string();
            writeFigure(curve, path, written);
            html += "<h3>Accuracy against the budget</h3>\n<p><img src=\"" + stem + "budget.svg\" alt=\"accuracy "
                    "against the budget\"></p>\n";
        }
    }
    html += "</body></html>\n";
    const std::string tablePath = (fs::path(dir) / "niah_table.csv").string();
    table.write(tablePath);
    written.push_back(tablePath);
    const std::string htmlPath = (fs::path(dir) / "niah.html").string();
    writeText(htmlPath, html);
    written.push_back(htmlPath);
    return written;
}

}  // namespace kvlens
