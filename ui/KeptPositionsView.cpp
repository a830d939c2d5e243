#include "ui/KeptPositionsView.h"

#include <imgui.h>

#include <QKeyEvent>
#include <QMouseEvent>
#include <QStringList>
#include <QWheelEvent>
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>

#include "core/Error.h"
#include "viz/CategoricalPalette.h"
#include "viz/Ticks.h"

namespace kvlens::ui {
namespace {

// Margins and line heights in pixels; the default ImGui font is 13 px high, 7 px wide.
constexpr float kLeft = 48.0f;  // head and layer labels ("KV31", "L63")
constexpr float kRight = 14.0f;
constexpr float kLine = 17.0f;
constexpr float kCharWidth = 7.0f;
constexpr float kTokenRowH = 15.0f;
// A token column this wide gets its text (two characters and padding).
constexpr double kTokenTextMinPx = 14.0;
// Columns this wide get a separator line, so that single cells can be told apart.
constexpr double kSeparatorMinPx = 12.0;
// Wheel zoom stops at this many pixels per position.
constexpr double kMaxPxPerPosition = 64.0;
// Shades of a partly kept pixel column (entries of the colour table below).
constexpr double kShadeLevels = 32.0;

const ImU32 kText = IM_COL32(230, 230, 230, 255);
const ImU32 kDimText = IM_COL32(160, 160, 160, 255);
const ImU32 kFocusText = IM_COL32(240, 228, 66, 255);  // Okabe-Ito yellow
const ImU32 kAxis = IM_COL32(150, 150, 150, 255);
const ImU32 kMark = IM_COL32(255, 80, 220, 255);  // marked positions (a needle): magenta
constexpr float kMarkBandH = 5.0f;

viz::Rgb paletteColor(size_t code) { return viz::CategoricalPalette::selection().color(code); }
ImU32 toImU32(viz::Rgb c) { return IM_COL32(c.r, c.g, c.b, 255); }

// Colour of a column in which `share` of the entries are kept: dropped blended towards
// kept (or the window colour), in kShadeLevels steps. A table built once: this runs for
// every pixel column of every row of every frame.
ImU32 shade(double share, bool inWindow) {
    constexpr int kLevels = static_cast<int>(kShadeLevels) + 1;
    static const std::array<std::array<ImU32, kLevels>, 2> table = [] {
        std::array<std::array<ImU32, kLevels>, 2> t{};
        for (int window = 0; window < 2; ++window)
            for (int i = 0; i < kLevels; ++i)
                t[window][i] = toImU32(viz::Rgb::blend(
                    paletteColor(0), paletteColor(window ? 2 : 1), i / kShadeLevels));
        return t;
    }();
    const int level = static_cast<int>(std::lround(std::clamp(share, 0.0, 1.0) * kShadeLevels));
    return table[inWindow ? 1 : 0][level];
}

// One row of a map as pixel colours: positions [first, first + visible) over `columns`
// pixel columns, from prefix counts (prefix[p]: kept entries in [0, p), `denominator`
// entries per position). Zoomed in, a pixel shows the position under its centre; zoomed
// out, the share kept in the positions it covers, in O(1) from the prefix counts.
void fillShareRow(ImU32* out, int columns, const std::vector<int32_t>& prefix, int denominator,
                  double first, double visible, int64_t windowStart) {
    const int64_t length = static_cast<int64_t>(prefix.size()) - 1;
    if (length <= 0 || denominator <= 0 || columns <= 0) return;
    const double positionsPerPixel = visible / columns;
    for (int i = 0; i < columns; ++i) {
        if (positionsPerPixel <= 1.0) {
            const int64_t p = std::clamp<int64_t>(
                static_cast<int64_t>(std::floor(first + (i + 0.5) * positionsPerPixel)), 0,
                length - 1);
            out[i] = shade(static_cast<double>(prefix[p + 1] - prefix[p]) / denominator,
                           p >= windowStart);
            continue;
        }
        const int64_t a = std::clamp<int64_t>(
            static_cast<int64_t>(std::floor(first + i * positionsPerPixel)), 0, length - 1);
        const int64_t b = std::clamp<int64_t>(
            static_cast<int64_t>(std::floor(first + (i + 1) * positionsPerPixel)), a + 1, length);
        const double share = static_cast<double>(prefix[b] - prefix[a]) /
                             (static_cast<double>(denominator) * static_cast<double>(b - a));
        out[i] = shade(share, (a + b) / 2 >= windowStart);
    }
}

// Display form of a token: control characters escaped so that a piece stays on one line.
std::string printable(const std::string& piece) {
    std::string out;
    for (const char c : piece) {
        if (c == '\n') {
            out += "\\n";
        } else if (c == '\t') {
            out += "\\t";
        } else if (c == '\r') {
            out += "\\r";
        } else if (static_cast<unsigned char>(c) < 0x20) {
            char hex[8];
            std::snprintf(hex, sizeof hex, "\\x%02x", static_cast<unsigned>(c));
            out += hex;
        } else {
            out += c;
        }
    }
    return out;
}

std::string toUtf8(const QString& text) { return text.toUtf8().toStdString(); }

void addText(ImDrawList* list, float x, float y, ImU32 color, const std::string& text) {
    list->AddText(ImVec2(x, y), color, text.c_str(), text.c_str() + text.size());
}

}  // namespace

KeptPositionsView::KeptPositionsView(QWidget* parent) : ImGuiCanvas(parent) {}

KeptPositionsView::~KeptPositionsView() { texture_.release(); }

QColor KeptPositionsView::keptColor() {
    const viz::Rgb c = paletteColor(1);
    return QColor(c.r, c.g, c.b);
}
QColor KeptPositionsView::windowColor() {
    const viz::Rgb c = paletteColor(2);
    return QColor(c.r, c.g, c.b);
}
QColor KeptPositionsView::markColor() { return QColor(255, 80, 220); }
namespace {
viz::Rgb windowEdgeRgb() { return viz::CategoricalPalette::okabeIto().color(2); }  // bluish green, as the funnel's cap
}  // namespace

QColor KeptPositionsView::windowEdgeColor() {
    const viz::Rgb c = windowEdgeRgb();
    return QColor(c.r, c.g, c.b);
}

void KeptPositionsView::setSlidingWindows(std::vector<int64_t> windows) {
    windows_ = std::move(windows);
    requestRedraw();
}

int64_t KeptPositionsView::firstReached(int layer) const {
    if (layer < 0 || static_cast<size_t>(layer) >= windows_.size()) return 0;
    const int64_t w = windows_[static_cast<size_t>(layer)];
    return w > 0 ? std::max<int64_t>(0, promptLength() - w + 1) : 0;
}

QString KeptPositionsView::outsideWindowText(int layer, int64_t position) const {
    if (position >= firstReached(layer)) return {};
    return QStringLiteral("outside L%1's sliding window of %2: no decode step reaches it")
        .arg(layer)
        .arg(windows_[static_cast<size_t>(layer)]);
}

void KeptPositionsView::setMarkedPositions(std::vector<int64_t> positions, const QString& name) {
    std::sort(positions.begin(), positions.end());
    positions.erase(std::unique(positions.begin(), positions.end()), positions.end());
    marked_ = std::move(positions);
    markName_ = name;
    requestRedraw();
}

double KeptPositionsView::markedKeptShare(int layer) const {
    if (!selection_ || layer < 0 || layer >= static_cast<int>(headPrefix_.size())) return NAN;
    const auto& heads = headPrefix_[static_cast<size_t>(layer)];
    int64_t inside = 0, kept = 0;
    for (const int64_t p : marked_) {
        if (p < 0 || p >= promptLength()) continue;
        ++inside;
        for (const auto& prefix : heads) kept += prefix[p + 1] - prefix[p];
    }
    if (inside == 0 || heads.empty()) return NAN;
    return static_cast<double>(kept) / static_cast<double>(inside * static_cast<int64_t>(heads.size()));
}

QString KeptPositionsView::markedSummary() const {
    const double share = markedKeptShare(focusedLayer_);
    if (std::isnan(share)) return {};
    int64_t inside = 0;
    for (const int64_t p : marked_) inside += p >= 0 && p < promptLength() ? 1 : 0;
    return QStringLiteral("%1: %2 positions, %3% kept by L%4's heads")
        .arg(markName_.isEmpty() ? QStringLiteral("marked") : markName_)
        .arg(inside)
        .arg(100.0 * share, 0, 'f', 1)
        .arg(focusedLayer_);
}

QRectF KeptPositionsView::markBandRect() const {
    if (marked_.empty() || !selection_) return {};
    const Layout l = layout();
    return QRectF(l.plotX0, l.markBandY, l.plotX1 - l.plotX0, kMarkBandH);
}

QColor KeptPositionsView::droppedColor() {
    const viz::Rgb c = paletteColor(0);
    return QColor(c.r, c.g, c.b);
}

void KeptPositionsView::setSelection(std::shared_ptr<const kvlens::Selection> selection,
                                     const QString& label) {
    const int64_t previousLength = promptLength();
    if (!selection) {
        headPrefix_.clear();
        layerPrefix_.clear();
        selection_.reset();
        label_.clear();
        scores_.clear();
        requestRedraw();
        return;
    }
    const int64_t length = selection->promptLength;
    const int64_t heads = selection->headsPerLayer();
    // Check the whole selection before keeping any of it: a bad one leaves the view as it was.
    std::vector<std::vector<std::vector<int32_t>>> headPrefix(selection->kept.size());
    std::vector<std::vector<int32_t>> layerPrefix(selection->kept.size());
    for (size_t layer = 0; layer < selection->kept.size(); ++layer) {
        const auto& keptLayer = selection->kept[layer];
        if (static_cast<int64_t>(keptLayer.size()) != heads)
            throw Error("selection layer " + std::to_string(layer) + " has " +
                        std::to_string(keptLayer.size()) + " heads, expected " +
                        std::to_string(heads) +
                        (selection->gqa == GqaMode::KvHead ? " KV heads" : " query heads"));
        std::vector<int32_t> sum(static_cast<size_t>(length) + 1, 0);
        headPrefix[layer].resize(keptLayer.size());
        for (size_t head = 0; head < keptLayer.size(); ++head) {
            std::vector<int32_t> marks(static_cast<size_t>(length) + 1, 0);
            for (const int32_t p : keptLayer[head]) {
                if (p < 0 || p >= length)
                    throw Error("selection layer " + std::to_string(layer) + " head " +
                                std::to_string(head) + " keeps position " + std::to_string(p) +
                                ", outside the prompt of " + std::to_string(length) + " positions");
                marks[static_cast<size_t>(p) + 1] = 1;
            }
            for (size_t p = 1; p < marks.size(); ++p) {
                marks[p] += marks[p - 1];
                sum[p] += marks[p];
            }
            headPrefix[layer][head] = std::move(marks);
        }
        layerPrefix[layer] = std::move(sum);
    }
    selection_ = std::move(selection);
    ++generation_;
    label_ = label;
    scores_.clear();  // they were the previous selection's; setScores brings this one's
    headPrefix_ = std::move(headPrefix);
    layerPrefix_ = std::move(layerPrefix);
    setFocusedLayer(focusedLayer_);
    if (length != previousLength)
        resetView();
    else
        setVisibleRange(first_, visible_);
    requestRedraw();
}

void KeptPositionsView::setTokens(std::shared_ptr<const std::vector<std::string>> pieces) {
    tokens_ = std::move(pieces);
    if (tokens_)
        for (const std::string& piece : *tokens_) addGlyphs(piece);
    requestRedraw();
}

void KeptPositionsView::setScores(int layer,
                                  std::shared_ptr<const std::vector<std::vector<float>>> scores) {
    if (scores)
        scores_[layer] = std::move(scores);
    else
        scores_.erase(layer);
}

void KeptPositionsView::setOtherSelections(
    std::vector<std::pair<std::string, std::shared_ptr<const kvlens::Selection>>> others) {
    others_ = std::move(others);
}

QStringList KeptPositionsView::otherSelectionNames() const {
    QStringList names;
    for (const auto& [name, s] : others_) names << QString::fromStdString(name);
    return names;
}

void KeptPositionsView::setFocusedLayer(int layer) {
    const int layers = selection_ ? static_cast<int>(selection_->layers()) : 0;
    focusedLayer_ = layers > 0 ? std::clamp(layer, 0, layers - 1) : 0;
    requestRedraw();
}

void KeptPositionsView::setVisibleRange(double firstPosition, double positions) {
    const double length = static_cast<double>(std::max<int64_t>(1, promptLength()));
    visible_ = std::clamp(std::isfinite(positions) ? positions : length, 1.0, length);
    first_ = std::clamp(std::isfinite(firstPosition) ? firstPosition : 0.0, 0.0, length - visible_);
    requestRedraw();
}

void KeptPositionsView::resetView() {
    setVisibleRange(0.0, static_cast<double>(std::max<int64_t>(1, promptLength())));
}

void KeptPositionsView::zoomAt(double x, double factor) {
    const Layout l = layout();
    const double plotWidth = l.plotX1 - l.plotX0;
    const double anchor = positionAtX(l, x);
    // Zooming in stops at kMaxPxPerPosition, but never widens a view set narrower.
    const double narrowest = std::min(visible_, std::max(1.0, plotWidth / kMaxPxPerPosition));
    const double positions = std::max(visible_ * factor, narrowest);
    setVisibleRange(anchor - (x - l.plotX0) * positions / plotWidth, positions);
}

int64_t KeptPositionsView::promptLength() const {
    return selection_ ? selection_->promptLength : 0;
}

int KeptPositionsView::headsPerLayer() const {
    return selection_ ? static_cast<int>(selection_->headsPerLayer()) : 0;
}

int64_t KeptPositionsView::windowStart() const {
    if (!selection_) return 0;
    const auto& p = selection_->params;
    return p.keptEndStart(selection_->promptLength);
}

KeptPositionsView::Layout KeptPositionsView::layout() const {
    Layout l;
    const float w = static_cast<float>(width());
    const float h = static_cast<float>(height());
    l.layers = selection_ ? static_cast<int>(selection_->layers()) : 0;
    l.heads = headsPerLayer();
    l.plotX0 = kLeft;
    l.plotX1 = std::max(kLeft + 1.0f, w - kRight);
    l.overviewY0 = 4.0f + 2.0f * kLine;  // title line, then the overview's caption
    l.overviewRowH =
        l.layers > 0 ? std::clamp(std::floor(h * 0.3f / static_cast<float>(l.layers)), 2.0f, 12.0f)
                     : 0.0f;
    float overviewBottom = l.overviewY0 + static_cast<float>(l.layers) * l.overviewRowH;
    l.markBandY = overviewBottom + 2.0f;
    if (!marked_.empty()) overviewBottom += kMarkBandH + 2.0f;
    l.rangeBarY = overviewBottom + 2.0f;
    l.overviewAxisY = overviewBottom + 6.0f;
    l.mapCaptionY = l.overviewAxisY + kLine + 6.0f;
    l.mapY0 = l.mapCaptionY + kLine;
    const float below = 2.0f + kTokenRowH + kLine + 4.0f;  // token row, axis, margin
    const float available = h - l.mapY0 - below;
    l.mapRowH = l.heads > 0
                    ? std::clamp(std::floor(available / static_cast<float>(l.heads)), 1.0f, 56.0f)
                    : 0.0f;
    l.tokenRowY = l.mapY0 + static_cast<float>(l.heads) * l.mapRowH + 2.0f;
    l.axisY = l.tokenRowY + kTokenRowH;
    return l;
}

QRectF KeptPositionsView::overviewRowRect(int layer) const {
    const Layout l = layout();
    if (layer < 0 || layer >= l.layers) return {};
    return QRectF(l.plotX0, l.overviewY0 + static_cast<float>(layer) * l.overviewRowH,
                  l.plotX1 - l.plotX0, l.overviewRowH);
}

QPointF KeptPositionsView::overviewCellCenter(int layer, int64_t position) const {
    const QRectF row = overviewRowRect(layer);
    const double length = static_cast<double>(std::max<int64_t>(1, promptLength()));
    return QPointF(row.left() + (static_cast<double>(position) + 0.5) * row.width() / length,
                   row.top() + row.height() * 0.5);
}

QRectF KeptPositionsView::focusedMapRect() const {
    const Layout l = layout();
    return QRectF(l.plotX0, l.mapY0, l.plotX1 - l.plotX0, static_cast<float>(l.heads) * l.mapRowH);
}

QPointF KeptPositionsView::cellCenter(int head, int64_t position) const {
    const Layout l = layout();
    const double pxPerPosition = (l.plotX1 - l.plotX0) / visible_;
    return QPointF(l.plotX0 + (static_cast<double>(position) + 0.5 - first_) * pxPerPosition,
                   l.mapY0 + (static_cast<double>(head) + 0.5) * l.mapRowH);
}

QRectF KeptPositionsView::tokenRowRect() const {
    const Layout l = layout();
    return QRectF(l.plotX0, l.tokenRowY, l.plotX1 - l.plotX0, kTokenRowH);
}

double KeptPositionsView::positionAtX(const Layout& l, double x) const {
    return first_ + (x - l.plotX0) * visible_ / (l.plotX1 - l.plotX0);
}

int KeptPositionsView::overviewLayerAt(const Layout& l, QPointF p) const {
    if (l.layers == 0 || p.x() < l.plotX0 || p.x() >= l.plotX1 || p.y() < l.overviewY0) return -1;
    const int layer = static_cast<int>(std::floor((p.y() - l.overviewY0) / l.overviewRowH));
    return layer < l.layers ? layer : -1;
}

int64_t KeptPositionsView::overviewPositionAt(const Layout& l, double x) const {
    const int64_t length = promptLength();
    const double t = (x - l.plotX0) / (l.plotX1 - l.plotX0);
    return std::clamp<int64_t>(static_cast<int64_t>(std::floor(t * static_cast<double>(length))), 0,
                               std::max<int64_t>(0, length - 1));
}

int KeptPositionsView::focusedHeadAt(const Layout& l, QPointF p) const {
    if (l.heads == 0 || p.x() < l.plotX0 || p.x() >= l.plotX1 || p.y() < l.mapY0) return -1;
    const int head = static_cast<int>(std::floor((p.y() - l.mapY0) / l.mapRowH));
    return head < l.heads ? head : -1;
}

bool KeptPositionsView::inZoomArea(const Layout& l, QPointF p) const {
    return selection_ && p.x() >= l.plotX0 && p.x() < l.plotX1 && p.y() >= l.mapY0 &&
           p.y() < l.axisY + kLine;
}

bool KeptPositionsView::isKept(const kvlens::Selection& s, int64_t layer, int64_t head,
                               int64_t position) const {
    if (layer < 0 || layer >= s.layers() || head < 0 ||
        head >= static_cast<int64_t>(s.kept[layer].size()))
        return false;
    const auto& kept = s.kept[layer][head];
    return std::binary_search(kept.begin(), kept.end(), static_cast<int32_t>(position));
}

std::string KeptPositionsView::tokenText(int64_t position) const {
    if (tokens_ && position >= 0 && position < static_cast<int64_t>(tokens_->size()))
        return printable((*tokens_)[static_cast<size_t>(position)]);
    return "#" + std::to_string(position);
}

QString KeptPositionsView::headName(int head) const {
    const bool kv = selection_ && selection_->gqa == GqaMode::KvHead;
    return (kv ? QStringLiteral("KV") : QStringLiteral("H")) + QString::number(head);
}

QString KeptPositionsView::focusedLayerSummary() const {
    if (!selection_ || selection_->layers() == 0) return {};
    const int64_t length = selection_->promptLength;
    const auto& layer = selection_->kept[static_cast<size_t>(focusedLayer_)];
    const int64_t heads = std::max<int64_t>(1, static_cast<int64_t>(layer.size()));
    const double perHead = static_cast<double>(selection_->entries(focusedLayer_)) / heads;
    const bool even = std::all_of(layer.begin(), layer.end(),
                                  [&](const auto& h) { return h.size() == layer.front().size(); });
    const double percent = length > 0 ? 100.0 * perHead / static_cast<double>(length) : 0.0;
    QString summary = QStringLiteral("L%1: %2/%3 kept per head%4, %5%")
                          .arg(focusedLayer_)
                          .arg(even ? QString::number(static_cast<int64_t>(perHead))
                                    : QString::number(perHead, 'f', 1))
                          .arg(length)
                          .arg(even ? QString() : QStringLiteral(" (mean)"))
                          .arg(percent, 0, 'f', 1);
    if (const int64_t first = firstReached(focusedLayer_); first > 0)
        summary += QStringLiteral("; sliding window %1: reaches %2-%3")
                       .arg(windows_[static_cast<size_t>(focusedLayer_)])
                       .arg(first)
                       .arg(length - 1);
    return summary;
}

QString KeptPositionsView::hoverText(int head, int64_t position) const {
    if (!selection_ || head < 0 || head >= headsPerLayer() || position < 0 ||
        position >= promptLength() || selection_->layers() == 0)
        return {};
    const kvlens::Selection& s = *selection_;
    const int layer = focusedLayer_;
    QStringList lines;
    lines << QStringLiteral("position %1  '%2'")
                 .arg(position)
                 .arg(QString::fromStdString(tokenText(position)));
    if (std::binary_search(marked_.begin(), marked_.end(), position))
        lines << QStringLiteral("%1 token").arg(markName_.isEmpty() ? QStringLiteral("marked") : markName_);
    if (const QString outside = outsideWindowText(layer, position); !outside.isEmpty()) lines << outside;
    const bool kept = isKept(s, layer, head, position);
    lines << QStringLiteral("L%1 %2: %3")
                 .arg(layer)
                 .arg(headName(head))
                 .arg(kept ? (position >= windowStart()
                                  ? QStringLiteral("kept (%1)")
                                        .arg(QString::fromStdString(
                                            s.params.keptEndName(s.promptLength)))
                                  : QStringLiteral("kept"))
                           : QStringLiteral("dropped"));
    const auto scores = scores_.find(layer);
    if (scores != scores_.end()) {
        const auto& table = *scores->second;
        const float score = head < static_cast<int>(table.size()) &&
                                    position < static_cast<int64_t>(table[head].size())
                                ? table[head][static_cast<size_t>(position)]
                                : NAN;
        lines << (std::isnan(score)
                      ? QStringLiteral("score: none")
                      : QStringLiteral("score %1").arg(static_cast<double>(score), 0, 'g', 4));
    }
    // Other selections may index heads otherwise (KV vs query heads): compare through
    // the first query head that reads this head.
    const int64_t group = s.kvHeads > 0 ? s.queryHeads / s.kvHeads : 1;
    const int64_t queryHead = s.gqa == GqaMode::KvHead ? head * group : head;
    QStringList keptBy;
    if (kept) keptBy << (label_.isEmpty() ? QStringLiteral("this selection") : label_);
    for (const auto& [name, other] : others_) {
        if (!other || other->promptLength != s.promptLength || other->kvHeads <= 0 ||
            other->queryHeads < other->kvHeads || queryHead >= other->queryHeads)
            continue;
        if (isKept(*other, layer, other->headOf(queryHead), position))
            keptBy << QString::fromStdString(name);
    }
    lines << QStringLiteral("kept by: %1")
                 .arg(keptBy.isEmpty()
                          ? (others_.empty()
                                 ? QStringLiteral("none")
                                 : QStringLiteral("none of %1 methods").arg(others_.size() + 1))
                          : keptBy.join(QStringLiteral(", ")));
    return lines.join(QLatin1Char('\n'));
}

QString KeptPositionsView::overviewHoverText(int layer, int64_t position) const {
    if (!selection_ || layer < 0 || layer >= static_cast<int>(layerPrefix_.size()) ||
        position < 0 || position >= promptLength())
        return {};
    const auto& prefix = layerPrefix_[static_cast<size_t>(layer)];
    const int64_t keeping = prefix[position + 1] - prefix[position];
    const QString mark = std::binary_search(marked_.begin(), marked_.end(), position)
                             ? QStringLiteral("  (%1)").arg(markName_.isEmpty() ? QStringLiteral("marked") : markName_)
                             : QString();
    const QString outside = outsideWindowText(layer, position);
    return QStringLiteral("L%1, position %2  '%3'%7\nkept by %4/%5 heads (%6)%8\nclick: focus L%1")
        .arg(layer)
        .arg(position)
        .arg(QString::fromStdString(tokenText(position)))
        .arg(keeping)
        .arg(headsPerLayer())
        .arg(label_)
        .arg(mark)
        .arg(outside.isEmpty() ? QString() : QStringLiteral("\n") + outside);
}

// ---- drawing ----

void KeptPositionsView::drawFrame() {
    ImDrawList* list = ImGui::GetBackgroundDrawList();
    if (!selection_ || selection_->layers() == 0 || promptLength() == 0) {
        addText(list, kLeft, 4.0f, kDimText,
                "No selection to show: run a method to see which positions it keeps.");
        return;
    }
    const Layout l = layout();
    updateRaster(l);
    drawTitle(l);
    drawOverview(l);
    drawFocusedMap(l);
    drawTokenRow(l);
    drawWindows(l);
    drawMarks(l);
    drawPositionAxis(l.plotX0, l.plotX1, first_, visible_, l.axisY);
    drawHover(l);
}

void KeptPositionsView::drawTitle(const Layout& l) {
    ImDrawList* list = ImGui::GetBackgroundDrawList();
    const std::string label = toUtf8(label_);
    const std::string summary = toUtf8(focusedLayerSummary());
    float x = 8.0f;
    if (!label.empty()) {
        addText(list, x, 4.0f, kText, label);
        x += ImGui::CalcTextSize(label.c_str()).x + 2.0f * kCharWidth;
    }
    addText(list, x, 4.0f, kFocusText, summary);
    if (const std::string marks = toUtf8(markedSummary()); !marks.empty()) {
        x += ImGui::CalcTextSize(summary.c_str()).x + 2.0f * kCharWidth;
        addText(list, x, 4.0f, kMark, marks);
    }

    // Legend, right-aligned on the overview's caption line.
    struct Item {
        ImU32 color;
        const char* name;
    };
    std::vector<Item> items = {{toImU32(paletteColor(1)), "kept"},
                               {toImU32(paletteColor(0)), "dropped"}};
    if (windowStart() < promptLength()) {
        const bool tail = selection_->params.keptEndIsLagTail(promptLength());
        items.insert(items.begin() + 1, {toImU32(paletteColor(2)), tail ? "tail" : "window"});
    }
    bool windowed = false;
    for (int layer = 0; layer < l.layers; ++layer) windowed = windowed || firstReached(layer) > 0;
    if (windowed) items.push_back({toImU32(windowEdgeRgb()), "window edge"});
    const std::string markLegend = markName_.isEmpty() ? std::string("marked") : toUtf8(markName_);
    if (!marked_.empty()) items.push_back({kMark, markLegend.c_str()});
    float legendWidth = 0.0f;
    for (const auto& item : items) legendWidth += 14.0f + ImGui::CalcTextSize(item.name).x + 12.0f;
    float lx = l.plotX1 - legendWidth;
    const float y = 4.0f + kLine;
    for (const auto& item : items) {
        list->AddRectFilled(ImVec2(lx, y + 2.0f), ImVec2(lx + 10.0f, y + 12.0f), item.color);
        addText(list, lx + 14.0f, y, kText, item.name);
        lx += 14.0f + ImGui::CalcTextSize(item.name).x + 12.0f;
    }
    const std::string caption = "All layers: share of heads keeping each position (click a row)";
    ImDrawList* bg = list;
    bg->PushClipRect(ImVec2(8.0f, y), ImVec2(l.plotX1 - legendWidth - 8.0f, y + kLine), true);
    addText(bg, 8.0f, y, kDimText, caption);
    bg->PopClipRect();
}

void KeptPositionsView::drawOverview(const Layout& l) {
    ImDrawList* list = ImGui::GetBackgroundDrawList();
    const double length = static_cast<double>(promptLength());
    const float gap = l.overviewRowH >= 6.0f ? 1.0f : 0.0f;
    for (int layer = 0; layer < l.layers; ++layer) {
        const float y0 = l.overviewY0 + static_cast<float>(layer) * l.overviewRowH;
        drawRasterRow(layer, l.plotX0, l.plotX1, y0, y0 + l.overviewRowH - gap);
    }
    // Layer labels: as many as fit without overlapping, the focused one always.
    const int every = std::max(1, static_cast<int>(std::ceil(12.0f / l.overviewRowH)));
    for (int layer = 0; layer < l.layers; ++layer) {
        const bool focused = layer == focusedLayer_;
        if (!focused && (layer % every != 0 || std::abs(layer - focusedLayer_) < every)) continue;
        const std::string text = "L" + std::to_string(layer);
        const float y0 = l.overviewY0 + (static_cast<float>(layer) + 0.5f) * l.overviewRowH - 6.5f;
        addText(list, l.plotX0 - 8.0f - ImGui::CalcTextSize(text.c_str()).x, y0,
                focused ? kFocusText : kDimText, text);
    }
    if (l.layers > 0) {
        // The focused row: yellow bars on both sides, outside the cells (a frame on the
        // cells would hide their edge columns; yellow on the light grey would not show).
        const float y0 = l.overviewY0 + static_cast<float>(focusedLayer_) * l.overviewRowH;
        const float y1 = y0 + l.overviewRowH - gap;
        list->AddRectFilled(ImVec2(l.plotX0 - 5.0f, y0), ImVec2(l.plotX0 - 1.0f, y1), kFocusText);
        list->AddRectFilled(ImVec2(l.plotX1 + 1.0f, y0), ImVec2(l.plotX1 + 5.0f, y1), kFocusText);
    }
    // The focused map's visible range.
    const float w = l.plotX1 - l.plotX0;
    const float a = l.plotX0 + static_cast<float>(first_ / length) * w;
    const float b = l.plotX0 + static_cast<float>((first_ + visible_) / length) * w;
    list->AddRectFilled(ImVec2(a, l.rangeBarY), ImVec2(std::max(b, a + 2.0f), l.rangeBarY + 3.0f),
                        kText);
    drawPositionAxis(l.plotX0, l.plotX1, 0.0, length, l.overviewAxisY);
}

void KeptPositionsView::drawFocusedMap(const Layout& l) {
    ImDrawList* list = ImGui::GetBackgroundDrawList();
    const std::string caption =
        toUtf8(QStringLiteral("L%1 per %2 head, positions %3-%4   (wheel: zoom, drag: pan, "
                              "double-click/Home: whole prompt)")
                   .arg(focusedLayer_)
                   .arg(selection_->gqa == GqaMode::KvHead ? QStringLiteral("KV")
                                                           : QStringLiteral("query"))
                   .arg(static_cast<int64_t>(std::floor(first_)))
                   .arg(static_cast<int64_t>(std::ceil(first_ + visible_)) - 1));
    list->PushClipRect(ImVec2(8.0f, l.mapCaptionY), ImVec2(l.plotX1, l.mapCaptionY + kLine), true);
    addText(list, 8.0f, l.mapCaptionY, kDimText, caption);
    list->PopClipRect();

    const float gap = l.mapRowH >= 6.0f ? 1.0f : 0.0f;
    const int every = std::max(1, static_cast<int>(std::ceil(12.0f / l.mapRowH)));
    const double pxPerPosition = (l.plotX1 - l.plotX0) / visible_;
    for (int head = 0; head < l.heads; ++head) {
        const float y0 = l.mapY0 + static_cast<float>(head) * l.mapRowH;
        drawRasterRow(l.layers + head, l.plotX0, l.plotX1, y0, y0 + l.mapRowH - gap);
        if (head % every == 0) {
            const std::string text = toUtf8(headName(head));
            addText(list, l.plotX0 - 6.0f - ImGui::CalcTextSize(text.c_str()).x,
                    y0 + l.mapRowH * 0.5f - 6.5f, kDimText, text);
        }
    }
    if (pxPerPosition >= kSeparatorMinPx) {
        // Zoomed in to single cells: a faint line at each position's left edge.
        const int64_t begin = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(first_)));
        const int64_t end =
            std::min<int64_t>(promptLength(), static_cast<int64_t>(std::ceil(first_ + visible_)));
        const float y1 = l.mapY0 + static_cast<float>(l.heads) * l.mapRowH;
        for (int64_t p = begin; p < end; ++p) {
            // The pixel column where position p starts (the raster's rule: pixel centres).
            const float x = static_cast<float>(
                std::ceil(l.plotX0 + (static_cast<double>(p) - first_) * pxPerPosition - 0.5));
            list->AddRectFilled(ImVec2(x, l.mapY0), ImVec2(x + 1.0f, y1), IM_COL32(0, 0, 0, 50));
        }
    }
}

// ---- the raster: one texel row per overview layer and focused head ----

void KeptPositionsView::updateRaster(const Layout& l) {
    const int columns = static_cast<int>(l.plotX1 - l.plotX0);
    const int rows = l.layers + l.heads;
    const RasterKey key{generation_, columns, first_, visible_, focusedLayer_};
    if (texture_.id() != 0 && key == rasterKey_) return;
    if (columns <= 0 || rows <= 0) return;
    std::vector<ImU32> pixels(static_cast<size_t>(columns) * static_cast<size_t>(rows));
    const int64_t window = windowStart();
    const double length = static_cast<double>(promptLength());
    for (int layer = 0; layer < l.layers; ++layer)
        fillShareRow(&pixels[static_cast<size_t>(layer) * columns], columns,
                     layerPrefix_[static_cast<size_t>(layer)], l.heads, 0.0, length, window);
    const auto& prefixes = headPrefix_[static_cast<size_t>(focusedLayer_)];
    for (int head = 0; head < l.heads; ++head)
        fillShareRow(&pixels[static_cast<size_t>(l.layers + head) * columns], columns,
                     prefixes[static_cast<size_t>(head)], 1, first_, visible_, window);

    // Nearest: one texel per pixel column, each row sampled at its centre.
    texture_.upload(*this, columns, rows, pixels.data());
    rasterKey_ = key;
}

void KeptPositionsView::drawRasterRow(int row, float x0, float x1, float y0, float y1) {
    if (texture_.id() == 0 || texture_.height() == 0 || y1 <= y0) return;
    const float v = (static_cast<float>(row) + 0.5f) / static_cast<float>(texture_.height());
    ImGui::GetBackgroundDrawList()->AddImage(
        reinterpret_cast<ImTextureID>(static_cast<intptr_t>(texture_.id())), ImVec2(x0, y0),
        ImVec2(x1, y1), ImVec2(0.0f, v), ImVec2(1.0f, v));
}

void KeptPositionsView::drawTokenRow(const Layout& l) {
    const double pxPerPosition = (l.plotX1 - l.plotX0) / visible_;
    if (pxPerPosition < kTokenTextMinPx) return;
    ImDrawList* list = ImGui::GetBackgroundDrawList();
    const int64_t begin = std::max<int64_t>(0, static_cast<int64_t>(std::floor(first_)));
    const int64_t end =
        std::min<int64_t>(promptLength(), static_cast<int64_t>(std::ceil(first_ + visible_)));
    for (int64_t p = begin; p < end; ++p) {
        const float a =
            std::max(l.plotX0,
                     static_cast<float>(std::floor(l.plotX0 + (p - first_) * pxPerPosition + 0.5)));
        const float b = std::min(
            l.plotX1,
            static_cast<float>(std::floor(l.plotX0 + (p + 1 - first_) * pxPerPosition + 0.5)));
        if (b - a < 4.0f) continue;
        list->PushClipRect(ImVec2(a + 1.0f, l.tokenRowY),
                           ImVec2(b - 1.0f, l.tokenRowY + kTokenRowH), true);
        addText(list, a + 2.0f, l.tokenRowY + 1.0f, kText, tokenText(p));
        list->PopClipRect();
        list->AddLine(ImVec2(b - 0.5f, l.tokenRowY), ImVec2(b - 0.5f, l.tokenRowY + kTokenRowH),
                      IM_COL32(80, 80, 80, 255));
    }
}

void KeptPositionsView::drawPositionAxis(float x0, float x1, double first, double visible,
                                         float y) {
    ImDrawList* list = ImGui::GetBackgroundDrawList();
    const double pxPerPosition = (x1 - x0) / visible;
    const int maxTicks = std::max(2, static_cast<int>((x1 - x0) / 70.0f));
    const double lastPosition =
        std::min(first + visible, static_cast<double>(promptLength())) - 1.0;
    const auto ticks = viz::Ticks::linear(std::ceil(first),
                                          std::max(std::ceil(first), lastPosition), maxTicks, true);
    float previousEnd = -1e9f;
    for (const auto& tick : ticks) {
        const float x = static_cast<float>(x0 + (tick.value + 0.5 - first) * pxPerPosition);
        if (x < x0 || x > x1) continue;
        list->AddLine(ImVec2(x, y), ImVec2(x, y + 3.0f), kAxis);
        const float w = ImGui::CalcTextSize(tick.label.c_str()).x;
        const float tx = std::clamp(x - w * 0.5f, x0, x1 - w);
        if (tx < previousEnd + 6.0f) continue;
        addText(list, tx, y + 3.0f, kDimText, tick.label);
        previousEnd = tx + w;
    }
}

// The marked positions: ticks on the band under the overview (whole prompt, at least
// 2 px each), and a frame around each run of them over the focused map's head rows.
void KeptPositionsView::drawWindows(const Layout& l) {
    // Positions no decode step reaches on a local layer: shaded over, the window's edge marked.
    ImDrawList* list = ImGui::GetBackgroundDrawList();
    const ImU32 shade = IM_COL32(20, 20, 20, 170), edge = toImU32(windowEdgeRgb());
    const double length = static_cast<double>(promptLength());
    const float w = l.plotX1 - l.plotX0;
    const float gap = l.overviewRowH >= 6.0f ? 1.0f : 0.0f;
    for (int layer = 0; layer < l.layers; ++layer) {
        const int64_t first = firstReached(layer);
        if (first == 0) continue;
        const float y0 = l.overviewY0 + static_cast<float>(layer) * l.overviewRowH;
        const float x = l.plotX0 + static_cast<float>(static_cast<double>(first) / length) * w;
        list->AddRectFilled(ImVec2(l.plotX0, y0), ImVec2(x, y0 + l.overviewRowH - gap), shade);
        list->AddRectFilled(ImVec2(x - 1.0f, y0), ImVec2(x + 1.0f, y0 + l.overviewRowH - gap), edge);
    }
    const int64_t first = firstReached(focusedLayer_);
    if (first == 0 || first <= first_) return;
    const double pxPerPosition = w / visible_;
    const float y1 = l.mapY0 + static_cast<float>(l.heads) * l.mapRowH;
    const float x = std::min(l.plotX1, static_cast<float>(l.plotX0 + (static_cast<double>(first) - first_) * pxPerPosition));
    list->AddRectFilled(ImVec2(l.plotX0, l.mapY0), ImVec2(x, y1), shade);
    if (x < l.plotX1) list->AddRectFilled(ImVec2(x - 1.0f, l.mapY0 - 2.0f), ImVec2(x + 1.0f, y1 + 1.0f), edge);
    if (x - l.plotX0 > 200.0f) {
        const std::string text = "outside the sliding window";
        addText(list, l.plotX0 + 6.0f, l.mapY0 + 2.0f, kText, text);
    }
}

void KeptPositionsView::drawMarks(const Layout& l) {
    if (marked_.empty()) return;
    ImDrawList* list = ImGui::GetBackgroundDrawList();
    const int64_t length = promptLength();
    const double w = l.plotX1 - l.plotX0;
    const double mapPx = w / visible_;
    const float mapY1 = l.mapY0 + static_cast<float>(l.heads) * l.mapRowH;
    for (size_t i = 0; i < marked_.size();) {
        size_t j = i + 1;
        while (j < marked_.size() && marked_[j] == marked_[j - 1] + 1) ++j;
        const int64_t a = marked_[i], b = marked_[j - 1] + 1;  // the run [a, b)
        i = j;
        if (a >= length || b <= 0) continue;
        const float x0 = l.plotX0 + static_cast<float>(a * w / length);
        const float x1 = std::max(x0 + 2.0f, l.plotX0 + static_cast<float>(b * w / length));
        list->AddRectFilled(ImVec2(x0, l.markBandY), ImVec2(x1, l.markBandY + kMarkBandH), kMark);
        if (b <= first_ || a >= first_ + visible_) continue;
        const float m0 = std::max(l.plotX0 - 1.0f, static_cast<float>(l.plotX0 + (a - first_) * mapPx));
        const float m1 = std::min(l.plotX1 + 1.0f,
                                  std::max(m0 + 2.0f, static_cast<float>(l.plotX0 + (b - first_) * mapPx)));
        list->AddRect(ImVec2(m0 - 1.0f, l.mapY0 - 2.0f), ImVec2(m1 + 1.0f, mapY1 + 1.0f), kMark, 0.0f, 0, 2.0f);
    }
}

void KeptPositionsView::drawHover(const Layout& l) {
    const ImVec2 mouse = ImGui::GetIO().MousePos;
    if (!ImGui::IsMousePosValid(&mouse) || dragging_) return;
    const QPointF p(mouse.x, mouse.y);
    QString text;
    const int layer = overviewLayerAt(l, p);
    if (layer >= 0) {
        text = overviewHoverText(layer, overviewPositionAt(l, p.x()));
    } else if (const int head = focusedHeadAt(l, p); head >= 0) {
        const double at = positionAtX(l, p.x());
        const int64_t position =
            std::clamp<int64_t>(static_cast<int64_t>(std::floor(at)), 0, promptLength() - 1);
        text = hoverText(head, position);
        const double perPixel = visible_ / (l.plotX1 - l.plotX0);
        if (perPixel > 1.0) {
            // One pixel stands for several positions: say how many of them are kept.
            const int64_t a = position;
            const int64_t b = std::clamp<int64_t>(static_cast<int64_t>(std::floor(at + perPixel)),
                                                  a + 1, promptLength());
            const auto& prefix =
                headPrefix_[static_cast<size_t>(focusedLayer_)][static_cast<size_t>(head)];
            const int64_t kept = prefix[b] - prefix[a];
            text += QStringLiteral("\nthis pixel: positions %1-%2, %3 of %4 kept")
                        .arg(a)
                        .arg(b - 1)
                        .arg(kept)
                        .arg(b - a);
        }
        const float y0 = l.mapY0 + static_cast<float>(head) * l.mapRowH;
        ImGui::GetBackgroundDrawList()->AddRect(ImVec2(l.plotX0 - 1.0f, y0 - 1.0f),
                                                ImVec2(l.plotX1 + 1.0f, y0 + l.mapRowH),
                                                IM_COL32(255, 255, 255, 120));
    }
    if (text.isEmpty()) return;
    const std::string utf8 = toUtf8(text);
    ImGui::BeginTooltip();
    ImGui::TextUnformatted(utf8.c_str(), utf8.c_str() + utf8.size());
    ImGui::EndTooltip();
}

// ---- input ----

void KeptPositionsView::mousePressEvent(QMouseEvent* event) {
    const Layout l = layout();
    const QPointF p = event->position();
    if (event->button() == Qt::LeftButton) {
        const int layer = overviewLayerAt(l, p);
        if (layer >= 0) {
            setFocusedLayer(layer);
            emit layerClicked(layer);
        } else if (inZoomArea(l, p)) {
            dragging_ = true;
            dragLastX_ = p.x();
        }
    }
    ImGuiCanvas::mousePressEvent(event);
}

void KeptPositionsView::mouseMoveEvent(QMouseEvent* event) {
    if (dragging_ && (event->buttons() & Qt::LeftButton)) {
        const Layout l = layout();
        const double dx = event->position().x() - dragLastX_;
        dragLastX_ = event->position().x();
        setVisibleRange(first_ - dx * visible_ / (l.plotX1 - l.plotX0), visible_);
    }
    ImGuiCanvas::mouseMoveEvent(event);
}

void KeptPositionsView::mouseReleaseEvent(QMouseEvent* event) {
    if (event->button() == Qt::LeftButton) dragging_ = false;
    ImGuiCanvas::mouseReleaseEvent(event);
}

void KeptPositionsView::mouseDoubleClickEvent(QMouseEvent* event) {
    if (event->button() == Qt::LeftButton && inZoomArea(layout(), event->position())) resetView();
    ImGuiCanvas::mouseDoubleClickEvent(event);
}

void KeptPositionsView::wheelEvent(QWheelEvent* event) {
    const Layout l = layout();
    const int delta = event->angleDelta().y();
    if (delta != 0 && inZoomArea(l, event->position()))
        zoomAt(event->position().x(), std::pow(0.8, static_cast<double>(delta) / 120.0));
    ImGuiCanvas::wheelEvent(event);
}

void KeptPositionsView::keyPressEvent(QKeyEvent* event) {
    if (event->key() == Qt::Key_Home) resetView();
    ImGuiCanvas::keyPressEvent(event);
}

}  // namespace kvlens::ui
