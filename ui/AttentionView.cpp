// AttentionView: the rasterised map, its texture, axes, kept strip, colour bar and input.
#include "ui/AttentionView.h"

#include <imgui.h>

#include <QElapsedTimer>
#include <QKeyEvent>
#include <QMouseEvent>
#include <QWheelEvent>
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <string>
#include <utility>

#include "core/Error.h"
#include "viz/Colormap.h"
#include "viz/Scale.h"
#include "viz/Ticks.h"
#include "viz/TilePyramid.h"

namespace kvlens::ui {

namespace {

// Layout of the widget around the map, in logical pixels: the title line on top, query
// labels on the left, the kept strip and key labels below, the colour bar on the right.
constexpr float kTop = 24.0f;
constexpr float kLeft = 112.0f;
constexpr float kRight = 92.0f;
constexpr float kStripGap = 4.0f;
constexpr float kStripHeight = 8.0f;
constexpr float kKeyLabels = 80.0f;
constexpr float kBottom = kStripGap + kStripHeight + 4.0f + kKeyLabels;
// Cells at least this many pixels wide get their token drawn on the axes.
constexpr double kTokenLabelPixels = 12.0;
constexpr double kMinCellsPerPixel = 1.0 / 64.0;
// Exact cells are asked for when the visible region is at most this many cells a side,
// aligned outwards to kExactAlign cells so that small pans reuse the region.
constexpr int64_t kExactMaxSide = 256;
constexpr int64_t kExactAlign = 64;
constexpr size_t kExactKept = 8;
constexpr uint32_t kTransparent = 0;

uint32_t packRgba(int r, int g, int b, int a = 255) {
    return static_cast<uint32_t>(r) | static_cast<uint32_t>(g) << 8 |
           static_cast<uint32_t>(b) << 16 | static_cast<uint32_t>(a) << 24;
}

ImU32 imColour(const QColor& c, int alpha = 255) {
    return IM_COL32(c.red(), c.green(), c.blue(), alpha);
}

ImU32 imColour(viz::Rgb c) { return IM_COL32(c.r, c.g, c.b, 255); }

const ImU32 kText = IM_COL32(225, 225, 225, 255);
const ImU32 kDimText = IM_COL32(165, 165, 165, 255);
const ImU32 kTickLine = IM_COL32(150, 150, 150, 255);
const QColor kStripBackground(44, 44, 48);

std::string utf8(const QString& s) { return s.toUtf8().toStdString(); }

// Draws text reading bottom to top (rotated 90 degrees counter-clockwise) whose end sits at
// topY, centred on centreX; cut to maxLength along the text and to thickness across it.
void addVerticalText(ImDrawList* list, float centreX, float topY, float maxLength, float thickness,
                     ImU32 colour, const std::string& text) {
    ImFont* font = ImGui::GetFont();
    const float size = ImGui::GetFontSize();
    const float length =
        std::min(font->CalcTextSizeA(size, FLT_MAX, 0.0f, text.c_str()).x, maxLength);
    // Laid out horizontally at (centreX, topY), which is on screen so that ImGui does not
    // cull the glyphs, then every new vertex is turned about that point.
    const ImVec2 at(centreX, topY);
    const ImVec4 clip(at.x, at.y + size / 2 - thickness / 2, at.x + length,
                      at.y + size / 2 + thickness / 2);
    const int first = list->VtxBuffer.Size;
    list->AddText(font, size, at, colour, text.c_str(), nullptr, 0.0f, &clip);
    // Whole pixels: the bitmap font turns blurry at half-pixel offsets.
    const float x0 = std::round(centreX - size / 2), y0 = std::round(topY + length);
    for (int i = first; i < list->VtxBuffer.Size; ++i) {
        ImVec2& p = list->VtxBuffer[i].pos;
        const float dx = p.x - at.x, dy = p.y - at.y;
        p = ImVec2(x0 + dy, y0 - dx);
    }
}

// Control characters would break a label's line: show them escaped.
std::string printable(const std::string& piece) {
    std::string out;
    for (char ch : piece) {
        if (ch == '\n')
            out += "\\n";
        else if (ch == '\t')
            out += "\\t";
        else if (ch == '\r')
            out += "\\r";
        else if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f)
            out += '?';
        else
            out += ch;
    }
    return out;
}

QString number(double v) { return QString::number(v, 'g', 3); }

}  // namespace

AttentionView::AttentionView(QWidget* parent) : ImGuiCanvas(parent) {
    lut_.reserve(256);
    for (const viz::Rgb& c : viz::Colormap::magma().table())
        lut_.push_back(packRgba(c.r, c.g, c.b));
}

AttentionView::~AttentionView() { texture_.release(); }

void AttentionView::setMap(std::shared_ptr<const viz::TilePyramid> pyramid, int layer, int head,
                           const QString& title) {
    if (pyramid && !pyramid->finished()) {
        throw Error("attention view: the tile pyramid of L" + std::to_string(layer) + " H" +
                    std::to_string(head) + " is not finished (call finish() first)");
    }
    pyramid_ = std::move(pyramid);
    layer_ = layer;
    head_ = head;
    title_ = title;
    levelIndex_.clear();
    exact_.clear();
    pending_.clear();
    ++dataVersion_;
    if (pyramid_) {
        const auto& levels = pyramid_->levels();
        // The coarsest level is one tile: its max is the map's max.
        scaleHi_ = static_cast<double>(levels.back().max.front());
        if (!(scaleHi_ > 0) || !std::isfinite(scaleHi_)) scaleHi_ = 1.0;
        scaleLo_ = scaleHi_ * 1e-4;
        const viz::Scale scale = viz::Scale::log(scaleLo_, scaleHi_, scaleLo_);
        thresholds_.resize(255);
        for (int k = 0; k < 255; ++k)
            thresholds_[k] = static_cast<float>(scale.valueAt((k + 1) / 256.0));
        for (const auto& level : levels)
            levelIndex_.push_back(indexGrid(level.max, level.tile, level.tileRows, level.tileCols));
    }
    setKept(std::move(kept_));  // the prefix counts follow the map's width
    resetView();
}

void AttentionView::setTokens(std::shared_ptr<const std::vector<std::string>> pieces) {
    tokens_ = std::move(pieces);
    if (tokens_)
        for (const std::string& piece : *tokens_) addGlyphs(piece);
    requestRedraw();
}

void AttentionView::setKept(std::vector<int32_t> keptKeyPositions) {
    for (int32_t p : keptKeyPositions)
        if (p < 0)
            throw Error("attention view: kept key position " + std::to_string(p) + " is negative");
    std::sort(keptKeyPositions.begin(), keptKeyPositions.end());
    keptKeyPositions.erase(std::unique(keptKeyPositions.begin(), keptKeyPositions.end()),
                           keptKeyPositions.end());
    kept_ = std::move(keptKeyPositions);
    keptPrefix_.clear();
    if (pyramid_ && !kept_.empty()) {
        const int64_t cols = pyramid_->cols();
        keptPrefix_.assign(static_cast<size_t>(cols + 1), 0);
        for (int32_t p : kept_)
            if (p < cols) keptPrefix_[static_cast<size_t>(p) + 1] = 1;
        for (int64_t c = 0; c < cols; ++c) keptPrefix_[c + 1] += keptPrefix_[c];
    }
    requestRedraw();
}

void AttentionView::setMarkedKeys(std::vector<int64_t> keys) {
    std::sort(keys.begin(), keys.end());
    keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
    marked_ = std::move(keys);
    requestRedraw();
}

void AttentionView::setExactRegion(int64_t row0, int64_t col0, int64_t rows, int64_t cols,
                                   std::vector<float> values) {
    if (!pyramid_) throw Error("exact attention region: no map is shown");
    if (row0 < 0 || col0 < 0 || rows < 1 || cols < 1 || row0 + rows > pyramid_->rows() ||
        col0 + cols > pyramid_->cols()) {
        throw Error("exact attention region rows [" + std::to_string(row0) + ", " +
                    std::to_string(row0 + rows) + ") x cols [" + std::to_string(col0) + ", " +
                    std::to_string(col0 + cols) + ") is empty or outside the " +
                    std::to_string(pyramid_->rows()) + " x " + std::to_string(pyramid_->cols()) +
                    " map");
    }
    if (static_cast<int64_t>(values.size()) != rows * cols) {
        throw Error("exact attention region: " + std::to_string(values.size()) + " values for " +
                    std::to_string(rows) + " x " + std::to_string(cols) + " cells");
    }
    const Region region{row0, col0, rows, cols};
    pending_.erase(std::remove(pending_.begin(), pending_.end(), region), pending_.end());
    // Regions inside the new one add nothing.
    exact_.erase(std::remove_if(exact_.begin(), exact_.end(),
                                [&](const ExactRegion& e) {
                                    return e.row0 >= row0 && e.col0 >= col0 &&
                                           e.row0 + e.rows <= row0 + rows &&
                                           e.col0 + e.cols <= col0 + cols;
                                }),
                 exact_.end());
    ExactRegion e{row0, col0, rows, cols, std::move(values), {}};
    e.grid = indexGrid(e.values, 1, rows, cols);
    e.grid.row0 = row0;
    e.grid.col0 = col0;
    exact_.push_back(std::move(e));
    if (exact_.size() > kExactKept) exact_.erase(exact_.begin());
    ++dataVersion_;
    requestRedraw();
}

// ---- the view ---------------------------------------------------------------------------

QRectF AttentionView::mapRect() const {
    const double w = std::max(1.0, static_cast<double>(width() - kLeft - kRight));
    const double h = std::max(1.0, static_cast<double>(height() - kTop - kBottom));
    return QRectF(kLeft, kTop, w, h);
}

QPointF AttentionView::cellCenter(int64_t row, int64_t col) const {
    const QRectF map = mapRect();
    return QPointF(map.left() + (static_cast<double>(col) + 0.5 - col0_) / cellsPerPixel_,
                   map.top() + (static_cast<double>(row) + 0.5 - row0_) / cellsPerPixel_);
}

double AttentionView::fitCellsPerPixel() const {
    if (!pyramid_) return 1.0;
    const QRectF map = mapRect();
    return std::max(static_cast<double>(pyramid_->cols()) / map.width(),
                    static_cast<double>(pyramid_->rows()) / map.height());
}

void AttentionView::setView(double col0, double row0, double cellsPerPixel) {
    col0_ = col0;
    row0_ = row0;
    if (std::isfinite(cellsPerPixel) && cellsPerPixel > 0) cellsPerPixel_ = cellsPerPixel;
    fitPending_ = false;
    viewChanged();
}

void AttentionView::panBy(double dxPixels, double dyPixels) {
    setView(col0_ - dxPixels * cellsPerPixel_, row0_ - dyPixels * cellsPerPixel_, cellsPerPixel_);
}

void AttentionView::zoomAt(QPointF pixel, double factor) {
    if (!(factor > 0) || !std::isfinite(factor)) return;
    const QRectF map = mapRect();
    const double x = pixel.x() - map.left(), y = pixel.y() - map.top();
    const double col = col0_ + x * cellsPerPixel_, row = row0_ + y * cellsPerPixel_;
    double cpp = cellsPerPixel_ / factor;
    cpp = std::clamp(cpp, kMinCellsPerPixel, std::max(kMinCellsPerPixel, 4 * fitCellsPerPixel()));
    setView(col - x * cpp, row - y * cpp, cpp);
}

void AttentionView::resetView() {
    col0_ = 0;
    row0_ = 0;
    cellsPerPixel_ = fitCellsPerPixel();
    viewChanged();
    fitPending_ = true;
}

void AttentionView::clampView() {
    if (!pyramid_) return;
    cellsPerPixel_ = std::clamp(cellsPerPixel_, kMinCellsPerPixel,
                                std::max(kMinCellsPerPixel, 4 * fitCellsPerPixel()));
    // At least half the view can show the map; the fit (origin 0) is always allowed.
    const QRectF map = mapRect();
    const double visCols = map.width() * cellsPerPixel_, visRows = map.height() * cellsPerPixel_;
    const auto cols = static_cast<double>(pyramid_->cols());
    const auto rows = static_cast<double>(pyramid_->rows());
    col0_ = std::clamp(col0_, -visCols / 2, std::max(cols - visCols / 2, 0.0));
    row0_ = std::clamp(row0_, -visRows / 2, std::max(rows - visRows / 2, 0.0));
}

void AttentionView::viewChanged() {
    clampView();
    requestExactIfNeeded();
    requestRedraw();
}

AttentionView::Region AttentionView::visibleCells() const {
    const QRectF map = mapRect();
    const int64_t c0 = std::max<int64_t>(0, static_cast<int64_t>(std::floor(col0_)));
    const int64_t r0 = std::max<int64_t>(0, static_cast<int64_t>(std::floor(row0_)));
    const int64_t c1 = std::min(
        pyramid_->cols(), static_cast<int64_t>(std::ceil(col0_ + map.width() * cellsPerPixel_)));
    const int64_t r1 = std::min(
        pyramid_->rows(), static_cast<int64_t>(std::ceil(row0_ + map.height() * cellsPerPixel_)));
    return Region{r0, c0, std::max<int64_t>(0, r1 - r0), std::max<int64_t>(0, c1 - c0)};
}

bool AttentionView::exactCovers(const Region& r) const {
    for (const ExactRegion& e : exact_)
        if (e.row0 <= r.row0 && e.col0 <= r.col0 && e.row0 + e.rows >= r.row0 + r.rows &&
            e.col0 + e.cols >= r.col0 + r.cols)
            return true;
    return false;
}

void AttentionView::requestExactIfNeeded() {
    if (!pyramid_ || pyramid_->baseTile() <= 1) return;
    // Tiles no larger than a device pixel draw as finely as exact cells would.
    if (cellsPerPixel_ / devicePixelRatioF() >= static_cast<double>(pyramid_->baseTile())) return;
    const Region visible = visibleCells();
    const int64_t r0 = visible.row0, c0 = visible.col0;
    const int64_t r1 = r0 + visible.rows, c1 = c0 + visible.cols;
    if (c1 <= c0 || r1 <= r0 || c1 - c0 > kExactMaxSide || r1 - r0 > kExactMaxSide) return;
    if (c0 > r1 - 1) return;  // all above the diagonal: nothing to compute
    if (exactCovers(visible)) return;
    auto down = [](int64_t v) { return v / kExactAlign * kExactAlign; };
    auto up = [](int64_t v) { return (v + kExactAlign - 1) / kExactAlign * kExactAlign; };
    const int64_t ar0 = down(r0), ac0 = down(c0);
    const Region region{ar0, ac0, std::min(pyramid_->rows(), up(r1)) - ar0,
                        std::min(pyramid_->cols(), up(c1)) - ac0};
    if (std::find(pending_.begin(), pending_.end(), region) != pending_.end()) return;
    pending_.push_back(region);
    emit exactRegionNeeded(region.row0, region.col0, region.rows, region.cols);
}

// ---- colour indices and the raster ------------------------------------------------------

uint8_t AttentionView::colourIndex(float value) const {
    if (!(value == value)) return 0;  // NaN: no attention to show
    return static_cast<uint8_t>(std::upper_bound(thresholds_.begin(), thresholds_.end(), value) -
                                thresholds_.begin());
}

AttentionView::IndexGrid AttentionView::indexGrid(const std::vector<float>& values, int64_t tile,
                                                  int64_t tileRows, int64_t tileCols) const {
    IndexGrid g;
    g.tile = tile;
    g.tileRows = tileRows;
    g.tileCols = tileCols;
    g.rows = pyramid_->rows();
    g.cols = pyramid_->cols();
    g.index.resize(values.size());
    for (size_t i = 0; i < values.size(); ++i) g.index[i] = colourIndex(values[i]);
    return g;
}

AttentionView::AxisSpans AttentionView::spans(double origin, double cellsPerDevicePixel, int pixels,
                                              int64_t cells) const {
    AxisSpans s;
    s.first.resize(static_cast<size_t>(pixels));
    s.last.resize(static_cast<size_t>(pixels));
    // Pixel edges come from floating point: a sliver of 1e-6 cells is rounding, not a cell.
    constexpr double eps = 1e-6;
    for (int p = 0; p < pixels; ++p) {
        const double a = origin + p * cellsPerDevicePixel;
        const double b = origin + (p + 1) * cellsPerDevicePixel;
        int64_t first = static_cast<int64_t>(std::floor(a + eps));
        int64_t last = std::max(first, static_cast<int64_t>(std::ceil(b - eps)) - 1);
        if (last < 0 || first >= cells) {
            first = last = -1;
        } else {
            first = std::max<int64_t>(first, 0);
            last = std::min(last, cells - 1);
        }
        s.first[p] = first;
        s.last[p] = last;
    }
    return s;
}

void AttentionView::rasterise(int width, int height) {
    const double cpd = cellsPerPixel_ / devicePixelRatioF();
    const AxisSpans cols = spans(col0_, cpd, width, pyramid_->cols());
    const AxisSpans rows = spans(row0_, cpd, height, pyramid_->rows());
    raster_.assign(static_cast<size_t>(width) * height, kTransparent);
    // The pixels over the matrix form one rectangle (valid columns and rows are each a
    // contiguous run); only it is drawn.
    auto run = [](const AxisSpans& s) {
        const auto begin =
            std::find_if(s.first.begin(), s.first.end(), [](int64_t f) { return f >= 0; });
        const auto end = std::find_if(begin, s.first.end(), [](int64_t f) { return f < 0; });
        return std::make_pair(static_cast<int>(begin - s.first.begin()),
                              static_cast<int>(end - s.first.begin()));
    };
    const auto [x0, x1] = run(cols);
    const auto [y0, y1] = run(rows);
    opaque_ = QRect(QPoint(x0, y0), QPoint(x1 - 1, y1 - 1));
    const auto& levels = pyramid_->levels();
    const auto levelAt = static_cast<size_t>(&pyramid_->levelFor(cpd) - levels.data());
    rasteriseGrid(levelIndex_[levelAt], cols, rows, 0, width, 0, height, width);
    if (levels[levelAt].tile == 1) return;
    // Exact cells replace the tiles wherever a region holds every cell of a pixel.
    for (const ExactRegion& e : exact_) {
        auto inside = [](const AxisSpans& s, int p, int64_t lo, int64_t n) {
            return s.first[p] >= lo && s.last[p] < lo + n;
        };
        int px0 = 0, py0 = 0;
        while (px0 < width && !inside(cols, px0, e.col0, e.cols)) ++px0;
        int px1 = px0;
        while (px1 < width && inside(cols, px1, e.col0, e.cols)) ++px1;
        while (py0 < height && !inside(rows, py0, e.row0, e.rows)) ++py0;
        int py1 = py0;
        while (py1 < height && inside(rows, py1, e.row0, e.rows)) ++py1;
        if (px1 > px0 && py1 > py0) rasteriseGrid(e.grid, cols, rows, px0, px1, py0, py1, width);
    }
}

void AttentionView::rasteriseGrid(const IndexGrid& grid, const AxisSpans& cols,
                                  const AxisSpans& rows, int px0, int px1, int py0, int py1,
                                  int width) {
    const int64_t tile = grid.tile;
    // Tile columns per pixel column, and their range, so that each pixel row first takes
    // the max over its tile rows once (rowMax_) and then only over its tile columns.
    std::vector<int32_t> tc0(static_cast<size_t>(px1 - px0)), tc1(tc0.size());
    int64_t minTc = INT64_MAX, maxTc = -1;
    for (int px = px0; px < px1; ++px) {
        if (cols.first[px] < 0) continue;
        tc0[px - px0] = static_cast<int32_t>((cols.first[px] - grid.col0) / tile);
        tc1[px - px0] = static_cast<int32_t>((cols.last[px] - grid.col0) / tile);
        minTc = std::min<int64_t>(minTc, tc0[px - px0]);
        maxTc = std::max<int64_t>(maxTc, tc1[px - px0]);
    }
    if (maxTc < 0) return;  // no column of the matrix in view
    for (auto& t : tc0) t -= static_cast<int32_t>(minTc);
    for (auto& t : tc1) t -= static_cast<int32_t>(minTc);
    rowMax_.resize(static_cast<size_t>(maxTc - minTc + 1));
    const uint32_t masked =
        packRgba(maskedColor().red(), maskedColor().green(), maskedColor().blue());
    int64_t builtTr0 = -1, builtTr1 = -1;
    for (int py = py0; py < py1; ++py) {
        uint32_t* out = raster_.data() + static_cast<size_t>(py) * width;
        if (rows.first[py] < 0) continue;  // stays transparent
        const int64_t tr0 = (rows.first[py] - grid.row0) / tile;
        const int64_t tr1 = (rows.last[py] - grid.row0) / tile;
        if (tr0 != builtTr0 || tr1 != builtTr1) {
            const uint8_t* src = grid.index.data() + tr0 * grid.tileCols + minTc;
            std::copy(src, src + rowMax_.size(), rowMax_.begin());
            for (int64_t tr = tr0 + 1; tr <= tr1; ++tr) {
                src = grid.index.data() + tr * grid.tileCols + minTc;
                for (size_t i = 0; i < rowMax_.size(); ++i)
                    rowMax_[i] = std::max(rowMax_[i], src[i]);
            }
            builtTr0 = tr0;
            builtTr1 = tr1;
        }
        const int64_t lastRow = rows.last[py];
        const uint8_t* rm = rowMax_.data();
        for (int px = px0; px < px1; ++px) {
            const int64_t firstCol = cols.first[px];
            if (firstCol < 0) {
                out[px] = kTransparent;
            } else if (firstCol > lastRow) {
                out[px] = masked;  // every cell of the pixel is above the diagonal
            } else {
                const int32_t a = tc0[px - px0], b = tc1[px - px0];
                uint8_t m = rm[a];
                for (int32_t t = a + 1; t <= b; ++t) m = std::max(m, rm[t]);
                out[px] = lut_[m];
            }
        }
    }
}

// ---- drawing ----------------------------------------------------------------------------

void AttentionView::drawFrame() {
    ImDrawList* list = ImGui::GetBackgroundDrawList();
    if (!pyramid_) {
        list->AddText(ImVec2(12, 8), kDimText, "No attention map: choose a layer and head.");
        return;
    }
    const QRectF map = mapRect();
    const double dpr = devicePixelRatioF();
    const int w = std::max(1, static_cast<int>(std::lround(map.width() * dpr)));
    const int h = std::max(1, static_cast<int>(std::lround(map.height() * dpr)));
    const RasterKey key{col0_, row0_, cellsPerPixel_, w, h, dataVersion_};
    if (!(key == rasterKey_)) {
        QElapsedTimer timer;
        timer.start();
        rasterise(w, h);
        lastRasterMs_ = static_cast<double>(timer.nsecsElapsed()) * 1e-6;
        rasterKey_ = key;
        rasterUploaded_ = false;
        ++rasterBuilds_;
    }
    if (!rasterUploaded_ || texture_.id() == 0) {
        QElapsedTimer timer;
        timer.start();
        texture_.upload(*this, w, h, raster_.data());
        rasterUploaded_ = true;
        lastUploadMs_ = static_cast<double>(timer.nsecsElapsed()) * 1e-6;
    }
    if (opaque_.isValid()) {
        const auto px = [&](int devicePixels) { return static_cast<float>(devicePixels / dpr); };
        const ImVec2 p0(static_cast<float>(map.left()) + px(opaque_.left()),
                        static_cast<float>(map.top()) + px(opaque_.top()));
        const ImVec2 p1(static_cast<float>(map.left()) + px(opaque_.right() + 1),
                        static_cast<float>(map.top()) + px(opaque_.bottom() + 1));
        const ImVec2 uv0(static_cast<float>(opaque_.left()) / w,
                         static_cast<float>(opaque_.top()) / h);
        const ImVec2 uv1(static_cast<float>(opaque_.right() + 1) / w,
                         static_cast<float>(opaque_.bottom() + 1) / h);
        list->AddImage(reinterpret_cast<ImTextureID>(static_cast<intptr_t>(texture_.id())), p0, p1,
                       uv0, uv1);
    }

    list->AddText(ImVec2(8, 5), kText, utf8(titleText()).c_str());
    drawKeptStrip(map);
    drawMarks(map);
    drawAxes(map);
    drawColourBar(map);

    const ImGuiIO& io = ImGui::GetIO();
    if (!dragging_ && ImGui::IsMousePosValid(&io.MousePos)) {
        const QString text = hoverText(QPointF(io.MousePos.x, io.MousePos.y));
        if (!text.isEmpty()) ImGui::SetTooltip("%s", utf8(text).c_str());
    }
}

void AttentionView::drawMarks(const QRectF& map) {
    if (marked_.empty() || !pyramid_) return;
    ImDrawList* list = ImGui::GetBackgroundDrawList();
    const QColor m = markColor();
    const ImU32 colour = IM_COL32(m.red(), m.green(), m.blue(), 255);
    const float y0 = static_cast<float>(map.bottom()) + 0.5f, y1 = y0 + kStripGap - 1.0f;
    const double pxPerKey = 1.0 / cellsPerPixel_;
    const int64_t cols = pyramid_->cols();
    for (size_t i = 0; i < marked_.size();) {
        size_t j = i + 1;
        while (j < marked_.size() && marked_[j] == marked_[j - 1] + 1) ++j;
        const int64_t a = marked_[i], b = std::min(cols, marked_[j - 1] + 1);
        i = j;
        if (a >= cols || a < 0) continue;
        float x0 = static_cast<float>(map.left() + (static_cast<double>(a) - col0_) * pxPerKey);
        float x1 = static_cast<float>(map.left() + (static_cast<double>(b) - col0_) * pxPerKey);
        x1 = std::max(x1, x0 + 2.0f);
        x0 = std::max(x0, static_cast<float>(map.left()));
        x1 = std::min(x1, static_cast<float>(map.right()));
        if (x1 > x0) list->AddRectFilled(ImVec2(x0, y0), ImVec2(x1, y1), colour);
    }
}

void AttentionView::drawKeptStrip(const QRectF& map) {
    if (keptPrefix_.empty()) return;  // no selection to show
    ImDrawList* list = ImGui::GetBackgroundDrawList();
    const float y0 = static_cast<float>(map.bottom()) + kStripGap, y1 = y0 + kStripHeight;
    const float left = static_cast<float>(map.left());
    list->AddText(ImVec2(std::round(left - 4 - ImGui::CalcTextSize("kept").x),
                         std::round(y0 + kStripHeight / 2 - ImGui::GetFontSize() / 2)),
                  kDimText, "kept");
    const int width = static_cast<int>(map.width());
    const AxisSpans cols = spans(col0_, cellsPerPixel_, width, pyramid_->cols());
    // A pixel covering several keys is shaded by the share of them kept; runs of one shade
    // are one rectangle.
    auto shade = [&](int px) -> ImU32 {
        if (cols.first[px] < 0) return 0;
        const int64_t a = cols.first[px], b = cols.last[px] + 1;
        const int32_t n = keptPrefix_[b] - keptPrefix_[a];
        if (n == 0) return imColour(kStripBackground);
        const double share = static_cast<double>(n) / static_cast<double>(b - a);
        const double level = std::round(share * 8) / 8;  // few shades, long runs
        const double alpha = 0.45 + 0.55 * level;
        const QColor k = keptColor(), bg = kStripBackground;
        auto mix = [&](int from, int to) {
            return static_cast<int>(std::lround(from + (to - from) * alpha));
        };
        return IM_COL32(mix(bg.red(), k.red()), mix(bg.green(), k.green()),
                        mix(bg.blue(), k.blue()), 255);
    };
    int start = 0;
    ImU32 current = width > 0 ? shade(0) : 0;
    for (int px = 1; px <= width; ++px) {
        const ImU32 c = px < width ? shade(px) : ~current;
        if (c == current) continue;
        if (current != 0)
            list->AddRectFilled(ImVec2(left + start, y0), ImVec2(left + px, y1), current);
        start = px;
        current = c;
    }
}

void AttentionView::drawAxes(const QRectF& map) {
    ImDrawList* list = ImGui::GetBackgroundDrawList();
    const float fontSize = ImGui::GetFontSize();
    const double cellPx = 1.0 / cellsPerPixel_;
    const auto left = static_cast<float>(map.left()), top = static_cast<float>(map.top());
    const auto right = static_cast<float>(map.right()), bottom = static_cast<float>(map.bottom());
    const float labelsTop = bottom + kStripGap + kStripHeight + 4;
    const int64_t r0 = std::max<int64_t>(0, static_cast<int64_t>(std::floor(row0_)));
    const int64_t r1 = std::min(
        pyramid_->rows(), static_cast<int64_t>(std::ceil(row0_ + map.height() * cellsPerPixel_)));
    const int64_t c0 = std::max<int64_t>(0, static_cast<int64_t>(std::floor(col0_)));
    const int64_t c1 = std::min(
        pyramid_->cols(), static_cast<int64_t>(std::ceil(col0_ + map.width() * cellsPerPixel_)));
    auto rowY = [&](double r) { return top + static_cast<float>((r - row0_) * cellPx); };
    auto colX = [&](double c) { return left + static_cast<float>((c - col0_) * cellPx); };

    if (cellPx >= kTokenLabelPixels) {
        // Token level: every visible query and key named, clipped to its cell.
        for (int64_t r = r0; r < r1; ++r) {
            const std::string label = utf8(QString::number(r) + " " + tokenLabel(r));
            const float y0 = std::max(rowY(static_cast<double>(r)), top);
            const float y1 = std::min(rowY(static_cast<double>(r + 1)), bottom);
            if (y1 - y0 < fontSize * 0.5f) continue;
            const float textW = ImGui::CalcTextSize(label.c_str()).x;
            const float x = std::max(4.0f, left - 4 - textW);
            const float yc = (rowY(static_cast<double>(r)) + rowY(static_cast<double>(r + 1))) / 2;
            const ImVec4 clip(4, y0, left - 4, y1);
            list->AddText(ImGui::GetFont(), fontSize,
                          ImVec2(std::round(x), std::round(yc - fontSize / 2)), kText,
                          label.c_str(), nullptr, 0.0f, &clip);
        }
        for (int64_t c = c0; c < c1; ++c) {
            const float x0 = std::max(colX(static_cast<double>(c)), left);
            const float x1 = std::min(colX(static_cast<double>(c + 1)), right);
            if (x1 - x0 < fontSize * 0.5f) continue;
            const std::string label = utf8(QString::number(c) + " " + tokenLabel(c));
            addVerticalText(list, (x0 + x1) / 2, labelsTop, kKeyLabels - 4, x1 - x0, kText, label);
        }
    } else {
        const int rowTicks = std::max(2, static_cast<int>(map.height() / 40));
        if (r1 > r0) {
            for (const viz::Tick& t : viz::Ticks::linear(
                     static_cast<double>(r0), static_cast<double>(r1 - 1), rowTicks, true)) {
                const float y = rowY(t.value + 0.5);
                list->AddLine(ImVec2(left - 4, y), ImVec2(left, y), kTickLine);
                const float textW = ImGui::CalcTextSize(t.label.c_str()).x;
                list->AddText(ImVec2(std::round(left - 7 - textW), std::round(y - fontSize / 2)),
                              kText, t.label.c_str());
            }
        }
        const int colTicks = std::max(2, static_cast<int>(map.width() / 70));
        if (c1 > c0) {
            for (const viz::Tick& t : viz::Ticks::linear(
                     static_cast<double>(c0), static_cast<double>(c1 - 1), colTicks, true)) {
                const float x = colX(t.value + 0.5);
                list->AddLine(ImVec2(x, labelsTop - 4), ImVec2(x, labelsTop), kTickLine);
                const float textW = ImGui::CalcTextSize(t.label.c_str()).x;
                list->AddText(ImVec2(std::round(x - textW / 2), labelsTop + 1), kText,
                              t.label.c_str());
            }
        }
    }
    // What the axes are, in the free corner under the query labels.
    const float cornerY = static_cast<float>(height()) - 2 * fontSize - 8;
    list->AddText(ImVec2(6, cornerY), kDimText, "rows: queries");
    list->AddText(ImVec2(6, cornerY + fontSize + 2), kDimText, "cols: keys");
}

void AttentionView::drawColourBar(const QRectF& map) {
    ImDrawList* list = ImGui::GetBackgroundDrawList();
    const float fontSize = ImGui::GetFontSize();
    const float x0 = static_cast<float>(map.right()) + 10, x1 = x0 + 14;
    const float top = static_cast<float>(map.top());
    const float barH = std::clamp(static_cast<float>(map.height()) - 3 * fontSize, 20.0f, 360.0f);
    const viz::Scale scale = viz::Scale::log(scaleLo_, scaleHi_, scaleLo_);
    const viz::Colormap& magma = viz::Colormap::magma();
    constexpr int kSteps = 64;  // top is the map's max
    for (int i = 0; i < kSteps; ++i) {
        const float ya = top + barH * i / kSteps, yb = top + barH * (i + 1) / kSteps;
        const ImU32 ca = imColour(magma.map(1.0 - static_cast<double>(i) / kSteps));
        const ImU32 cb = imColour(magma.map(1.0 - static_cast<double>(i + 1) / kSteps));
        list->AddRectFilledMultiColor(ImVec2(x0, ya), ImVec2(x1, yb), ca, ca, cb, cb);
    }
    list->AddRect(ImVec2(x0 - 1, top - 1), ImVec2(x1 + 1, top + barH + 1), kTickLine);
    const int ticks = std::max(2, static_cast<int>(barH / 30));
    for (const viz::Tick& t : viz::Ticks::log(scaleLo_, scaleHi_, ticks)) {
        const float y = top + barH * static_cast<float>(1.0 - scale(t.value));
        list->AddLine(ImVec2(x1, y), ImVec2(x1 + 4, y), kTickLine);
        list->AddText(ImVec2(x1 + 6, std::round(y - fontSize / 2)), kText, t.label.c_str());
    }
    // The masked (upper-triangle) colour, which is not on the bar.
    const float sy = top + barH + 8;
    list->AddRectFilled(ImVec2(x0, sy), ImVec2(x1, sy + fontSize), imColour(maskedColor()));
    list->AddText(ImVec2(x1 + 6, sy), kDimText, "k > q");
}

QString AttentionView::titleText() const {
    if (!pyramid_) return {};
    const auto& level = pyramid_->levelFor(cellsPerPixel_ / devicePixelRatioF());
    QString text = title_.isEmpty() ? QString() : title_ + "  ";
    text += QStringLiteral("L%1 H%2, %3 x %4, tile %5")
                .arg(layer_)
                .arg(head_)
                .arg(pyramid_->rows())
                .arg(pyramid_->cols())
                .arg(level.tile);
    const Region visible = visibleCells();
    if (level.tile > 1 && visible.rows > 0 && visible.cols > 0 && exactCovers(visible))
        text += QStringLiteral(" (exact cells in view)");
    return text;
}

QString AttentionView::tokenLabel(int64_t position) const {
    if (!tokens_ || position < 0 || position >= static_cast<int64_t>(tokens_->size())) return {};
    return QString::fromStdString(printable((*tokens_)[static_cast<size_t>(position)]));
}

const AttentionView::ExactRegion* AttentionView::exactAt(int64_t row, int64_t col) const {
    for (auto it = exact_.rbegin(); it != exact_.rend(); ++it)
        if (it->contains(row, col)) return &*it;
    return nullptr;
}

QString AttentionView::hoverText(QPointF pixel) const {
    if (!pyramid_) return {};
    const QRectF map = mapRect();
    if (!map.contains(pixel)) return {};
    const auto col =
        static_cast<int64_t>(std::floor(col0_ + (pixel.x() - map.left()) * cellsPerPixel_));
    const auto row =
        static_cast<int64_t>(std::floor(row0_ + (pixel.y() - map.top()) * cellsPerPixel_));
    if (row < 0 || col < 0 || row >= pyramid_->rows() || col >= pyramid_->cols()) return {};
    auto named = [&](const char* what, int64_t p) {
        QString s = QStringLiteral("%1 %2").arg(QLatin1String(what)).arg(p);
        if (tokens_ && p < static_cast<int64_t>(tokens_->size())) s += " '" + tokenLabel(p) + "'";
        return s;
    };
    QString text = named("query", row) + " -> " + named("key", col) + ": ";
    if (col > row) {
        text += "masked (a query sees no later key)";
    } else if (const ExactRegion* e = exactAt(row, col)) {
        text +=
            number(e->values[static_cast<size_t>((row - e->row0) * e->cols + (col - e->col0))]) +
            " (exact)";
    } else {
        const auto& level = pyramid_->levelFor(cellsPerPixel_ / devicePixelRatioF());
        const int64_t tr = row / level.tile, tc = col / level.tile;
        if (level.tile == 1) {
            text += number(level.maxAt(tr, tc));
        } else {
            const int64_t h = std::min(pyramid_->rows(), (tr + 1) * level.tile) - tr * level.tile;
            const int64_t w = std::min(pyramid_->cols(), (tc + 1) * level.tile) - tc * level.tile;
            text += QStringLiteral("max %1, mean %2 over a %3x%4 tile")
                        .arg(number(level.maxAt(tr, tc)), number(level.meanAt(tr, tc)))
                        .arg(h)
                        .arg(w);
        }
    }
    if (!keptPrefix_.empty()) {
        const bool kept = keptPrefix_[col + 1] > keptPrefix_[col];
        text += QStringLiteral("\nkey %1 %2").arg(col).arg(kept ? "kept" : "not kept");
    }
    return text;
}

// ---- input ------------------------------------------------------------------------------

void AttentionView::resizeEvent(QResizeEvent* event) {
    ImGuiCanvas::resizeEvent(event);
    if (fitPending_)
        resetView();
    else
        viewChanged();
}

void AttentionView::mousePressEvent(QMouseEvent* event) {
    if (event->button() == Qt::LeftButton && mapRect().contains(event->position())) {
        dragging_ = true;
        dragLast_ = event->position();
    }
    ImGuiCanvas::mousePressEvent(event);
}

void AttentionView::mouseMoveEvent(QMouseEvent* event) {
    if (dragging_ && (event->buttons() & Qt::LeftButton)) {
        const QPointF d = event->position() - dragLast_;
        dragLast_ = event->position();
        panBy(d.x(), d.y());
    }
    ImGuiCanvas::mouseMoveEvent(event);
}

void AttentionView::mouseReleaseEvent(QMouseEvent* event) {
    if (event->button() == Qt::LeftButton) dragging_ = false;
    ImGuiCanvas::mouseReleaseEvent(event);
}

void AttentionView::mouseDoubleClickEvent(QMouseEvent* event) {
    if (event->button() == Qt::LeftButton) resetView();
    ImGuiCanvas::mouseDoubleClickEvent(event);
}

void AttentionView::wheelEvent(QWheelEvent* event) {
    // One notch (120) magnifies by 1.25; trackpads send fractions of a notch.
    const double notches = event->angleDelta().y() / 120.0;
    if (notches != 0) zoomAt(event->position(), std::pow(1.25, notches));
    ImGuiCanvas::wheelEvent(event);
}

void AttentionView::keyPressEvent(QKeyEvent* event) {
    if (event->key() == Qt::Key_Home) resetView();
    ImGuiCanvas::keyPressEvent(event);
}

}  // namespace kvlens::ui
