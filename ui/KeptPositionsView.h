// What a compression method keeps: the focused layer's heads x prompt positions with the
// kept entries marked (zoomable to single tokens), above it an all-layers overview.
//
// Layout, top to bottom: a title line (label, focused layer, entries kept), the overview
// (one row per layer over the whole prompt, colour = share of that layer's heads keeping
// the position, marked positions such as a needle's as a band under it, the focused
// map's visible range as a bar under that), then the focused
// layer's map (one row per selection head over the visible range), a token row (when a
// column is wide enough for text) and the position axis. On a local layer (a sliding window
// shorter than the prompt) the positions no decode step reaches are shaded over, in the
// overview and the focused map, with the window's first position marked.
//
// Everything a frame computes is bounded by the canvas's pixel width, not the prompt:
// per-(layer, head) and per-layer prefix counts are built once in setSelection, so a
// pixel column covering many positions is shaded by its share kept in O(1). The cells
// are one small texture (a texel per pixel column, a row per layer and per head), rebuilt
// only when the selection, focus, view or width changes, and drawn as one quad per row:
// one rectangle per run of cells was tens of thousands of vertices, which Mesa's
// llvmpipe took tens of milliseconds to draw.
//
// Input is handled on Qt's events (so it takes effect synchronously and tests can drive
// it): wheel zooms the position axis around the cursor, left-drag pans, double-click or
// Home shows the whole prompt, a click on an overview row focuses that layer. Hover
// tooltips are drawn by ImGui.
#pragma once

#include <QColor>
#include <QPointF>
#include <QRectF>
#include <QString>
#include <QStringList>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/Selection.h"
#include "ui/CanvasTexture.h"
#include "ui/ImGuiCanvas.h"

namespace kvlens::ui {

class KeptPositionsView : public ImGuiCanvas {
    Q_OBJECT

public:
    explicit KeptPositionsView(QWidget* parent = nullptr);
    ~KeptPositionsView() override;

    // The selection shown; `label` names its method (e.g. "snapkv B=128 W=32"). Null
    // clears the view (and the scores). A selection of another prompt length shows the
    // whole prompt; one of the same length keeps the current zoom.
    void setSelection(std::shared_ptr<const kvlens::Selection> selection, const QString& label);
    // One display string per prompt position; null (or a short list): "#pos".
    void setTokens(std::shared_ptr<const std::vector<std::string>> pieces);
    // The method's score per [selection head][position] for `layer` (NaN: none), shown on
    // hover. Kept until replaced, dropped by a null `scores` or a null selection.
    void setScores(int layer, std::shared_ptr<const std::vector<std::vector<float>>> scores);
    // Other methods' selections of the same prompt, named, for "kept by" on hover.
    void setOtherSelections(
        std::vector<std::pair<std::string, std::shared_ptr<const kvlens::Selection>>> others);
    // Their names, in order.
    QStringList otherSelectionNames() const;

    // Positions to mark, e.g. a needle task's needle tokens (`name`: "needle"): a band
    // under the overview, a frame around their columns in the focused map, a line in the
    // hover, and in the title the share of them the focused layer's heads keep. Kept
    // across selections until replaced; an empty list clears them. Positions outside
    // the prompt are not drawn.
    void setMarkedPositions(std::vector<int64_t> positions, const QString& name);
    const std::vector<int64_t>& markedPositions() const { return marked_; }
    // "needle: 7/9 positions, 77.8% kept by L2's heads"; empty without marks or selection.
    QString markedSummary() const;
    // The share of the marked positions inside the prompt that `layer`'s heads keep,
    // mean over heads; NaN without marks or selection.
    double markedKeptShare(int layer) const;
    // The band of marks under the overview (empty rect without marks).
    QRectF markBandRect() const;

    // Per layer its sliding window (0: global; WorkbenchCapture::slidingWindows); empty clears.
    // Kept across selections until replaced.
    void setSlidingWindows(std::vector<int64_t> windows);
    // The first prompt position a decode step reaches on `layer`: T - W + 1 where its window
    // W is shorter than the prompt, else 0.
    int64_t firstReached(int layer) const;

    // Whether the last frame drawn shows the selection last given to setSelection (its
    // raster built from it): what a caller waits for after a change, since the frame
    // may already have been drawn by the time it looks.
    bool drawnLatestSelection() const { return rasterKey_.generation == generation_; }

    // Clamped to the selection's layers (0 without one).
    void setFocusedLayer(int layer);
    int focusedLayer() const { return focusedLayer_; }

    // The focused map shows positions [firstPosition, firstPosition + positions); clamped
    // to at least one position and to the prompt.
    void setVisibleRange(double firstPosition, double positions);
    double visibleFirst() const { return first_; }
    double visiblePositions() const { return visible_; }
    // The whole prompt (what double-click and Home do).
    void resetView();
    // Zooms by `factor` (< 1: in) keeping the position under pixel x where it is.
    void zoomAt(double x, double factor);

    // Geometry in widget pixels, for tests and for whoever positions things next to it.
    QRectF overviewRowRect(int layer) const;  // the row's cells, whole prompt
    QPointF overviewCellCenter(int layer, int64_t position) const;
    QRectF focusedMapRect() const;  // all head rows over the visible range
    QPointF cellCenter(int head, int64_t position) const;
    QRectF tokenRowRect() const;

    // The tooltip for the focused layer's (head, position): position, token, head, kept
    // or not, score, and the names of the methods keeping it. Empty when out of range.
    QString hoverText(int head, int64_t position) const;
    // The tooltip for an overview cell: layer, position, token, heads keeping it.
    QString overviewHoverText(int layer, int64_t position) const;
    // "L3: 512/2048 kept per head, 25.0%" for the focused layer; empty without selection.
    QString focusedLayerSummary() const;

    static QColor keptColor();
    static QColor windowColor();  // kept positions inside the observation window
    static QColor droppedColor();
    static QColor markColor();
    static QColor windowEdgeColor();  // the first position a local layer's window reaches

signals:
    void layerClicked(int layer);

protected:
    void drawFrame() override;
    void mousePressEvent(QMouseEvent* event) override;
    void mouseMoveEvent(QMouseEvent* event) override;
    void mouseReleaseEvent(QMouseEvent* event) override;
    void mouseDoubleClickEvent(QMouseEvent* event) override;
    void wheelEvent(QWheelEvent* event) override;
    void keyPressEvent(QKeyEvent* event) override;

private:
    struct Layout {
        float plotX0 = 0, plotX1 = 0;  // the position axis of both maps
        float overviewY0 = 0, overviewRowH = 0;
        float markBandY = 0;      // the marked positions under the overview (when any)
        float rangeBarY = 0;      // the visible range under them
        float overviewAxisY = 0;  // its tick labels
        float mapCaptionY = 0;
        float mapY0 = 0, mapRowH = 0;
        float tokenRowY = 0;
        float axisY = 0;  // tick marks start here, labels under them
        int layers = 0, heads = 0;
    };
    Layout layout() const;
    int64_t promptLength() const;
    int headsPerLayer() const;
    // Pixel -> overview layer / focused head and position; -1 when outside.
    int overviewLayerAt(const Layout& l, QPointF p) const;
    int64_t overviewPositionAt(const Layout& l, double x) const;
    int focusedHeadAt(const Layout& l, QPointF p) const;
    double positionAtX(const Layout& l, double x) const;
    bool inZoomArea(const Layout& l, QPointF p) const;
    bool isKept(const kvlens::Selection& s, int64_t layer, int64_t head, int64_t position) const;
    std::string tokenText(int64_t position) const;
    QString headName(int head) const;
    int64_t windowStart() const;

    void drawTitle(const Layout& l);
    void drawOverview(const Layout& l);
    void drawFocusedMap(const Layout& l);
    void drawTokenRow(const Layout& l);
    void drawPositionAxis(float x0, float x1, double first, double visible, float y);
    void drawHover(const Layout& l);
    void drawMarks(const Layout& l);
    void drawWindows(const Layout& l);
    // "outside L2's sliding window of 64: no decode step reaches it"; empty inside it.
    QString outsideWindowText(int layer, int64_t position) const;
    // Rebuilds and uploads the cells' texture if what it shows changed (GL context current).
    void updateRaster(const Layout& l);
    void drawRasterRow(int row, float x0, float x1, float y0, float y1);

    std::shared_ptr<const kvlens::Selection> selection_;
    QString label_;
    std::shared_ptr<const std::vector<std::string>> tokens_;
    std::map<int, std::shared_ptr<const std::vector<std::vector<float>>>> scores_;
    std::vector<std::pair<std::string, std::shared_ptr<const kvlens::Selection>>> others_;
    std::vector<int64_t> marked_;  // ascending, unique
    std::vector<int64_t> windows_;  // per layer, 0: global
    QString markName_;
    // headPrefix_[layer][head][p]: kept positions in [0, p); layerPrefix_[layer][p]: the
    // same summed over the layer's heads.
    std::vector<std::vector<std::vector<int32_t>>> headPrefix_;
    std::vector<std::vector<int32_t>> layerPrefix_;
    int focusedLayer_ = 0;
    double first_ = 0.0;
    double visible_ = 1.0;
    bool dragging_ = false;
    double dragLastX_ = 0.0;

    // What the texture shows; generation_ counts setSelection calls.
    struct RasterKey {
        uint64_t generation = 0;
        int columns = 0;
        double first = 0.0, visible = 0.0;
        int focusedLayer = 0;
        bool operator==(const RasterKey& o) const {
            return generation == o.generation && columns == o.columns && first == o.first &&
                   visible == o.visible && focusedLayer == o.focusedLayer;
        }
    };
    uint64_t generation_ = 0;
    RasterKey rasterKey_;
    CanvasTexture texture_;
};

}  // namespace kvlens::ui
