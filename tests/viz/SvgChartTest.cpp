// SvgChart: well-formed XML, everything a reader needs is in the text (title, axis labels
// with units, legend entries), escaping, the CSV beside the chart, and error paths.
#include <gtest/gtest.h>

#include <cmath>
#include <regex>
#include <set>

#include "VizTestSupport.h"
#include "core/Error.h"
#include "viz/SvgChart.h"

using namespace kvlens::viz;
using namespace kvlens::viz::test;

namespace {

std::vector<double> iota(int n) {
    std::vector<double> v(n);
    for (int i = 0; i < n; ++i) v[i] = i;
    return v;
}

SvgChart funnelChart() {
    SvgChart chart;
    chart.setTitle("Attention funnel per layer", "SnapKV, budget 512 of 4096 <prompt & tokens>");
    chart.setXAxis("layer", "", true);
    auto& p1 = chart.addPanel("attended positions", "positions").setLogY();
    p1.addLine({"effective attended positions", iota(8), {900, 800, 400, 150, 90, 60, 40, 30}});
    p1.addLine({"positions holding 90% of mass", iota(8), {2500, 2000, 1200, 600, 300, 200, 150, 120}});
    p1.addLine({"budget", iota(8), {512, 512, 512, 512, 512, 512, 512, 512}, LineStyle::Dashed, false, 6});
    auto& p2 = chart.addPanel("attention mass", "fraction").setYRange(0, 1);
    p2.addLine({"sink mass", iota(8), {0.1, 0.3, 0.5, 0.6, 0.62, 0.65, 0.7, 0.72}});
    p2.addLine({"local mass", iota(8), {0.6, 0.4, 0.2, 0.15, 0.12, 0.1, std::nan(""), 0.08}, LineStyle::Dotted});
    return chart;
}

void expectWellFormed(const std::string& svg, const std::string& path, std::string* text) {
    EXPECT_EQ(xmlProblem(svg, text), "") << path;
    bool ran = false;
    EXPECT_TRUE(xmllintAccepts(path, &ran)) << "xmllint rejects " << path;
}

}  // namespace

TEST(SvgChart, FunnelIsWellFormedAndSaysWhatItShows) {
    SvgChart chart = funnelChart();
    std::string path = outputPath("funnel.svg");
    chart.write(path);
    std::string svg = readFile(path);
    EXPECT_EQ(svg, chart.svg());
    std::string text;
    expectWellFormed(svg, path, &text);
    for (const char* s : {"Attention funnel per layer", "SnapKV, budget 512 of 4096 <prompt & tokens>",
                          "layer", "attended positions (positions)", "attention mass (fraction)",
                          "effective attended positions", "positions holding 90% of mass", "budget",
                          "sink mass", "local mass", "1000", "0.2"})
        EXPECT_NE(text.find(s), std::string::npos) << "missing text: " << s;
    EXPECT_NE(svg.find("&lt;prompt &amp; tokens&gt;"), std::string::npos);
    EXPECT_NE(svg.find("stroke-dasharray"), std::string::npos);
    EXPECT_NE(svg.find("width=\"820\""), std::string::npos);
    EXPECT_NE(svg.find("height=\"" + std::to_string(chart.height()) + "\""), std::string::npos);
}

TEST(SvgChart, CsvBesideMatchesTheSeries) {
    SvgChart chart = funnelChart();
    chart.write(outputPath("funnel2.svg"));
    std::string csv = readFile(outputPath("funnel2.csv"));
    EXPECT_EQ(csv, chart.csv().str());
    CsvTable t = chart.csv();
    EXPECT_EQ(t.header(), (std::vector<std::string>{"panel", "series", "layer", "value", "unit"}));
    ASSERT_EQ(t.rows().size(), 5u * 8u);
    EXPECT_EQ(t.rows()[0], (std::vector<std::string>{"attended positions", "effective attended positions", "0", "900", "positions"}));
    EXPECT_EQ(t.rows()[23], (std::vector<std::string>{"attended positions", "budget", "7", "512", "positions"}));
    EXPECT_EQ(t.rows()[24], (std::vector<std::string>{"attention mass", "sink mass", "0", "0.1", "fraction"}));
    EXPECT_EQ(t.rows()[38], (std::vector<std::string>{"attention mass", "local mass", "6", "", "fraction"}));
}

TEST(SvgChart, GroupedBarsAndHitRateLines) {
    SvgChart mem;
    mem.setTitle("KV memory per layer", "bf16, 4096 tokens");
    mem.setXAxis("layer", "", true);
    auto& p = mem.addPanel("KV cache", "MB");
    p.addBars({"full", iota(4), {8, 8, 8, 8}});
    p.addBars({"compressed", iota(4), {1, 1.5, 1, 0.5}});
    std::string path = outputPath("memory.svg");
    mem.write(path);
    std::string text;
    expectWellFormed(readFile(path), path, &text);
    for (const char* s : {"KV memory per layer", "KV cache (MB)", "full", "compressed", "layer"})
        EXPECT_NE(text.find(s), std::string::npos) << s;
    EXPECT_EQ(mem.csv().rows().size(), 8u);
    EXPECT_EQ(mem.csv().rows()[5], (std::vector<std::string>{"KV cache", "compressed", "1", "1.5", "MB"}));

    SvgChart hit;
    hit.setTitle("Hit rate per layer");
    hit.setXAxis("layer", "", true);
    auto& h = hit.addPanel("hit rate", "%").setYRange(0, 100);
    double drop = 2;
    for (const char* m : {"SnapKV", "H2O", "StreamingLLM", "Random"}) {
        std::vector<double> rate;
        for (int l = 0; l < 6; ++l) rate.push_back(95 - drop * l * l);
        h.addLine({m, iota(6), rate});
        drop += 0.5;
    }
    std::string hp = outputPath("hitrate.svg");
    hit.write(hp);
    expectWellFormed(readFile(hp), hp, &text);
    EXPECT_NE(text.find("hit rate (%)"), std::string::npos);
    EXPECT_NE(text.find("StreamingLLM"), std::string::npos);
}

// More series than the palette has colours: those past it reuse a colour but draw dotted,
// with the next marker shape, so no two of the ten methods' lines look alike.
TEST(SvgChart, SeriesPastThePaletteAreDottedWithAnotherMarker) {
    SvgChart chart;
    chart.setTitle("ten lines");
    chart.setXAxis("budget", "");
    auto& p = chart.addPanel("accuracy", "%");
    for (int i = 0; i < 10; ++i) p.addLine({"m" + std::to_string(i), iota(3), {1.0 + i, 2.0 + i, 3.0 + i}});
    const std::string svg = chart.svg();
    // The path of series i is the i-th <path ... stroke-width="2" stroke-linejoin...> element.
    std::vector<std::string> paths;
    for (size_t at = svg.find("stroke-linejoin=\"round\""); at != std::string::npos;
         at = svg.find("stroke-linejoin=\"round\"", at + 1)) {
        const size_t start = svg.rfind("<path", at), end = svg.find("/>", at);
        paths.push_back(svg.substr(start, end - start));
    }
    ASSERT_EQ(paths.size(), 10u);
    for (int i = 0; i < 8; ++i) EXPECT_EQ(paths[i].find("stroke-dasharray"), std::string::npos) << i;
    EXPECT_NE(paths[8].find("stroke-dasharray=\"2 3\""), std::string::npos);
    EXPECT_NE(paths[9].find("stroke-dasharray=\"2 3\""), std::string::npos);
    // Series 8 shares series 0's colour; its markers are squares, series 0's circles.
    auto colourOf = [](const std::string& path) {
        const size_t at = path.find("stroke=\"") + 8;
        return path.substr(at, path.find('"', at) - at);
    };
    EXPECT_EQ(colourOf(paths[8]), colourOf(paths[0]));
    const std::string colour = colourOf(paths[0]);
    EXPECT_NE(svg.find("<circle"), std::string::npos);
    EXPECT_NE(svg.find("height=\"7\" fill=\"" + colour + "\""), std::string::npos);  // a square in series 0's colour
}

TEST(SvgChart, HeatmapPanelsAsRectsOrEmbeddedPng) {
    for (int64_t cols : {16, 4096}) {
        SvgChart chart(820, 200);
        chart.setTitle("Kept positions per layer");
        chart.setXAxis("prompt position", "token", true);
        HeatmapSeries hs;
        hs.name = "kept fraction";
        hs.rows = 4;
        hs.cols = cols;
        hs.values.resize(4 * cols);
        for (int64_t i = 0; i < 4 * cols; ++i) hs.values[i] = float(i % 7) / 6.0f;
        hs.rowLabels = {"L0", "L1", "L2", "L3"};
        hs.valueLabel = "fraction of heads keeping it";
        hs.colormap = &Colormap::viridis();
        chart.addPanel("layer", "").setHeatmap(hs);
        std::string path = outputPath("heatmap_" + std::to_string(cols) + ".svg");
        chart.write(path);
        std::string svg = readFile(path), text;
        expectWellFormed(svg, path, &text);
        EXPECT_NE(text.find("fraction of heads keeping it"), std::string::npos);
        EXPECT_NE(text.find("L3"), std::string::npos);
        EXPECT_NE(text.find("prompt position (token)"), std::string::npos);
        if (cols > 100) {
            EXPECT_NE(svg.find("data:image/png;base64,iVBORw0KGgo"), std::string::npos);
        } else {
            EXPECT_NE(svg.find("<rect"), std::string::npos);
            EXPECT_EQ(svg.find("data:image/png"), std::string::npos);
        }
        CsvTable t = chart.csv();
        ASSERT_EQ(t.rows().size(), size_t(4 * cols));
        EXPECT_EQ(t.rows()[cols + 2], (std::vector<std::string>{"layer", "kept fraction: L1", "2", CsvTable::number32(hs.values[cols + 2]), ""}));
    }
}

TEST(SvgChart, ErrorsAreOneLineAndNameTheFile) {
    SvgChart empty;
    EXPECT_THROW(empty.svg(), kvlens::Error);
    SvgChart bad;
    bad.addPanel("y", "").addLine({"broken", {1, 2, 3}, {1, 2}});
    EXPECT_THROW(bad.svg(), kvlens::Error);
    SvgChart ok = funnelChart();
    std::string path = "/nonexistent-kvlens-dir/funnel.svg";
    try {
        ok.write(path);
        FAIL() << "no error";
    } catch (const kvlens::Error& e) {
        EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    }
    EXPECT_THROW(SvgChart(50, 240), kvlens::Error);
}

TEST(XmlCheck, RejectsMalformedDocuments) {
    EXPECT_EQ(xmlProblem("<a><b x=\"1\"/>t &amp; u</a>"), "");
    EXPECT_NE(xmlProblem("<a><b></a></b>"), "");
    EXPECT_NE(xmlProblem("<a x=1></a>"), "");
    EXPECT_NE(xmlProblem("<a>x & y</a>"), "");
    EXPECT_NE(xmlProblem("<a></a><b></b>"), "");
    EXPECT_NE(xmlProblem("<a x=\"1\" x=\"2\"></a>"), "");
    EXPECT_NE(xmlProblem("<a>"), "");
}

// More series than a panel's height can list: the legend wraps into columns beside the plot,
// every entry drawn inside the chart (24 methods and FullKV in the needle report's curve).
TEST(SvgChart, ALongLegendWrapsIntoColumnsInsideTheChart) {
    SvgChart chart(820, 260);
    chart.setTitle("Accuracy against the budget");
    chart.setXAxis("budget", "entries per head");
    ChartPanel& panel = chart.addPanel("accuracy", "%").setYRange(0, 100);
    for (int i = 0; i < 25; ++i) panel.addLine({"method-" + std::to_string(i), {64, 128, 256}, {double(i), double(2 * i), double(3 * i)}});
    const std::string svg = chart.svg();
    std::string text;
    EXPECT_EQ(xmlProblem(svg, &text), "");
    const std::regex entry("<text x=\"([0-9.]+)\" y=\"([0-9.]+)\"[^>]*>(method-[0-9]+)</text>");
    std::set<std::string> seen;
    std::set<double> columns;
    for (auto it = std::sregex_iterator(svg.begin(), svg.end(), entry); it != std::sregex_iterator(); ++it) {
        const double x = std::stod((*it)[1]), y = std::stod((*it)[2]);
        EXPECT_LT(x, 820.0) << (*it)[3];
        EXPECT_LT(y, double(chart.height())) << (*it)[3];
        seen.insert((*it)[3]);
        columns.insert(x);
    }
    EXPECT_EQ(seen.size(), 25u);
    EXPECT_EQ(columns.size(), 2u);  // 13 rows fit in 260 px: two columns
    // A short legend stays one column.
    SvgChart small(820, 260);
    ChartPanel& few = small.addPanel("accuracy", "%");
    for (int i = 0; i < 5; ++i) few.addLine({"method-" + std::to_string(i), {64, 128}, {1.0, 2.0}});
    const std::string svg2 = small.svg();
    columns.clear();
    for (auto it = std::sregex_iterator(svg2.begin(), svg2.end(), entry); it != std::sregex_iterator(); ++it)
        columns.insert(std::stod((*it)[1]));
    EXPECT_EQ(columns.size(), 1u);
}
