#include "ui/FunnelView.h"

#include <imgui.h>

#include <QMouseEvent>
#include <QStringList>
#include <algorithm>
#include <cmath>
#include <string>

#include "viz/CategoricalPalette.h"
#include "viz/Ticks.h"

namespace kvlens::ui {
namespace {

constexpr float kLeft = 64.0f;  // y tick labels ("4096", "0.25")
constexpr float kRightPlain = 16.0f;
constexpr float kRightSecondary = 64.0f;  // the budgets' axis
constexpr float kTop = 46.0f;             // title and legend lines
constexpr float kBottom = 24.0f;          // layer labels
constexpr float kLine = 17.0f;

const ImU32 kText = IM_COL32(230, 230, 230, 255);
const ImU32 kDimText = IM_COL32(160, 160, 160, 255);
const ImU32 kGrid = IM_COL32(58, 58, 58, 255);
const ImU32 kAxis = IM_COL32(150, 150, 150, 255);
const ImU32 kFocusBand = IM_COL32(255, 255, 255, 30);
const ImU32 kDot = IM_COL32(250, 250, 250, 220);

// Okabe-Ito: sky blue bars, yellow for the focused layer, vermillion budgets.
viz::Rgb okabe(size_t i) { return viz::CategoricalPalette::okabeIto().color(i); }
QColor toQColor(viz::Rgb c) { return QColor(c.r, c.g, c.b); }
ImU32 toImU32(const QColor& c) { return IM_COL32(c.red(), c.green(), c.blue(), 255); }

std::string toUtf8(const QString& text) { return text.toUtf8().toStdString(); }

void addText(ImDrawList* list, float x, float y, ImU32 color, const std::string& text) {
    list->AddText(ImVec2(x, y), color, text.c_str(), text.c_str() + text.size());
}

float textWidth(const std::string& text) { return ImGui::CalcTextSize(text.c_str()).x; }

QString formatValue(double value, FunnelStatistic which) {
    switch (which) {
        case FunnelStatistic::Positions90:
        case FunnelStatistic::EffectivePositions:
            return QString::number(value, 'f', 1);
        case FunnelStatistic::Entropy:
        case FunnelStatistic::SinkMass:
        case FunnelStatistic::LocalMass:
            break;
    }
    return QString::number(value, 'f', 3);
}

}  // namespace

FunnelView::FunnelView(QWidget* parent) : ImGuiCanvas(parent) {}

QColor FunnelView::barColor() { return toQColor(okabe(5)); }
QColor FunnelView::focusedBarColor() { return toQColor(okabe(7)); }
QColor FunnelView::budgetColor() { return toQColor(okabe(1)); }
QColor FunnelView::windowColor() { return toQColor(okabe(2)); }  // bluish green, as the kept view's window edge

QString FunnelView::statisticName(FunnelStatistic which) {
    switch (which) {
        case FunnelStatistic::Positions90:
            return QStringLiteral("Positions holding 90% of the attention");
        case FunnelStatistic::EffectivePositions:
            return QStringLiteral("Effective positions (exp of the entropy)");
        case FunnelStatistic::Entropy:
            return QStringLiteral("Attention entropy (nats)");
        case FunnelStatistic::SinkMass:
            return QStringLiteral("Attention on the first 4 positions (sink mass)");
        case FunnelStatistic::LocalMass:
            return QStringLiteral("Attention on the last 64 positions (local mass)");
    }
    return {};
}

bool FunnelView::isPositionValued(FunnelStatistic which) {
    return which == FunnelStatistic::Positions90 || which == FunnelStatistic::EffectivePositions;
}

double FunnelView::valueOf(const kvlens::HeadAttentionSummary& head, FunnelStatistic which) {
    switch (which) {
        case FunnelStatistic::Positions90:
            return head.positions90;
        case FunnelStatistic::EffectivePositions:
            return head.effectivePositions;
        case FunnelStatistic::Entropy:
            return head.entropy;
        case FunnelStatistic::SinkMass:
            return head.sinkMass;
        case FunnelStatistic::LocalMass:
            return head.localMass;
    }
    return 0.0;
}

void FunnelView::setStatistics(std::vector<kvlens::LayerAttentionSummary> layers,
                               int64_t promptLength) {
    layers_ = std::move(layers);
    promptLength_ = promptLength;
    setFocusedLayer(focusedLayer_);
}

void FunnelView::setStatistic(FunnelStatistic which) {
    statistic_ = which;
    requestRedraw();
}

void FunnelView::setLayerBudgets(std::vector<int64_t> budgetsPerHead, const QString& label) {
    budgets_ = std::move(budgetsPerHead);
    budgetLabel_ = budgets_.empty() ? QString() : label;
    requestRedraw();
}

void FunnelView::setSlidingWindows(std::vector<int64_t> windows) {
    windows_ = std::move(windows);
    requestRedraw();
}

int64_t FunnelView::windowCap(int layer) const {
    if (layer < 0 || layer >= layers() || static_cast<size_t>(layer) >= windows_.size()) return 0;
    const int64_t w = windows_[static_cast<size_t>(layer)];
    return w > 0 && promptLength_ > w - 1 ? w - 1 : 0;
}

bool FunnelView::drawsWindowCaps() const {
    if (!isPositionValued(statistic_) && !budgetsOnSecondaryAxis()) return false;
    for (int layer = 0; layer < layers(); ++layer)
        if (windowCap(layer) > 0) return true;
    return false;
}

void FunnelView::setFocusedLayer(int layer) {
    focusedLayer_ = layers() > 0 ? std::clamp(layer, 0, layers() - 1) : 0;
    requestRedraw();
}

int FunnelView::budgetLayers() const {
    return static_cast<int>(std::min(budgets_.size(), layers_.size()));
}

bool FunnelView::budgetsOnSecondaryAxis() const {
    return budgetLayers() > 0 && !isPositionValued(statistic_);
}

QRectF FunnelView::plotRect() const {
    const double right = budgetsOnSecondaryAxis() ? kRightSecondary : kRightPlain;
    const double w = std::max(1.0, width() - kLeft - right);
    const double h = std::max(1.0, static_cast<double>(height() - kTop - kBottom));
    return QRectF(kLeft, kTop, w, h);
}

QRectF FunnelView::layerRect(int layer) const {
    if (layer < 0 || layer >= layers()) return {};
    const QRectF plot = plotRect();
    const double w = plot.width() / layers();
    return QRectF(plot.left() + layer * w, plot.top(), w, plot.height());
}

// 0 at the bottom, a nice round value a little above the largest one at the top.
FunnelView::Axis FunnelView::valueAxis() const {
    if (statistic_ == FunnelStatistic::SinkMass || statistic_ == FunnelStatistic::LocalMass)
        return Axis{1.0, 0.2};
    double largest = 0.0;
    for (const auto& layer : layers_) {
        largest = std::max(largest, valueOf(layer.mean, statistic_));
        for (const auto& head : layer.heads) largest = std::max(largest, valueOf(head, statistic_));
    }
    if (isPositionValued(statistic_)) {
        for (int i = 0; i < budgetLayers(); ++i)
            largest = std::max(largest, static_cast<double>(budgets_[static_cast<size_t>(i)]));
        for (int i = 0; i < layers(); ++i) largest = std::max(largest, static_cast<double>(windowCap(i)));
    }
    if (!(largest > 0.0) || !std::isfinite(largest)) return Axis{};
    const bool integer = isPositionValued(statistic_);
    const double step = viz::Ticks::niceStep(0.0, largest * 1.03, 6, integer);
    return Axis{std::ceil(largest * 1.03 / step) * step, step};
}

FunnelView::Axis FunnelView::budgetAxis() const {
    if (!budgetsOnSecondaryAxis()) return valueAxis();
    double largest = 0.0;
    for (int i = 0; i < budgetLayers(); ++i)
        largest = std::max(largest, static_cast<double>(budgets_[static_cast<size_t>(i)]));
    for (int i = 0; i < layers(); ++i) largest = std::max(largest, static_cast<double>(windowCap(i)));
    if (!(largest > 0.0)) return Axis{};
    const double step = viz::Ticks::niceStep(0.0, largest * 1.03, 6, true);
    return Axis{std::ceil(largest * 1.03 / step) * step, step};
}

double FunnelView::yFor(double value, const Axis& axis) const {
    const QRectF plot = plotRect();
    return plot.bottom() - std::clamp(value / axis.top, 0.0, 1.0) * plot.height();
}

double FunnelView::yForValue(double value) const { return yFor(value, valueAxis()); }
double FunnelView::yForBudget(double budget) const { return yFor(budget, budgetAxis()); }

int FunnelView::layerAt(double x, double y) const {
    const QRectF plot = plotRect();
    if (layers() == 0 || x < plot.left() || x >= plot.right() || y < plot.top() ||
        y >= plot.bottom() + kBottom)
        return -1;
    return std::clamp(static_cast<int>((x - plot.left()) / plot.width() * layers()), 0,
                      layers() - 1);
}

QString FunnelView::hoverText(int layer) const {
    if (layer < 0 || layer >= layers()) return {};
    const auto& summary = layers_[static_cast<size_t>(layer)];
    QStringList lines;
    lines << QStringLiteral("L%1: %2").arg(layer).arg(statisticName(statistic_));
    lines << QStringLiteral("layer mean %1")
                 .arg(formatValue(valueOf(summary.mean, statistic_), statistic_));
    if (!summary.heads.empty()) {
        double lo = INFINITY;
        double hi = -INFINITY;
        for (const auto& head : summary.heads) {
            lo = std::min(lo, valueOf(head, statistic_));
            hi = std::max(hi, valueOf(head, statistic_));
        }
        lines << QStringLiteral("heads: min %1, max %2 (%3 heads)")
                     .arg(formatValue(lo, statistic_))
                     .arg(formatValue(hi, statistic_))
                     .arg(summary.heads.size());
    }
    if (layer < budgetLayers()) {
        const int64_t budget = budgets_[static_cast<size_t>(layer)];
        QString line = QStringLiteral("holds %1 per head").arg(budget);
        if (promptLength_ > 0)
            line +=
                QStringLiteral(" (%1% of %2)")
                    .arg(100.0 * static_cast<double>(budget) / static_cast<double>(promptLength_),
                         0, 'f', 1)
                    .arg(promptLength_);
        if (!budgetLabel_.isEmpty()) line += QStringLiteral(", ") + budgetLabel_;
        lines << line;
    }
    if (const int64_t cap = windowCap(layer); cap > 0) {
        lines << QStringLiteral("local layer, sliding window %1: a decode step reaches its last %2 prompt positions, "
                                "the most any method keeps here")
                     .arg(cap + 1)
                     .arg(cap);
    } else if (static_cast<size_t>(layer) < windows_.size() && windows_[static_cast<size_t>(layer)] > 0) {
        lines << QStringLiteral("local layer, sliding window %1: it spans the prompt")
                     .arg(windows_[static_cast<size_t>(layer)]);
    }
    return lines.join(QLatin1Char('\n'));
}

// ---- drawing ----

void FunnelView::drawFrame() {
    ImDrawList* list = ImGui::GetBackgroundDrawList();
    if (layers() == 0) {
        addText(list, kLeft, 4.0f, kDimText,
                "No attention statistics yet: run a prompt to see the funnel.");
        return;
    }
    const QRectF plot = plotRect();
    const Axis values = valueAxis();
    const Axis budgets = budgetAxis();
    const float left = static_cast<float>(plot.left());
    const float bottom = static_cast<float>(plot.bottom());

    std::string title = toUtf8(statisticName(statistic_)) + ", per layer";
    if (promptLength_ > 0) title += " (prompt of " + std::to_string(promptLength_) + ")";
    addText(list, 8.0f, 4.0f, kText, title);
    drawLegend(plot);
    drawAxes(plot, values, budgets);

    const float columnW = static_cast<float>(plot.width()) / static_cast<float>(layers());
    const float barW = std::max(1.0f, std::floor(columnW * 0.6f));
    const float dotRadius = columnW >= 10.0f ? 2.0f : 1.5f;
    for (int layer = 0; layer < layers(); ++layer) {
        const float x0 = left + static_cast<float>(layer) * columnW;
        const bool focused = layer == focusedLayer_;
        if (focused)
            list->AddRectFilled(ImVec2(x0, static_cast<float>(plot.top())),
                                ImVec2(x0 + columnW, bottom), kFocusBand);
        const auto& summary = layers_[static_cast<size_t>(layer)];
        const float barX0 = std::round(x0 + (columnW - barW) * 0.5f);
        const float top =
            static_cast<float>(std::round(yFor(valueOf(summary.mean, statistic_), values)));
        list->AddRectFilled(ImVec2(barX0, top), ImVec2(barX0 + barW, bottom),
                            toImU32(focused ? focusedBarColor() : barColor()));
        // The heads, spread across the bar so that their spread reads as a cloud.
        const size_t heads = summary.heads.size();
        for (size_t h = 0; h < heads; ++h) {
            const float x =
                barX0 + barW * (static_cast<float>(h) + 0.5f) / static_cast<float>(heads);
            const float y = static_cast<float>(yFor(valueOf(summary.heads[h], statistic_), values));
            list->AddCircleFilled(ImVec2(x, y), dotRadius, kDot, 8);
        }
    }

    if (drawsWindowCaps()) {
        // A local layer's cap: a dashed line across its column at W - 1 on the positions' axis.
        const ImU32 color = toImU32(windowColor());
        for (int layer = 0; layer < layers(); ++layer) {
            const int64_t cap = windowCap(layer);
            if (cap == 0) continue;
            const float x0 = left + static_cast<float>(layer) * columnW;
            const float y = std::round(static_cast<float>(yFor(static_cast<double>(cap), budgets))) + 0.5f;
            const float dash = std::max(2.0f, std::min(6.0f, columnW / 5.0f));
            for (float x = x0 + 1.0f; x < x0 + columnW - 1.0f; x += 2.0f * dash)
                list->AddLine(ImVec2(x, y), ImVec2(std::min(x + dash, x0 + columnW - 1.0f), y), color, 2.0f);
        }
    }

    if (budgetLayers() > 0) {
        const ImU32 color = toImU32(budgetColor());
        std::vector<ImVec2> points;
        for (int layer = 0; layer < budgetLayers(); ++layer)
            points.emplace_back(
                left + (static_cast<float>(layer) + 0.5f) * columnW,
                static_cast<float>(
                    yFor(static_cast<double>(budgets_[static_cast<size_t>(layer)]), budgets)));
        list->AddPolyline(points.data(), static_cast<int>(points.size()), color, 0, 2.0f);
        for (const auto& p : points) list->AddCircleFilled(p, 3.5f, color, 12);
    }

    const ImVec2 mouse = ImGui::GetIO().MousePos;
    if (ImGui::IsMousePosValid(&mouse)) {
        const int layer = layerAt(mouse.x, mouse.y);
        if (layer >= 0) {
            const float x0 = left + static_cast<float>(layer) * columnW;
            list->AddRect(ImVec2(x0, static_cast<float>(plot.top())), ImVec2(x0 + columnW, bottom),
                          IM_COL32(255, 255, 255, 90));
            const std::string text = toUtf8(hoverText(layer));
            ImGui::BeginTooltip();
            ImGui::TextUnformatted(text.c_str(), text.c_str() + text.size());
            ImGui::EndTooltip();
        }
    }
}

void FunnelView::drawAxes(const QRectF& plot, const Axis& values, const Axis& budgets) {
    ImDrawList* list = ImGui::GetBackgroundDrawList();
    const float left = static_cast<float>(plot.left());
    const float right = static_cast<float>(plot.right());
    const float top = static_cast<float>(plot.top());
    const float bottom = static_cast<float>(plot.bottom());

    for (const auto& tick : viz::Ticks::linear(0.0, values.top, 7, isPositionValued(statistic_))) {
        const float y = std::round(static_cast<float>(yFor(tick.value, values))) + 0.5f;
        list->AddLine(ImVec2(left, y), ImVec2(right, y), kGrid);
        list->AddLine(ImVec2(left - 4.0f, y), ImVec2(left, y), kAxis);
        addText(list, left - 7.0f - textWidth(tick.label), y - 7.0f, kDimText, tick.label);
    }
    list->AddLine(ImVec2(left - 0.5f, top), ImVec2(left - 0.5f, bottom), kAxis);
    list->AddLine(ImVec2(left, bottom + 0.5f), ImVec2(right, bottom + 0.5f), kAxis);

    if (budgetsOnSecondaryAxis()) {
        const ImU32 color = toImU32(budgetColor());
        list->AddLine(ImVec2(right + 0.5f, top), ImVec2(right + 0.5f, bottom), color);
        for (const auto& tick : viz::Ticks::linear(0.0, budgets.top, 7, true)) {
            const float y = std::round(static_cast<float>(yFor(tick.value, budgets))) + 0.5f;
            list->AddLine(ImVec2(right, y), ImVec2(right + 4.0f, y), color);
            addText(list, right + 7.0f, y - 7.0f, color, tick.label);
        }
        addText(list, right + 7.0f, top - kLine, color, "budget");
    }

    // Layer labels: every k-th so that they never overlap, the focused one always.
    const float columnW = static_cast<float>(plot.width()) / static_cast<float>(layers());
    const float widest = textWidth("L" + std::to_string(layers() - 1)) + 6.0f;
    const int every = std::max(1, static_cast<int>(std::ceil(widest / columnW)));
    for (int layer = 0; layer < layers(); ++layer) {
        const bool focused = layer == focusedLayer_;
        if (!focused && (layer % every != 0 || std::abs(layer - focusedLayer_) < every)) continue;
        const std::string text = "L" + std::to_string(layer);
        const float x =
            left + (static_cast<float>(layer) + 0.5f) * columnW - textWidth(text) * 0.5f;
        addText(list, x, bottom + 4.0f, focused ? toImU32(focusedBarColor()) : kDimText, text);
    }
}

void FunnelView::drawLegend(const QRectF& plot) {
    ImDrawList* list = ImGui::GetBackgroundDrawList();
    const float y = 4.0f + kLine;
    float x = 8.0f;
    list->AddRectFilled(ImVec2(x, y + 2.0f), ImVec2(x + 10.0f, y + 12.0f), toImU32(barColor()));
    addText(list, x + 14.0f, y, kText, "layer mean");
    x += 14.0f + textWidth("layer mean") + 14.0f;
    list->AddCircleFilled(ImVec2(x + 5.0f, y + 7.0f), 2.5f, kDot, 8);
    addText(list, x + 14.0f, y, kText, "heads");
    x += 14.0f + textWidth("heads") + 14.0f;
    if (drawsWindowCaps()) {
        const ImU32 color = toImU32(windowColor());
        list->AddLine(ImVec2(x, y + 7.0f), ImVec2(x + 5.0f, y + 7.0f), color, 2.0f);
        list->AddLine(ImVec2(x + 9.0f, y + 7.0f), ImVec2(x + 14.0f, y + 7.0f), color, 2.0f);
        addText(list, x + 18.0f, y, kText, "window cap");
        x += 18.0f + textWidth("window cap") + 14.0f;
    }
    if (budgetLayers() > 0) {
        const ImU32 color = toImU32(budgetColor());
        list->AddLine(ImVec2(x, y + 7.0f), ImVec2(x + 16.0f, y + 7.0f), color, 2.0f);
        list->AddCircleFilled(ImVec2(x + 8.0f, y + 7.0f), 3.5f, color, 12);
        std::string text = "budget per head";
        if (!budgetLabel_.isEmpty()) text += " (" + toUtf8(budgetLabel_) + ")";
        if (budgetsOnSecondaryAxis()) text += ", right axis";
        list->PushClipRect(ImVec2(x, y), ImVec2(static_cast<float>(plot.right()), y + kLine), true);
        addText(list, x + 20.0f, y, kText, text);
        list->PopClipRect();
    }
}

// ---- input ----

void FunnelView::mousePressEvent(QMouseEvent* event) {
    if (event->button() == Qt::LeftButton) {
        const int layer = layerAt(event->position().x(), event->position().y());
        if (layer >= 0) {
            setFocusedLayer(layer);
            emit layerClicked(layer);
        }
    }
    ImGuiCanvas::mousePressEvent(event);
}

}  // namespace kvlens::ui
