// One head's causal attention (queries down, keys across) drawn from a viz::TilePyramid at
// any zoom, from the whole prompt down to labelled tokens, with the kept keys beside it.
//
// The map is not drawn cell by cell: the visible region is rasterised, at the widget's
// device-pixel size, into an RGBA buffer (max over the pyramid level that levelFor picks,
// log colour scale fixed per map, magma), uploaded to one OpenGL texture and drawn as a
// single ImGui image. Colour indices are computed once per map and tile (the log scale is
// monotone, so the max of indices is the index of the max), and the raster is rebuilt only
// when the view or the data changed. When zoomed in past the pyramid's finest tiles the
// view asks for exact cells (exactRegionNeeded) and draws those where they arrived.
//
// Interaction: the wheel zooms around the cursor, a left drag pans, double-click or Home
// fits the map again. Upper-triangle cells (key > query) are not attention and are drawn in
// a neutral grey that is not on the colormap; outside the matrix is the clear colour.
#pragma once

#include <QPointF>
#include <QRect>
#include <QRectF>
#include <QString>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ui/CanvasTexture.h"
#include "ui/ImGuiCanvas.h"

namespace kvlens::viz {
class TilePyramid;
}

namespace kvlens::ui {

class AttentionView : public ImGuiCanvas {
    Q_OBJECT

public:
    explicit AttentionView(QWidget* parent = nullptr);
    ~AttentionView() override;

    // The map of (layer, head) with a title (e.g. the prompt's name); null clears the view.
    // Fits the view to the map. Throws kvlens::Error when the pyramid is not finished.
    void setMap(std::shared_ptr<const kvlens::viz::TilePyramid> pyramid, int layer, int head,
                const QString& title);
    // One display string per position (null, or shorter than the map: positions only).
    void setTokens(std::shared_ptr<const std::vector<std::string>> pieces);
    // The keys kept by the selection head this query head reads, marked in a strip under
    // the map; empty: no strip. Positions past the map are not drawn. Throws kvlens::Error
    // on a negative one.
    void setKept(std::vector<int32_t> keptKeyPositions);
    // Key positions to mark (a needle task's needle tokens): magenta ticks between the map
    // and the kept strip, at least 2 px each. Kept until replaced; empty clears them.
    void setMarkedKeys(std::vector<int64_t> keys);
    const std::vector<int64_t>& markedKeys() const { return marked_; }
    static QColor markColor() { return QColor(255, 80, 220); }
    // Exact probabilities of query rows [row0, row0 + rows) x key columns [col0, col0 +
    // cols), row-major, usually in answer to exactRegionNeeded; the last few regions are
    // kept. Throws kvlens::Error without a map, for a region outside it, or a wrong count.
    void setExactRegion(int64_t row0, int64_t col0, int64_t rows, int64_t cols,
                        std::vector<float> values);

    // The view: the cell at the map area's top-left corner and the zoom, in cells per
    // (logical) pixel on both axes. Kept within reach of the map: at least half the view
    // can always show it, and 1/64 <= cellsPerPixel <= 4 x what fits the whole map.
    void setView(double col0, double row0, double cellsPerPixel);
    // Moves the picture by (dx, dy) pixels (right and down for positive values).
    void panBy(double dxPixels, double dyPixels);
    // Magnifies by factor (2: cells twice as large) keeping the cell under pixel in place.
    void zoomAt(QPointF pixel, double factor);
    // Fits the whole map into the map area (what Home and double-click do).
    void resetView();
    double cellsPerPixel() const { return cellsPerPixel_; }
    double viewCol0() const { return col0_; }
    double viewRow0() const { return row0_; }

    // Where the map is drawn in the widget (logical pixels), and the widget pixel of a
    // cell's centre under the current view (for tests and tools).
    QRectF mapRect() const;
    QPointF cellCenter(int64_t row, int64_t col) const;
    // What the tooltip says at this widget pixel: cell, tokens and values (empty outside
    // the map), e.g. "query 812 'the' -> key 17 ' cat': max 0.0312, mean 0.0104 over a
    // 4x4 tile".
    QString hoverText(QPointF pixel) const;
    // The title line: "title  L3 H5, 4096 x 4096, tile 2" (the tile of the level drawn),
    // plus " (exact cells in view)" once exact cells cover the view.
    QString titleText() const;

    // The colour of upper-triangle cells (not on the colormap) and of kept keys in the strip.
    static QColor maskedColor() { return QColor(64, 68, 78); }
    static QColor keptColor() { return QColor(80, 200, 255); }

    // Milliseconds spent by the last raster rebuild and texture upload (for benchmarks).
    double lastRasterMs() const { return lastRasterMs_; }
    double lastUploadMs() const { return lastUploadMs_; }
    // How many times the raster was rebuilt (it is not on frames that did not change it).
    std::uint64_t rasterBuilds() const { return rasterBuilds_; }

signals:
    // Zoomed in past the level-0 tiles (baseTile > 1) on a region of at most 256 x 256
    // cells that no exact region covers yet: the region to compute (aligned outwards to 64
    // cells, clipped to the map). Emitted once per region until it arrives.
    void exactRegionNeeded(qint64 row0, qint64 col0, qint64 rows, qint64 cols);

protected:
    void drawFrame() override;
    void resizeEvent(QResizeEvent* event) override;
    void mousePressEvent(QMouseEvent* event) override;
    void mouseMoveEvent(QMouseEvent* event) override;
    void mouseReleaseEvent(QMouseEvent* event) override;
    void mouseDoubleClickEvent(QMouseEvent* event) override;
    void wheelEvent(QWheelEvent* event) override;
    void keyPressEvent(QKeyEvent* event) override;

private:
    // Colour indices (0..255 on the map's log scale) of one grid of tiles: a pyramid level,
    // or an exact region (tile 1, offset by its first cell).
    struct IndexGrid {
        int64_t tile = 1, tileRows = 0, tileCols = 0;
        int64_t row0 = 0, col0 = 0, rows = 0, cols = 0;  // the cells it covers
        std::vector<uint8_t> index;
    };
    struct ExactRegion {
        int64_t row0, col0, rows, cols;
        std::vector<float> values;
        IndexGrid grid;
        bool contains(int64_t r, int64_t c) const {
            return r >= row0 && r < row0 + rows && c >= col0 && c < col0 + cols;
        }
    };
    struct Region {
        int64_t row0, col0, rows, cols;
        bool operator==(const Region& o) const {
            return row0 == o.row0 && col0 == o.col0 && rows == o.rows && cols == o.cols;
        }
    };
    // Per device pixel along one axis: the first and last cell it covers (-1 if none).
    struct AxisSpans {
        std::vector<int64_t> first, last;
    };

    void viewChanged();
    void clampView();
    double fitCellsPerPixel() const;
    void requestExactIfNeeded();
    // The matrix cells in view (clipped to the matrix; may be empty).
    Region visibleCells() const;
    bool exactCovers(const Region& cells) const;
    uint8_t colourIndex(float value) const;
    IndexGrid indexGrid(const std::vector<float>& values, int64_t tile, int64_t tileRows,
                        int64_t tileCols) const;
    AxisSpans spans(double origin, double cellsPerDevicePixel, int pixels, int64_t cells) const;
    void rasterise(int width, int height);
    void rasteriseGrid(const IndexGrid& grid, const AxisSpans& cols, const AxisSpans& rows, int px0,
                       int px1, int py0, int py1, int width);
    const ExactRegion* exactAt(int64_t row, int64_t col) const;
    QString tokenLabel(int64_t position) const;

    void drawAxes(const QRectF& map);
    void drawKeptStrip(const QRectF& map);
    void drawMarks(const QRectF& map);
    void drawColourBar(const QRectF& map);

    std::shared_ptr<const kvlens::viz::TilePyramid> pyramid_;
    int layer_ = 0, head_ = 0;
    QString title_;
    std::shared_ptr<const std::vector<std::string>> tokens_;
    std::vector<int32_t> kept_;          // sorted, unique
    std::vector<int64_t> marked_;        // sorted, unique
    std::vector<int32_t> keptPrefix_;    // kept keys before each column (cols + 1)
    std::vector<IndexGrid> levelIndex_;  // one per pyramid level
    std::vector<ExactRegion> exact_;     // oldest first
    std::vector<Region> pending_;        // asked for, not arrived
    std::vector<uint32_t> lut_;          // magma, RGBA bytes as little-endian words
    double scaleHi_ = 1.0, scaleLo_ = 1e-4;
    std::vector<float> thresholds_;  // value at which index k + 1 starts

    double col0_ = 0, row0_ = 0, cellsPerPixel_ = 1;
    bool fitPending_ = false;  // the view still is the fit of setMap: refit on resize
    bool dragging_ = false;
    QPointF dragLast_;

    // The raster and what it was built from.
    std::vector<uint32_t> raster_;
    QRect opaque_;  // the raster's pixels over the matrix (device pixels; invalid: none)
    std::vector<uint8_t> rowMax_;
    uint64_t dataVersion_ = 0;
    struct RasterKey {
        double col0 = 0, row0 = 0, cpp = 0;
        int width = 0, height = 0;
        uint64_t version = ~uint64_t{0};
        bool operator==(const RasterKey& o) const {
            return col0 == o.col0 && row0 == o.row0 && cpp == o.cpp && width == o.width &&
                   height == o.height && version == o.version;
        }
    } rasterKey_;
    bool rasterUploaded_ = false;
    CanvasTexture texture_;
    double lastRasterMs_ = 0, lastUploadMs_ = 0;
    std::uint64_t rasterBuilds_ = 0;
};

}  // namespace kvlens::ui
