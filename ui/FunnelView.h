// The PyramidKV "information funnel": one attention statistic per layer (bar: the layer
// mean, dots: each head) with the method's per-layer budgets drawn over it.
//
// Position-valued statistics (positions holding 90% of the attention, effective
// positions) share their y axis with the budgets, which are positions too; for the others
// (entropy, sink and local mass) the budgets get a secondary axis at the right. Clicking a
// layer's column focuses it and emits layerClicked (handled on Qt's event, synchronously);
// hovering shows the layer's numbers in an ImGui tooltip. A local layer (a sliding window
// shorter than the prompt) shows its window's cap, the most any method keeps there.
#pragma once

#include <QColor>
#include <QRectF>
#include <QString>
#include <cstdint>
#include <vector>

#include "core/AttentionSummary.h"
#include "ui/ImGuiCanvas.h"

namespace kvlens::ui {

enum class FunnelStatistic { Positions90, EffectivePositions, Entropy, SinkMass, LocalMass };

class FunnelView : public ImGuiCanvas {
    Q_OBJECT

public:
    explicit FunnelView(QWidget* parent = nullptr);

    // Per layer, its heads' summaries and their mean, for a prompt of `promptLength`.
    void setStatistics(std::vector<kvlens::LayerAttentionSummary> layers, int64_t promptLength);
    void setStatistic(FunnelStatistic which);
    FunnelStatistic statistic() const { return statistic_; }
    // Entries per head each layer holds (Selection::layerBudgets); empty clears. Layers
    // beyond the statistics' are not drawn.
    void setLayerBudgets(std::vector<int64_t> budgetsPerHead, const QString& label);
    // Per layer its sliding window (0: global; WorkbenchCapture::slidingWindows); empty clears.
    void setSlidingWindows(std::vector<int64_t> windows);
    // What a decode step reaches of the prompt on `layer`, W - 1, where its window is shorter
    // than the prompt; 0 on a global layer or one whose window spans the prompt.
    int64_t windowCap(int layer) const;
    // Whether the caps are drawn: some layer has one and the axis they would use is in positions.
    bool drawsWindowCaps() const;

    // Clamped to the layers shown (0 without any).
    void setFocusedLayer(int layer);
    int focusedLayer() const { return focusedLayer_; }

    // Geometry in widget pixels: a layer's column (the whole plot height), the y of a
    // statistic value on the left axis, and the y of a budget on whichever axis the
    // budgets use (the left one for position-valued statistics).
    QRectF layerRect(int layer) const;
    QRectF plotRect() const;
    double yForValue(double value) const;
    double yForBudget(double budget) const;
    bool budgetsOnSecondaryAxis() const;

    // The tooltip for a layer: the statistic's mean, min and max over heads, the budget.
    QString hoverText(int layer) const;

    static QString statisticName(FunnelStatistic which);
    static bool isPositionValued(FunnelStatistic which);
    static double valueOf(const kvlens::HeadAttentionSummary& head, FunnelStatistic which);

    static QColor barColor();
    static QColor focusedBarColor();
    static QColor budgetColor();
    static QColor windowColor();

signals:
    void layerClicked(int layer);

protected:
    void drawFrame() override;
    void mousePressEvent(QMouseEvent* event) override;

private:
    struct Axis {
        double top = 1.0;  // value at the plot's top edge (the bottom is 0)
        double step = 1.0;
    };
    int layers() const { return static_cast<int>(layers_.size()); }
    int budgetLayers() const;
    Axis valueAxis() const;
    Axis budgetAxis() const;
    double yFor(double value, const Axis& axis) const;
    int layerAt(double x, double y) const;
    void drawAxes(const QRectF& plot, const Axis& values, const Axis& budgets);
    void drawLegend(const QRectF& plot);

    std::vector<kvlens::LayerAttentionSummary> layers_;
    int64_t promptLength_ = 0;
    FunnelStatistic statistic_ = FunnelStatistic::Positions90;
    std::vector<int64_t> budgets_;
    std::vector<int64_t> windows_;
    QString budgetLabel_;
    int focusedLayer_ = 0;
};

}  // namespace kvlens::ui
