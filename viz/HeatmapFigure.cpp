// HeatmapFigure layout and drawing.
#include "viz/HeatmapFigure.h"

#include <algorithm>
#include <cmath>

#include "core/Error.h"
#include "viz/OutputFile.h"
#include "viz/Png.h"
#include "viz/Ticks.h"

namespace kvlens::viz {

namespace {

const Rgb kText{30, 30, 30};
const Rgb kSubtle{90, 90, 90};
const Rgb kFrame{60, 60, 60};
constexpr int kPad = 10;
constexpr int kTickLen = 4;
constexpr int kPanelGap = 5;
constexpr int kBarGap = 14;
constexpr int kBarWidth = 14;
constexpr int kSwatch = 12;

std::string withUnit(const std::string& label, const std::string& unit) {
    return unit.empty() ? label : label + " (" + unit + ")";
}

struct RowTick {
    double row;  // fractional row position of the tick (cell centre)
    std::string label;
};

// Ticks for the rows of a panel that is `height` pixels tall.
std::vector<RowTick> rowTicks(const CellRegion& region, const std::vector<std::string>& labels,
                              int height) {
    std::vector<RowTick> out;
    int lh = Font::normal().lineHeight();
    int64_t n = region.rows();
    if (!labels.empty()) {
        double perRow = static_cast<double>(height) / n;
        auto step = static_cast<int64_t>(std::ceil((lh + 1) / perRow));
        step = std::max<int64_t>(step, 1);
        for (int64_t i = 0; i < n; i += step) out.push_back({i + 0.5, labels[i]});
        return out;
    }
    if (height < 2 * lh) return out;
    for (const Tick& t : Ticks::linear(region.row0, region.row1 - 1, std::max(2, height / (3 * lh)), true))
        out.push_back({t.value - region.row0 + 0.5, t.label});
    return out;
}

struct BarTick {
    double t;  // position along the bar, 0 bottom .. 1 top
    std::string label;
};

std::vector<BarTick> colorBarTicks(const Scale& scale, int height) {
    std::vector<BarTick> out;
    int lh = Font::normal().lineHeight();
    int maxTicks = std::max(2, height / (2 * lh));
    if (scale.kind() == Scale::Kind::Linear) {
        for (const Tick& t : Ticks::linear(scale.lo(), scale.hi(), maxTicks))
            out.push_back({scale(t.value), t.label});
        return out;
    }
    // Log: values at or below the floor are drawn as the floor; say so at the bottom.
    out.push_back({0.0, "<=" + Ticks::formatLog(scale.lo())});
    for (const Tick& t : Ticks::log(scale.lo(), scale.hi(), maxTicks)) {
        double pos = scale(t.value);
        if (pos * height < lh) continue;  // would overlap the floor label
        out.push_back({pos, t.label});
    }
    return out;
}

}  // namespace

HeatmapFigure::HeatmapFigure(int width, int height) : width_(width), height_(height) {
    if (width < 1 || height < 1 || width > Image::kMaxSide || height > Image::kMaxSide) {
        throw Error("heatmap figure size " + std::to_string(width) + "x" + std::to_string(height) +
                    ": each side must be 1.." + std::to_string(Image::kMaxSide));
    }
}

void HeatmapFigure::setTitle(const std::string& title, const std::string& subtitle) {
    title_ = title;
    subtitle_ = subtitle;
}

void HeatmapFigure::setXAxis(const std::string& label, const std::string& unit) {
    xLabel_ = withUnit(label, unit);
}

void HeatmapFigure::setYAxis(const std::string& label, const std::string& unit) {
    yLabel_ = withUnit(label, unit);
}

void HeatmapFigure::setColorBar(const Colormap& colormap, const Scale& scale,
                                const std::string& label, const std::string& unit) {
    colormap_ = &colormap;
    scale_ = scale;
    barLabel_ = withUnit(label, unit);
}

void HeatmapFigure::setLegend(const CategoricalPalette& palette) { palette_ = palette; }

void HeatmapFigure::addPyramidPanel(const TilePyramid& pyramid, const CellRegion& region,
                                    Reduction reduction, const std::string& name) {
    Panel p;
    p.kind = Kind::Pyramid;
    p.pyramid = &pyramid;
    p.region = region;
    p.reduction = reduction;
    p.rows = pyramid.rows();
    p.cols = pyramid.cols();
    p.name = name;
    panels_.push_back(std::move(p));
}

void HeatmapFigure::addMatrixPanel(std::vector<float> values, int64_t rows, int64_t cols,
                                   Reduction reduction, const std::string& name,
                                   std::vector<std::string> rowLabels) {
    Panel p;
    p.kind = Kind::Matrix;
    p.values = std::move(values);
    p.rows = rows;
    p.cols = cols;
    p.region = CellRegion::all(rows, cols);
    p.reduction = reduction;
    p.name = name;
    p.rowLabels = std::move(rowLabels);
    panels_.push_back(std::move(p));
}

void HeatmapFigure::addCategoryPanel(std::vector<uint8_t> codes, int64_t rows, int64_t cols,
                                     const std::string& name, std::vector<std::string> rowLabels) {
    Panel p;
    p.kind = Kind::Categories;
    p.codes = std::move(codes);
    p.rows = rows;
    p.cols = cols;
    p.region = CellRegion::all(rows, cols);
    p.name = name;
    p.rowLabels = std::move(rowLabels);
    panels_.push_back(std::move(p));
}

Image HeatmapFigure::render() const {
    Image image(width_, height_);
    renderInto(image, 0, 0);
    return image;
}

void HeatmapFigure::writePng(const std::string& path) const { viz::writePng(render(), path); }

CsvTable HeatmapFigure::csv(int64_t maxTilesPerPanel) const {
    const Layout L = layout();
    std::string y = yLabel_.empty() ? "row" : yLabel_;
    std::string x = xLabel_.empty() ? "column" : xLabel_;
    CsvTable t({"panel", y + " from", y + " to", x + " from", x + " to", "max", "mean", "category"});
    auto num = [](int64_t v) { return std::to_string(v); };
    for (size_t i = 0; i < panels_.size(); ++i) {
        const Panel& p = panels_[i];
        std::string name = p.name.empty() ? std::to_string(i) : p.name;
        const CellRegion& r = p.region;
        if (p.kind == Kind::Pyramid) {
            double perPixel = std::min(static_cast<double>(r.rows()) / L.panelH,
                                       static_cast<double>(r.cols()) / L.plotW);
            const auto& levels = p.pyramid->levels();
            size_t li = static_cast<size_t>(&p.pyramid->levelFor(perPixel) - levels.data());
            auto tilesIn = [&](const TilePyramid::Level& l) {
                return ((r.row1 - 1) / l.tile - r.row0 / l.tile + 1) * ((r.col1 - 1) / l.tile - r.col0 / l.tile + 1);
            };
            while (li + 1 < levels.size() && tilesIn(levels[li]) > maxTilesPerPanel) ++li;
            const auto& l = levels[li];
            for (int64_t tr = r.row0 / l.tile; tr <= (r.row1 - 1) / l.tile; ++tr)
                for (int64_t tc = r.col0 / l.tile; tc <= (r.col1 - 1) / l.tile; ++tc)
                    t.addRow({name, num(tr * l.tile), num(std::min((tr + 1) * l.tile, p.rows) - 1),
                              num(tc * l.tile), num(std::min((tc + 1) * l.tile, p.cols) - 1),
                              CsvTable::number32(l.maxAt(tr, tc)), CsvTable::number32(l.meanAt(tr, tc)), ""});
            continue;
        }
        for (int64_t row = r.row0; row < r.row1; ++row)
            for (int64_t col = r.col0; col < r.col1; ++col) {
                std::string rowName = p.rowLabels.empty() ? num(row) : p.rowLabels[row - r.row0];
                if (p.kind == Kind::Matrix) {
                    std::string v = CsvTable::number32(p.values[row * p.cols + col]);
                    t.addRow({name, rowName, rowName, num(col), num(col), v, v, ""});
                } else {
                    uint8_t c = p.codes[row * p.cols + col];
                    std::string category = c < palette_->size() ? palette_->entry(c).name : "";
                    t.addRow({name, rowName, rowName, num(col), num(col), num(c), num(c), category});
                }
            }
    }
    return t;
}

void HeatmapFigure::writeCsv(const std::string& path) const { csv().write(path); }

void HeatmapFigure::write(const std::string& pngPath) const {
    writePng(pngPath);
    writeCsv(csvPathBeside(pngPath));
}

void HeatmapFigure::drawPanel(Image& image, const Panel& p, const PixelRect& r, int tickRight,
                              bool drawRowTicks) const {
    switch (p.kind) {
        case Kind::Pyramid:
            HeatmapRaster::render(*p.pyramid, p.region, p.reduction, *colormap_, *scale_, image, r);
            break;
        case Kind::Matrix:
            HeatmapRaster::renderMatrix(p.values, p.rows, p.cols, p.region, p.reduction, *colormap_,
                                        *scale_, image, r);
            break;
        case Kind::Categories:
            HeatmapRaster::renderCategories(p.codes, p.rows, p.cols, p.region, *palette_, image, r);
            break;
    }
    image.strokeRect(r.x - 1, r.y - 1, r.w + 2, r.h + 2, kFrame);
    if (!drawRowTicks) return;
    for (const RowTick& t : rowTicks(p.region, p.rowLabels, r.h)) {
        int y = r.y + static_cast<int>(std::floor(t.row * r.h / p.region.rows()));
        image.hline(r.x - 1 - kTickLen, r.x - 2, y, kFrame);
        image.drawText(tickRight, y, t.label, kText, Font::normal(), Anchor::MiddleRight);
    }
}

HeatmapFigure::Layout HeatmapFigure::layout() const {
    if (panels_.empty()) throw Error("heatmap figure: no panels to draw");
    for (const Panel& p : panels_) {
        if (p.region.cols() != panels_[0].region.cols() || p.region.col0 != panels_[0].region.col0) {
            throw Error("heatmap figure: panels must share the same columns (x axis)");
        }
        if (p.kind == Kind::Categories && !palette_)
            throw Error("heatmap figure: a category panel needs setLegend(palette)");
        if (p.kind != Kind::Categories && !colormap_)
            throw Error("heatmap figure: a value panel needs setColorBar(colormap, scale, ...)");
        if (!p.rowLabels.empty() && static_cast<int64_t>(p.rowLabels.size()) != p.region.rows())
            throw Error("heatmap figure: panel '" + p.name + "' has " +
                        std::to_string(p.rowLabels.size()) + " row labels for " +
                        std::to_string(p.region.rows()) + " rows");
    }
    const Font& normal = Font::normal();
    const Font& large = Font::large();
    const int lh = normal.lineHeight();

    // Vertical budget.
    int top = kPad;
    if (!title_.empty()) top += large.lineHeight() + 2;
    if (!subtitle_.empty()) top += lh + 2;
    top += 8;
    int bottom = kTickLen + 2 + lh + (xLabel_.empty() ? 0 : 4 + lh) + kPad;

    // Horizontal budget: y label, panel names, row tick labels, tick marks.
    int nameW = 0, tickW = 0;
    for (const Panel& p : panels_) {
        nameW = std::max(nameW, normal.textWidth(p.name));
        if (!p.rowLabels.empty()) {
            for (const auto& l : p.rowLabels) tickW = std::max(tickW, normal.textWidth(l));
        } else {
            tickW = std::max(tickW, normal.textWidth(Ticks::format(static_cast<double>(p.region.row1 - 1), 1)));
        }
    }
    int left = kPad + (yLabel_.empty() ? 0 : lh + 6) + (nameW ? nameW + 8 : 0) + tickW + 3 + kTickLen + 1;

    // Right: colour bar and/or legend.
    int plotTop = top, plotBottom = height_ - bottom;
    int plotH = plotBottom - plotTop;
    std::vector<BarTick> barTicks;
    int barW = 0;
    bool usesColor = false, usesCategories = false;
    for (const Panel& p : panels_) (p.kind == Kind::Categories ? usesCategories : usesColor) = true;
    if (usesColor && plotH > 0) {
        barTicks = colorBarTicks(*scale_, plotH);
        int labelsW = 0;
        for (const auto& t : barTicks) labelsW = std::max(labelsW, normal.textWidth(t.label));
        barW = kBarGap + kBarWidth + kTickLen + 3 + labelsW + (barLabel_.empty() ? 0 : 8 + lh);
    }
    int legendW = 0;
    if (usesCategories) {
        int namesW = 0;
        for (const auto& e : palette_->entries()) namesW = std::max(namesW, normal.textWidth(e.name));
        legendW = kBarGap + kSwatch + 6 + namesW;
    }
    int right = barW + legendW + kPad;

    int plotLeft = left, plotRight = width_ - right;
    int plotW = plotRight - plotLeft;
    int n = static_cast<int>(panels_.size());
    int panelH = (plotH - kPanelGap * (n - 1)) / std::max(n, 1);
    if (plotW < 8 || panelH < 1) {
        throw Error("heatmap figure " + std::to_string(width_) + "x" + std::to_string(height_) +
                    " is too small for its labels and " + std::to_string(n) + " panel(s)");
    }
    Layout L;
    L.plotTop = plotTop;
    L.plotLeft = plotLeft;
    L.plotRight = plotRight;
    L.plotW = plotW;
    L.panelH = panelH;
    L.tickW = tickW;
    L.barW = barW;
    L.usesColor = usesColor;
    L.usesCategories = usesCategories;
    L.barTicks.reserve(barTicks.size());
    for (const auto& t : barTicks) L.barTicks.push_back({t.t, t.label});
    return L;
}


void HeatmapFigure::renderInto(Image& image, int ox, int oy) const {
    const Layout L = layout();
    const Font& normal = Font::normal();
    const Font& large = Font::large();
    const int lh = normal.lineHeight();
    const int plotTop = L.plotTop, plotLeft = L.plotLeft, plotRight = L.plotRight, plotW = L.plotW;
    const int panelH = L.panelH, tickW = L.tickW, barW = L.barW;
    const bool usesColor = L.usesColor, usesCategories = L.usesCategories;
    const int n = static_cast<int>(panels_.size());
    std::vector<BarTick> barTicks;
    for (const auto& t : L.barTicks) barTicks.push_back({t.first, t.second});
    image.fillRect(ox, oy, width_, height_, Rgb{255, 255, 255});

    // Title and subtitle.
    int y = oy + kPad;
    if (!title_.empty()) {
        image.drawText(ox + width_ / 2, y, title_, kText, large, Anchor::TopCenter);
        y += large.lineHeight() + 2;
    }
    if (!subtitle_.empty()) image.drawText(ox + width_ / 2, y, subtitle_, kSubtle, normal, Anchor::TopCenter);

    // Panels.
    int tickRight = ox + plotLeft - 1 - kTickLen - 3;
    int nameRight = tickRight - tickW - 8;
    for (int i = 0; i < n; ++i) {
        const Panel& p = panels_[i];
        PixelRect r{ox + plotLeft, oy + plotTop + i * (panelH + kPanelGap), plotW, panelH};
        drawPanel(image, p, r, tickRight, true);
        if (!p.name.empty()) {
            image.drawText(tickW ? nameRight : tickRight, r.y + r.h / 2, p.name, kText, normal,
                           Anchor::MiddleRight);
        }
    }
    int panelsBottom = oy + plotTop + n * panelH + (n - 1) * kPanelGap;

    // Shared x axis.
    const CellRegion& xr = panels_[0].region;
    int xLabelW = normal.textWidth(Ticks::format(static_cast<double>(xr.col1 - 1), 1));
    int maxXTicks = std::max(2, plotW / (xLabelW + 30));
    for (const Tick& t : Ticks::linear(xr.col0, xr.col1 - 1, maxXTicks, true)) {
        int x = ox + plotLeft + static_cast<int>(std::floor((t.value - xr.col0 + 0.5) * plotW / xr.cols()));
        image.vline(x, panelsBottom, panelsBottom + kTickLen - 1, kFrame);
        image.drawText(x, panelsBottom + kTickLen + 2, t.label, kText, normal, Anchor::TopCenter);
    }
    if (!xLabel_.empty()) {
        image.drawText(ox + plotLeft + plotW / 2, panelsBottom + kTickLen + 2 + lh + 4, xLabel_, kText,
                       normal, Anchor::TopCenter);
    }
    if (!yLabel_.empty()) {
        image.drawTextVertical(ox + kPad + lh / 2, (oy + plotTop + panelsBottom) / 2, yLabel_, kText,
                               normal, Anchor::Center);
    }

    // Colour bar: t = 1 at the top.
    int barX = ox + plotRight + kBarGap;
    int barTop = oy + plotTop, barH = panelsBottom - barTop;
    if (usesColor) {
        for (int yy = 0; yy < barH; ++yy) {
            double t = 1.0 - (yy + 0.5) / barH;
            image.fillRect(barX, barTop + yy, kBarWidth, 1, colormap_->map(t));
        }
        image.strokeRect(barX - 1, barTop - 1, kBarWidth + 2, barH + 2, kFrame);
        int labelsW = 0;
        for (const BarTick& t : barTicks) {
            int yy = barTop + static_cast<int>(std::lround((1.0 - t.t) * (barH - 1)));
            image.hline(barX + kBarWidth + 1, barX + kBarWidth + kTickLen, yy, kFrame);
            Anchor a = t.t <= 0 ? Anchor::BottomLeft : t.t >= 1 ? Anchor::TopLeft : Anchor::MiddleLeft;
            if (barH < 3 * lh) a = Anchor::MiddleLeft;
            labelsW = std::max(labelsW, image.drawText(barX + kBarWidth + kTickLen + 3, yy, t.label,
                                                       kText, normal, a));
        }
        if (!barLabel_.empty()) {
            image.drawTextVertical(barX + kBarWidth + kTickLen + 3 + labelsW + 8 + lh / 2,
                                   barTop + barH / 2, barLabel_, kText, normal, Anchor::Center);
        }
    }
    if (usesCategories) {
        int lx = ox + plotRight + barW + kBarGap;
        int ly = barTop;
        for (const auto& e : palette_->entries()) {
            image.fillRect(lx, ly + (lh - kSwatch) / 2, kSwatch, kSwatch, e.color);
            image.strokeRect(lx, ly + (lh - kSwatch) / 2, kSwatch, kSwatch, kFrame);
            image.drawText(lx + kSwatch + 6, ly, e.name, kText, normal, Anchor::TopLeft);
            ly += lh + 4;
        }
    }
}

}  // namespace kvlens::viz
