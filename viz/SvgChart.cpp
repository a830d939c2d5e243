// SvgChart layout and SVG emission.
#include "viz/SvgChart.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <sstream>

#include "core/Error.h"
#include "viz/CategoricalPalette.h"
#include "viz/Image.h"
#include "viz/OutputFile.h"
#include "viz/Png.h"
#include "viz/SvgText.h"
#include "viz/Ticks.h"

namespace kvlens::viz {

namespace {

constexpr double kTitleSize = 16, kTextSize = 12, kTickSize = 11;
constexpr int kPad = 12;
constexpr int kPanelGap = 22;
constexpr int kTickLen = 5;
constexpr int kLegendGap = 16;
constexpr int kSwatchW = 28;
constexpr int kLegendStep = 20;       // between legend entries
constexpr int kLegendColumnGap = 12;  // between legend columns
constexpr int kBarWidth = 14;
constexpr size_t kMaxRectCells = 2500;  // heatmaps with more cells are embedded as PNG
const char* kTextColor = "#1e1e1e";
const char* kSubtleColor = "#5a5a5a";
const char* kGridColor = "#e3e3e3";
const char* kAxisColor = "#3c3c3c";

using std::string;
using N = SvgText;

string withUnit(const string& label, const string& unit) {
    return unit.empty() ? label : label + " (" + unit + ")";
}

// Colour index per series: explicit, or by name in order of first appearance.
class ColorAssigner {
public:
    int operator()(const string& name, int explicitIndex) {
        if (explicitIndex >= 0 || explicitIndex == kReferenceGrey) return explicitIndex;
        auto it = byName_.find(name);
        if (it != byName_.end()) return it->second;
        int index = next_++;
        byName_[name] = index;
        return index;
    }

private:
    std::map<string, int> byName_;
    int next_ = 0;
};

string colorOf(int index) {
    if (index == kReferenceGrey) return "#8c8c8c";
    return CategoricalPalette::okabeIto().color(static_cast<size_t>(index)).hex();
}

string dashOf(LineStyle s) {
    switch (s) {
        case LineStyle::Solid: return "";
        case LineStyle::Dashed: return " stroke-dasharray=\"7 4\"";
        case LineStyle::Dotted: return " stroke-dasharray=\"2 3\"";
    }
    return "";
}

// Series past the palette's colours reuse them: their lines are dotted and their markers
// take the next shape, so that no two series of a chart look alike (10 methods, 8 colours).
bool secondCycle(int index) { return index >= static_cast<int>(CategoricalPalette::okabeIto().size()); }
LineStyle styleOf(LineStyle asked, int index) {
    return asked == LineStyle::Solid && secondCycle(index) ? LineStyle::Dotted : asked;
}

// A marker of one of four shapes (by colour index and cycle) centred at (x, y).
string marker(int index, double x, double y, const string& color) {
    std::ostringstream o;
    double r = 3.5;
    index = std::max(0, index);  // the reference grey: circles
    switch ((index + index / static_cast<int>(CategoricalPalette::okabeIto().size())) % 4) {
        case 0:
            o << "<circle cx=\"" << N::num(x) << "\" cy=\"" << N::num(y) << "\" r=\"" << N::num(r) << "\"";
            break;
        case 1:
            o << "<rect x=\"" << N::num(x - r) << "\" y=\"" << N::num(y - r) << "\" width=\"" << N::num(2 * r)
              << "\" height=\"" << N::num(2 * r) << "\"";
            break;
        case 2:
            o << "<path d=\"M" << N::num(x) << "," << N::num(y - r - 0.8) << " L" << N::num(x + r + 0.5) << ","
              << N::num(y + r - 0.5) << " L" << N::num(x - r - 0.5) << "," << N::num(y + r - 0.5) << " Z\"";
            break;
        default:
            o << "<path d=\"M" << N::num(x) << "," << N::num(y - r - 0.8) << " L" << N::num(x + r + 0.8) << ","
              << N::num(y) << " L" << N::num(x) << "," << N::num(y + r + 0.8) << " L" << N::num(x - r - 0.8)
              << "," << N::num(y) << " Z\"";
    }
    o << " fill=\"" << color << "\" stroke=\"white\" stroke-width=\"0.8\"/>";
    return o.str();
}

string text(double x, double y, const string& s, double size, const char* anchor,
            const char* color = kTextColor, const string& extra = "") {
    std::ostringstream o;
    o << "<text x=\"" << N::num(x) << "\" y=\"" << N::num(y) << "\" font-size=\"" << N::num(size)
      << "\" text-anchor=\"" << anchor << "\" fill=\"" << color << "\"" << extra << ">" << N::escape(s)
      << "</text>";
    return o.str();
}

string verticalText(double x, double y, const string& s, double size) {
    std::ostringstream o;
    o << "<text transform=\"translate(" << N::num(x) << "," << N::num(y) << ") rotate(-90)\" font-size=\""
      << N::num(size) << "\" text-anchor=\"middle\" fill=\"" << kTextColor << "\">" << N::escape(s)
      << "</text>";
    return o.str();
}

// A panel's y axis after layout: maps values to pixels.
struct YAxis {
    bool log = false;
    double lo = 0, hi = 1;
    std::vector<Tick> ticks;
    double top = 0, height = 1;
    double operator()(double v) const {
        double t = log ? (std::log10(v) - std::log10(lo)) / (std::log10(hi) - std::log10(lo))
                       : (v - lo) / (hi - lo);
        return top + (1.0 - t) * height;
    }
};

void checkSeries(const string& name, size_t nx, size_t ny) {
    if (nx != ny) {
        throw Error("chart series '" + name + "': " + std::to_string(nx) + " x values but " +
                    std::to_string(ny) + " y values");
    }
}

void checkHeatmap(const HeatmapSeries& h) {
    if (h.rows < 1 || h.cols < 1 || static_cast<int64_t>(h.values.size()) != h.rows * h.cols) {
        throw Error("chart heatmap '" + h.name + "': " + std::to_string(h.values.size()) +
                    " values for " + std::to_string(h.rows) + " x " + std::to_string(h.cols) + " cells");
    }
    if (!h.rowLabels.empty() && static_cast<int64_t>(h.rowLabels.size()) != h.rows) {
        throw Error("chart heatmap '" + h.name + "': " + std::to_string(h.rowLabels.size()) +
                    " row labels for " + std::to_string(h.rows) + " rows");
    }
    if (!h.colormap) throw Error("chart heatmap '" + h.name + "': no colormap");
}

YAxis layoutY(const ChartPanel& p, double top, double height) {
    YAxis a;
    a.top = top;
    a.height = height;
    a.log = p.logY();
    int maxTicks = std::max(2, static_cast<int>(height / 38));
    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    auto include = [&](double v) {
        if (!std::isfinite(v) || (a.log && v <= 0)) return;
        lo = std::min(lo, v);
        hi = std::max(hi, v);
    };
    for (const auto& s : p.lines())
        for (double v : s.y) include(v);
    for (const auto& s : p.bars()) {
        for (double v : s.y) include(v);
        if (!a.log && !s.y.empty()) include(0.0);
    }
    if (p.yRange()) {
        lo = p.yRange()->first;
        hi = p.yRange()->second;
        if (hi < lo) std::swap(lo, hi);
    }
    if (a.log) {
        if (!(lo > 0) || !std::isfinite(lo)) { lo = 1; hi = 10; }
        if (!p.yRange()) {
            lo = std::pow(10.0, std::floor(std::log10(lo) + 1e-9));
            hi = std::pow(10.0, std::ceil(std::log10(hi) - 1e-9));
        }
        if (hi <= lo) hi = lo * 10;
        a.lo = lo;
        a.hi = hi;
        a.ticks = Ticks::log(lo, hi, maxTicks);
        return a;
    }
    if (!std::isfinite(lo)) { lo = 0; hi = 1; }
    if (hi == lo) {
        if (lo == 0) hi = 1;
        else { lo -= std::fabs(lo) * 0.5; hi += std::fabs(hi) * 0.5; }
    }
    if (!p.yRange()) {
        double step = Ticks::niceStep(lo, hi, maxTicks);
        lo = std::floor(lo / step + 1e-9) * step;
        hi = std::ceil(hi / step - 1e-9) * step;
    }
    a.lo = lo;
    a.hi = hi;
    a.ticks = Ticks::linear(lo, hi, maxTicks);
    return a;
}

// Tick labels of a heatmap panel's rows.
std::vector<std::pair<double, string>> heatmapRowTicks(const HeatmapSeries& h, double height) {
    std::vector<std::pair<double, string>> out;  // (row centre, label)
    if (!h.rowLabels.empty()) {
        double perRow = height / static_cast<double>(h.rows);
        auto step = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(14.0 / perRow)));
        for (int64_t r = 0; r < h.rows; r += step) out.push_back({r + 0.5, h.rowLabels[r]});
        return out;
    }
    for (const Tick& t : Ticks::linear(0, static_cast<double>(h.rows - 1), std::max(2, static_cast<int>(height / 38)), true))
        out.push_back({t.value + 0.5, t.label});
    return out;
}

std::vector<Tick> colorBarTicks(const Scale& s, double height) {
    int maxTicks = std::max(2, static_cast<int>(height / 30));
    if (s.kind() == Scale::Kind::Linear) return Ticks::linear(s.lo(), s.hi(), maxTicks);
    std::vector<Tick> out{{s.lo(), "<=" + Ticks::formatLog(s.lo())}};
    for (const Tick& t : Ticks::log(s.lo(), s.hi(), maxTicks))
        if (s(t.value) * height >= 14) out.push_back(t);
    return out;
}

}  // namespace

SvgChart::SvgChart(int width, int panelHeight) : width_(width), panelHeight_(panelHeight) {
    if (width < 100 || panelHeight < 40 || width > 20000 || panelHeight > 20000) {
        throw Error("chart size: width must be 100..20000 and panel height 40..20000, got " +
                    std::to_string(width) + " and " + std::to_string(panelHeight));
    }
}

void SvgChart::setTitle(const string& title, const string& subtitle) {
    title_ = title;
    subtitle_ = subtitle;
}

void SvgChart::setXAxis(const string& label, const string& unit, bool integerTicks) {
    xLabel_ = label;
    xUnit_ = unit;
    xInteger_ = integerTicks;
}

ChartPanel& SvgChart::addPanel(const string& yLabel, const string& yUnit) {
    panels_.emplace_back(yLabel, yUnit);
    return panels_.back();
}

static int topMargin(const string& title, const string& subtitle) {
    return kPad + (title.empty() ? 0 : 20) + (subtitle.empty() ? 0 : 18) + 14;
}

static constexpr int kBottomMargin = kTickLen + 4 + 14 + 8 + 16 + kPad;

int SvgChart::height() const {
    int n = static_cast<int>(panels_.size());
    return topMargin(title_, subtitle_) + n * panelHeight_ + std::max(0, n - 1) * kPanelGap + kBottomMargin;
}

string SvgChart::svg() const {
    if (panels_.empty()) throw Error("chart '" + title_ + "': no panels to draw");
    for (const auto& p : panels_) {
        for (const auto& s : p.lines()) checkSeries(s.name, s.x.size(), s.y.size());
        for (const auto& s : p.bars()) checkSeries(s.name, s.x.size(), s.y.size());
        if (p.heatmap()) checkHeatmap(*p.heatmap());
    }
    const int H = height();
    const int top = topMargin(title_, subtitle_);

    // Shared x range.
    double xlo = std::numeric_limits<double>::infinity(), xhi = -xlo;
    std::vector<double> barXs;
    for (const auto& p : panels_) {
        if (p.heatmap()) {
            const auto& h = *p.heatmap();
            double a = h.x0, b = h.x0 + h.cols * h.dx;
            xlo = std::min({xlo, a, b});
            xhi = std::max({xhi, a, b});
            continue;
        }
        for (const auto& s : p.lines())
            for (double v : s.x)
                if (std::isfinite(v)) { xlo = std::min(xlo, v); xhi = std::max(xhi, v); }
        for (const auto& s : p.bars())
            for (double v : s.x)
                if (std::isfinite(v)) { xlo = std::min(xlo, v); xhi = std::max(xhi, v); barXs.push_back(v); }
    }
    if (!std::isfinite(xlo)) { xlo = 0; xhi = 1; }
    double barSpacing = 1;
    if (!barXs.empty()) {
        std::sort(barXs.begin(), barXs.end());
        barXs.erase(std::unique(barXs.begin(), barXs.end()), barXs.end());
        double minGap = std::numeric_limits<double>::infinity();
        for (size_t i = 1; i < barXs.size(); ++i) minGap = std::min(minGap, barXs[i] - barXs[i - 1]);
        if (std::isfinite(minGap)) barSpacing = minGap;
        xlo -= barSpacing / 2;
        xhi += barSpacing / 2;
    }
    if (xhi == xlo) { xlo -= 0.5; xhi += 0.5; }
    bool anyHeatmap = false;
    for (const auto& p : panels_) anyHeatmap = anyHeatmap || p.heatmap().has_value();
    if (barXs.empty() && !anyHeatmap) {
        // A small margin so that markers at the ends are not cut by the plot's edge.
        double margin = (xhi - xlo) * 0.025;
        xlo -= margin;
        xhi += margin;
    }

    // Per-panel y axes (pixel geometry filled below) and label widths for the left margin.
    ColorAssigner colors;
    std::vector<YAxis> yAxes;
    double tickLabelW = 0;
    for (size_t i = 0; i < panels_.size(); ++i) {
        const ChartPanel& p = panels_[i];
        double ptop = top + i * (panelHeight_ + kPanelGap);
        if (p.heatmap()) {
            YAxis a;
            a.top = ptop;
            a.height = panelHeight_;
            yAxes.push_back(a);
            for (const auto& t : heatmapRowTicks(*p.heatmap(), panelHeight_))
                tickLabelW = std::max(tickLabelW, N::estimateWidth(t.second, kTickSize));
            continue;
        }
        yAxes.push_back(layoutY(p, ptop, panelHeight_));
        for (const auto& t : yAxes.back().ticks)
            tickLabelW = std::max(tickLabelW, N::estimateWidth(t.label, kTickSize));
    }
    const double left = kPad + 16 + 8 + tickLabelW + 4 + kTickLen;

    // Legend column on the right; entries 20 px apart from 8 px below a panel's top, wrapped
    // into side-by-side columns when a panel has more than its height holds.
    const int legendRows = std::max(1, (panelHeight_ - 12) / kLegendStep + 1);  // baselines 4 px below
    auto legendColumns = [&](const ChartPanel& p) {
        const int n = static_cast<int>(p.lines().size() + p.bars().size());
        return std::max(1, (n + legendRows - 1) / legendRows);
    };
    double entryW = 0;
    for (const auto& p : panels_) {
        for (const auto& s : p.lines()) entryW = std::max(entryW, kSwatchW + 6 + N::estimateWidth(s.name, kTextSize));
        for (const auto& s : p.bars()) entryW = std::max(entryW, kSwatchW + 6 + N::estimateWidth(s.name, kTextSize));
    }
    double legendW = 0;
    for (const auto& p : panels_) {
        if (p.heatmap()) {
            const auto& h = *p.heatmap();
            double labelsW = 0;
            for (const auto& t : colorBarTicks(h.scale, panelHeight_))
                labelsW = std::max(labelsW, N::estimateWidth(t.label, kTickSize));
            legendW = std::max(legendW, kBarWidth + kTickLen + 3 + labelsW + 8 + 16.0);
            continue;
        }
        if (p.lines().empty() && p.bars().empty()) continue;
        const int columns = legendColumns(p);
        legendW = std::max(legendW, columns * entryW + (columns - 1) * kLegendColumnGap);
    }
    const double plotLeft = left;
    const double plotRight = width_ - kPad - (legendW > 0 ? legendW + kLegendGap : 0);
    const double plotW = plotRight - plotLeft;
    if (plotW < 60) {
        throw Error("chart '" + title_ + "': width " + std::to_string(width_) +
                    " leaves no room to plot beside the labels and legend");
    }
    auto xPix = [&](double v) { return plotLeft + (v - xlo) / (xhi - xlo) * plotW; };

    std::ostringstream o;
    o << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
    o << "<svg xmlns=\"http://www.w3.org/2000/svg\" xmlns:xlink=\"http://www.w3.org/1999/xlink\" version=\"1.1\" width=\""
      << width_ << "\" height=\"" << H << "\" viewBox=\"0 0 " << width_ << " " << H
      << "\" font-family=\"DejaVu Sans, Verdana, Arial, Helvetica, sans-serif\">\n";
    o << "<title>" << N::escape(title_) << "</title>\n";
    if (!subtitle_.empty()) o << "<desc>" << N::escape(subtitle_) << "</desc>\n";
    o << "<rect x=\"0\" y=\"0\" width=\"" << width_ << "\" height=\"" << H << "\" fill=\"white\"/>\n";
    double y = kPad;
    if (!title_.empty()) {
        y += 15;
        o << text(width_ / 2.0, y, title_, kTitleSize, "middle", kTextColor, " font-weight=\"bold\"") << "\n";
        y += 5;
    }
    if (!subtitle_.empty()) {
        y += 14;
        o << text(width_ / 2.0, y, subtitle_, kTextSize, "middle", kSubtleColor) << "\n";
    }

    std::vector<Tick> xTicks = Ticks::linear(xlo, xhi, std::max(2, static_cast<int>(plotW / 70)), xInteger_);
    for (size_t i = 0; i < panels_.size(); ++i) {
        const ChartPanel& p = panels_[i];
        const YAxis& ya = yAxes[i];
        const double ptop = ya.top, pbottom = ya.top + ya.height;
        const bool last = i + 1 == panels_.size();
        o << "<g class=\"panel\">\n";
        o << "<clipPath id=\"plot" << i << "\"><rect x=\"" << N::num(plotLeft) << "\" y=\"" << N::num(ptop)
          << "\" width=\"" << N::num(plotW) << "\" height=\"" << N::num(ya.height) << "\"/></clipPath>\n";
        // Vertical gridlines and x ticks.
        for (const Tick& t : xTicks) {
            double x = xPix(t.value);
            if (!p.heatmap())
                o << "<line x1=\"" << N::num(x) << "\" y1=\"" << N::num(ptop) << "\" x2=\"" << N::num(x) << "\" y2=\""
                  << N::num(pbottom) << "\" stroke=\"" << kGridColor << "\" stroke-width=\"1\"/>\n";
            o << "<line x1=\"" << N::num(x) << "\" y1=\"" << N::num(pbottom) << "\" x2=\"" << N::num(x) << "\" y2=\""
              << N::num(pbottom + kTickLen) << "\" stroke=\"" << kAxisColor << "\"/>\n";
            if (last) o << text(x, pbottom + kTickLen + 4 + 10, t.label, kTickSize, "middle") << "\n";
        }
        // Legend entries are collected while drawing.
        struct LegendEntry { string name, color; bool bar; LineStyle style; bool markers; int index; };
        std::vector<LegendEntry> legend;

        if (p.heatmap()) {
            const HeatmapSeries& h = *p.heatmap();
            double hx0 = xPix(h.x0), hx1 = xPix(h.x0 + h.cols * h.dx);
            double hl = std::min(hx0, hx1), hw = std::fabs(hx1 - hx0);
            if (static_cast<size_t>(h.rows * h.cols) <= kMaxRectCells) {
                double cw = hw / h.cols, ch = ya.height / h.rows;
                for (int64_t r = 0; r < h.rows; ++r)
                    for (int64_t c = 0; c < h.cols; ++c) {
                        float v = h.values[r * h.cols + c];
                        o << "<rect x=\"" << N::num(hl + c * cw) << "\" y=\"" << N::num(ptop + r * ch) << "\" width=\""
                          << N::num(cw + 0.3) << "\" height=\"" << N::num(ch + 0.3) << "\" fill=\""
                          << h.colormap->map(h.scale(v)).hex() << "\"><title>"
                          << N::escape((h.rowLabels.empty() ? "row " + std::to_string(r) : h.rowLabels[r]) +
                                       ", " + withUnit(xLabel_, xUnit_) + " " + CsvTable::number(h.x0 + c * h.dx) +
                                       ": " + CsvTable::number32(v))
                          << "</title></rect>\n";
                    }
            } else {
                int pw = std::max(1, static_cast<int>(std::lround(hw)));
                int ph = std::max(1, static_cast<int>(std::lround(ya.height)));
                Image raster(pw, ph);
                HeatmapRaster::renderMatrix(h.values, h.rows, h.cols, CellRegion::all(h.rows, h.cols), h.reduction,
                                            *h.colormap, h.scale, raster, PixelRect{0, 0, pw, ph});
                o << "<image x=\"" << N::num(hl) << "\" y=\"" << N::num(ptop) << "\" width=\"" << N::num(hw)
                  << "\" height=\"" << N::num(ya.height)
                  << "\" preserveAspectRatio=\"none\" style=\"image-rendering:pixelated\" xlink:href=\"data:image/png;base64,"
                  << N::base64(encodePng(raster)) << "\"/>\n";
            }
            for (const auto& t : heatmapRowTicks(h, ya.height)) {
                double yy = ptop + t.first / h.rows * ya.height;
                o << "<line x1=\"" << N::num(plotLeft - kTickLen) << "\" y1=\"" << N::num(yy) << "\" x2=\"" << N::num(plotLeft)
                  << "\" y2=\"" << N::num(yy) << "\" stroke=\"" << kAxisColor << "\"/>\n";
                o << text(plotLeft - kTickLen - 4, yy + 4, t.second, kTickSize, "end") << "\n";
            }
            // Colour bar in the legend column.
            double bx = plotRight + kLegendGap;
            o << "<defs><linearGradient id=\"bar" << i << "\" x1=\"0\" y1=\"1\" x2=\"0\" y2=\"0\">";
            for (int k = 0; k <= 32; ++k)
                o << "<stop offset=\"" << N::num(k / 32.0) << "\" stop-color=\"" << h.colormap->map(k / 32.0).hex() << "\"/>";
            o << "</linearGradient></defs>\n";
            o << "<rect x=\"" << N::num(bx) << "\" y=\"" << N::num(ptop) << "\" width=\"" << kBarWidth << "\" height=\""
              << N::num(ya.height) << "\" fill=\"url(#bar" << i << ")\" stroke=\"" << kAxisColor << "\" stroke-width=\"0.8\"/>\n";
            double labelsW = 0;
            for (const Tick& t : colorBarTicks(h.scale, ya.height)) {
                double yy = ptop + (1 - h.scale(t.value)) * ya.height;
                o << "<line x1=\"" << N::num(bx + kBarWidth) << "\" y1=\"" << N::num(yy) << "\" x2=\""
                  << N::num(bx + kBarWidth + kTickLen) << "\" y2=\"" << N::num(yy) << "\" stroke=\"" << kAxisColor << "\"/>\n";
                o << text(bx + kBarWidth + kTickLen + 3, yy + 4, t.label, kTickSize, "start") << "\n";
                labelsW = std::max(labelsW, N::estimateWidth(t.label, kTickSize));
            }
            o << verticalText(bx + kBarWidth + kTickLen + 3 + labelsW + 8 + 8, ptop + ya.height / 2,
                              withUnit(h.valueLabel, h.valueUnit), kTextSize) << "\n";
        } else {
            // Horizontal gridlines and y ticks.
            for (const Tick& t : ya.ticks) {
                double yy = ya(t.value);
                o << "<line x1=\"" << N::num(plotLeft) << "\" y1=\"" << N::num(yy) << "\" x2=\"" << N::num(plotRight)
                  << "\" y2=\"" << N::num(yy) << "\" stroke=\"" << kGridColor << "\" stroke-width=\"1\"/>\n";
                o << "<line x1=\"" << N::num(plotLeft - kTickLen) << "\" y1=\"" << N::num(yy) << "\" x2=\"" << N::num(plotLeft)
                  << "\" y2=\"" << N::num(yy) << "\" stroke=\"" << kAxisColor << "\"/>\n";
                o << text(plotLeft - kTickLen - 4, yy + 4, t.label, kTickSize, "end") << "\n";
            }
            // Grouped bars.
            size_t nb = p.bars().size();
            double groupW = barSpacing / (xhi - xlo) * plotW * 0.8;
            double oneW = nb ? groupW / nb : 0;
            for (size_t b = 0; b < nb; ++b) {
                const BarSeries& s = p.bars()[b];
                int ci = colors(s.name, s.color);
                string col = colorOf(ci);
                o << "<g clip-path=\"url(#plot" << i << ")\">\n";
                for (size_t k = 0; k < s.x.size(); ++k) {
                    double v = s.y[k];
                    if (!std::isfinite(v) || (ya.log && v <= 0)) continue;
                    double base = ya.log ? ya.lo : std::clamp(0.0, ya.lo, ya.hi);
                    double y0 = ya(base), y1 = ya(v);
                    double bx = xPix(s.x[k]) - groupW / 2 + b * oneW;
                    o << "<rect x=\"" << N::num(bx) << "\" y=\"" << N::num(std::min(y0, y1)) << "\" width=\""
                      << N::num(std::max(0.5, oneW - 1)) << "\" height=\"" << N::num(std::fabs(y1 - y0)) << "\" fill=\""
                      << col << "\"><title>" << N::escape(s.name + ", " + xLabel_ + " " + CsvTable::number(s.x[k]) + ": " +
                                                           CsvTable::number(v) + (p.yUnit().empty() ? "" : " " + p.yUnit()))
                      << "</title></rect>\n";
                }
                o << "</g>\n";
                legend.push_back({s.name, col, true, LineStyle::Solid, false, ci});
            }
            // Lines.
            for (const LineSeries& s : p.lines()) {
                int ci = colors(s.name, s.color);
                string col = colorOf(ci);
                std::ostringstream d;
                bool pen = false;
                std::vector<std::pair<double, double>> points;
                for (size_t k = 0; k < s.x.size(); ++k) {
                    double v = s.y[k];
                    if (!std::isfinite(v) || !std::isfinite(s.x[k]) || (ya.log && v <= 0)) { pen = false; continue; }
                    double px = xPix(s.x[k]), py = ya(v);
                    d << (pen ? " L" : (d.tellp() > 0 ? " M" : "M")) << N::num(px) << "," << N::num(py);
                    pen = true;
                    points.push_back({px, py});
                }
                o << "<g clip-path=\"url(#plot" << i << ")\">\n";
                if (!points.empty())
                    o << "<path d=\"" << d.str() << "\" fill=\"none\" stroke=\"" << col
                      << "\" stroke-width=\"2\" stroke-linejoin=\"round\"" << dashOf(styleOf(s.style, ci)) << "/>\n";
                if (s.markers)
                    for (const auto& pt : points) o << marker(ci, pt.first, pt.second, col) << "\n";
                o << "</g>\n";
                legend.push_back({s.name, col, false, styleOf(s.style, ci), s.markers, ci});
            }
            // Legend.
            for (size_t i = 0; i < legend.size(); ++i) {
                const auto& e = legend[i];
                const double lx = plotRight + kLegendGap + double(int(i) / legendRows) * (entryW + kLegendColumnGap);
                const double ly = ptop + 8 + double(int(i) % legendRows) * kLegendStep;
                if (e.bar) {
                    o << "<rect x=\"" << N::num(lx + 6) << "\" y=\"" << N::num(ly - 6) << "\" width=\"16\" height=\"12\" fill=\""
                      << e.color << "\"/>\n";
                } else {
                    o << "<line x1=\"" << N::num(lx) << "\" y1=\"" << N::num(ly) << "\" x2=\"" << N::num(lx + kSwatchW)
                      << "\" y2=\"" << N::num(ly) << "\" stroke=\"" << e.color << "\" stroke-width=\"2\"" << dashOf(e.style)
                      << "/>\n";
                    if (e.markers) o << marker(e.index, lx + kSwatchW / 2.0, ly, e.color) << "\n";
                }
                o << text(lx + kSwatchW + 6, ly + 4, e.name, kTextSize, "start") << "\n";
            }
        }
        // Axes frame: left and bottom.
        o << "<path d=\"M" << N::num(plotLeft) << "," << N::num(ptop) << " L" << N::num(plotLeft) << "," << N::num(pbottom)
          << " L" << N::num(plotRight) << "," << N::num(pbottom) << "\" fill=\"none\" stroke=\"" << kAxisColor
          << "\" stroke-width=\"1\"/>\n";
        o << verticalText(kPad + 10, ptop + ya.height / 2, withUnit(p.yLabel(), p.yUnit()), kTextSize) << "\n";
        o << "</g>\n";
    }
    double lastBottom = yAxes.back().top + yAxes.back().height;
    o << text(plotLeft + plotW / 2, lastBottom + kTickLen + 4 + 14 + 8 + 12, withUnit(xLabel_, xUnit_), kTextSize,
              "middle") << "\n";
    o << "</svg>\n";
    return o.str();
}

CsvTable SvgChart::csv() const {
    CsvTable table({"panel", "series", withUnit(xLabel_.empty() ? "x" : xLabel_, xUnit_), "value", "unit"});
    for (const auto& p : panels_) {
        if (p.heatmap()) {
            const auto& h = *p.heatmap();
            checkHeatmap(h);
            for (int64_t r = 0; r < h.rows; ++r) {
                string series = h.name + ": " + (h.rowLabels.empty() ? "row " + std::to_string(r) : h.rowLabels[r]);
                for (int64_t c = 0; c < h.cols; ++c)
                    table.addRow({p.yLabel(), series, CsvTable::number(h.x0 + c * h.dx),
                                  CsvTable::number32(h.values[r * h.cols + c]), h.valueUnit});
            }
            continue;
        }
        for (const auto& s : p.lines()) {
            checkSeries(s.name, s.x.size(), s.y.size());
            for (size_t k = 0; k < s.x.size(); ++k)
                table.addRow({p.yLabel(), s.name, CsvTable::number(s.x[k]), CsvTable::number(s.y[k]), p.yUnit()});
        }
        for (const auto& s : p.bars()) {
            checkSeries(s.name, s.x.size(), s.y.size());
            for (size_t k = 0; k < s.x.size(); ++k)
                table.addRow({p.yLabel(), s.name, CsvTable::number(s.x[k]), CsvTable::number(s.y[k]), p.yUnit()});
        }
    }
    return table;
}

void SvgChart::writeSvg(const string& path) const { writeOutputFile(path, svg()); }

void SvgChart::writeCsv(const string& path) const { csv().write(path); }

void SvgChart::write(const string& svgPath) const {
    writeSvg(svgPath);
    writeCsv(csvPathBeside(svgPath));
}

}  // namespace kvlens::viz
