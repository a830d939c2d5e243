// The A / B / delta strips of one layer, drawn with QPainter from a QImage per strip.
#include "ui/KeptDeltaStrips.h"

#include <QFontMetrics>
#include <QImage>
#include <QPainter>
#include <algorithm>
#include <array>

#include "viz/CategoricalPalette.h"
#include "viz/Ticks.h"

namespace kvlens::ui {

namespace {

constexpr int kMargin = 8;
constexpr int kGap = 8;
constexpr int kTick = 4;
constexpr int kMaxRowHeight = 16;
constexpr int kSwatch = 12;

QColor fromRgb(viz::Rgb c) { return QColor(c.r, c.g, c.b); }

// Whether `strip` shows category c at all (A's strip does not show B only).
bool shows(KeptDeltaStrips::Strip strip, uint8_t c) {
    using S = KeptDeltaStrips;
    if (c == S::Neither) return false;
    if (strip == S::Strip::A) return c == S::Both || c == S::AOnly;
    if (strip == S::Strip::B) return c == S::Both || c == S::BOnly;
    return true;
}

}  // namespace

KeptDeltaStrips::KeptDeltaStrips(QWidget* parent) : QWidget(parent) {
    // Grows only to its sizeHint's row height cap; the comparison puts spare room below.
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Preferred);
}

QColor KeptDeltaStrips::color(Category category) {
    const auto& okabeIto = viz::CategoricalPalette::okabeIto();
    switch (category) {
        case Both:
            return QColor(0x5a, 0x6e, 0x8c);  // grey-blue: darker than either single colour
        case AOnly:
            return fromRgb(okabeIto.color(4));  // orange
        case BOnly:
            return fromRgb(okabeIto.color(5));  // sky blue
        case Neither:
            break;
    }
    return QColor(0xec, 0xec, 0xec);
}

QString KeptDeltaStrips::name(Category category) {
    switch (category) {
        case Both:
            return "kept by both";
        case AOnly:
            return "A only";
        case BOnly:
            return "B only";
        case Neither:
            break;
    }
    return "neither";
}

void KeptDeltaStrips::setLayer(const Selection& a, const Selection& b, int64_t layer) {
    const bool sameHeads = a.gqa == b.gqa;
    const int64_t rows = sameHeads ? a.headsPerLayer() : a.queryHeads;
    rowUnit_ = sameHeads && a.gqa == GqaMode::KvHead ? "KV head" : "query head";
    positions_ = a.promptLength;
    categories_.assign(size_t(rows), std::vector<uint8_t>(size_t(positions_), Neither));
    for (int64_t r = 0; r < rows; ++r) {
        const auto& keptA = a.kept[size_t(layer)][size_t(sameHeads ? r : a.headOf(r))];
        const auto& keptB = b.kept[size_t(layer)][size_t(sameHeads ? r : b.headOf(r))];
        auto& row = categories_[size_t(r)];
        // Positions outside the prompt (a damaged store) are skipped rather than drawn.
        for (int32_t p : keptA) {
            if (p >= 0 && p < positions_) row[size_t(p)] = AOnly;
        }
        for (int32_t p : keptB) {
            if (p >= 0 && p < positions_) row[size_t(p)] = row[size_t(p)] == AOnly ? Both : BOnly;
        }
    }
    updateGeometry();
    update();
}

void KeptDeltaStrips::setCaptions(const QString& a, const QString& b) {
    captionA_ = a;
    captionB_ = b;
    update();
}

void KeptDeltaStrips::clear() {
    categories_.clear();
    positions_ = 0;
    update();
}

KeptDeltaStrips::Category KeptDeltaStrips::category(int row, int64_t position) const {
    return Category(categories_.at(size_t(row)).at(size_t(position)));
}

std::pair<int64_t, int64_t> KeptDeltaStrips::span(int x, int width, int64_t positions) {
    const int64_t first = int64_t(x) * positions / width;
    const int64_t end = int64_t(x + 1) * positions / width;
    return {first, std::max(end, first + 1)};
}

KeptDeltaStrips::Category KeptDeltaStrips::columnCategory(const std::vector<uint8_t>& cats,
                                                          int64_t first, int64_t end, Strip strip) {
    std::array<int64_t, 4> count{};
    for (int64_t p = first; p < end && p < int64_t(cats.size()); ++p) {
        if (shows(strip, cats[size_t(p)])) ++count[cats[size_t(p)]];
    }
    Category best = Neither;
    for (Category c : {AOnly, BOnly, Both}) {  // tie order: the first listed wins
        if (count[c] > 0 && (best == Neither || count[c] > count[best])) best = c;
    }
    return best;
}

int KeptDeltaStrips::captionHeight() const { return fontMetrics().height() + 3; }

int KeptDeltaStrips::chromeHeight() const {
    const int line = fontMetrics().height();
    return kMargin + 3 * captionHeight() + 2 * kGap + (kTick + line + 2) + (line + 8) + kMargin;
}

int KeptDeltaStrips::rowHeight() const {
    if (categories_.empty()) return 1;
    const int available = height() - chromeHeight();
    return std::clamp(available / (3 * rows()), 1, kMaxRowHeight);
}

QRect KeptDeltaStrips::stripRect(Strip strip) const {
    const int index = int(strip);
    const int stripHeight = rowHeight() * std::max(rows(), 1);
    const int top = kMargin + (index + 1) * captionHeight() + index * (stripHeight + kGap);
    return QRect(kMargin, top, std::max(width() - 2 * kMargin, 1), stripHeight);
}

QSize KeptDeltaStrips::sizeHint() const {
    // About 120 px per strip: a few heads get thick bands, many heads thin ones.
    const int shown = std::max(rows(), 4);
    return QSize(640, chromeHeight() + 3 * shown * std::clamp(120 / shown, 3, kMaxRowHeight));
}

QSize KeptDeltaStrips::minimumSizeHint() const {
    return QSize(240, chromeHeight() + 3 * std::max(rows(), 1));
}

void KeptDeltaStrips::paintEvent(QPaintEvent*) {
    QPainter painter(this);
    painter.fillRect(rect(), palette().window());
    if (categories_.empty() || positions_ <= 0) return;
    const QFontMetrics fm = fontMetrics();
    const QString rowsText =
        rows() == 1 ? QString("one row (%1 0)").arg(rowUnit_)
                    : QString("rows %1s 0\u2013%2 (top to bottom)").arg(rowUnit_).arg(rows() - 1);
    const QString captions[3] = {captionA_, captionB_,
                                 "A vs B: " + rowsText + ", columns prompt positions"};
    for (Strip strip : {Strip::A, Strip::B, Strip::Delta}) {
        const QRect r = stripRect(strip);
        painter.setPen(palette().color(QPalette::WindowText));
        painter.drawText(QRect(r.left(), r.top() - captionHeight(), r.width(), captionHeight()),
                         Qt::AlignLeft | Qt::AlignVCenter,
                         fm.elidedText(captions[int(strip)], Qt::ElideRight, r.width()));
        QImage image(r.width(), rows(), QImage::Format_RGB32);
        for (int row = 0; row < rows(); ++row) {
            auto* line = reinterpret_cast<QRgb*>(image.scanLine(row));
            for (int x = 0; x < r.width(); ++x) {
                const auto [first, end] = span(x, r.width(), positions_);
                line[x] = color(columnCategory(categories_[size_t(row)], first, end, strip)).rgb();
            }
        }
        // Nearest-neighbour scaling (no SmoothPixmapTransform): each row a solid band.
        painter.drawImage(r, image);
        // Thick bands get a hairline between heads, so that rows read apart.
        if (rowHeight() >= 6) {
            painter.setPen(palette().color(QPalette::Window));
            for (int row = 1; row < rows(); ++row) {
                const int y = r.top() + row * rowHeight() - 1;
                painter.drawLine(r.left(), y, r.right(), y);
            }
        }
    }

    // Position axis under the delta strip.
    const QRect delta = stripRect(Strip::Delta);
    painter.setPen(palette().color(QPalette::WindowText));
    const int maxTicks = std::max(2, delta.width() / (fm.horizontalAdvance("00000") + 12));
    int lastRight = -1000;
    for (const viz::Tick& tick : viz::Ticks::linear(0, double(positions_ - 1), maxTicks, true)) {
        const int x =
            delta.left() + int((tick.value + 0.5) * double(delta.width()) / double(positions_));
        painter.drawLine(x, delta.bottom() + 1, x, delta.bottom() + kTick);
        const QString label = QString::fromStdString(tick.label);
        const int w = fm.horizontalAdvance(label);
        const int left = std::clamp(x - w / 2, delta.left(), delta.right() - w);
        if (left <= lastRight + 6) continue;
        painter.drawText(QPoint(left, delta.bottom() + kTick + fm.ascent() + 1), label);
        lastRight = left + w;
    }

    // Legend: the four categories, shared by all three strips.
    int x = delta.left();
    const int y = delta.bottom() + kTick + fm.height() + 6;
    for (Category c : {Both, AOnly, BOnly, Neither}) {
        painter.fillRect(QRect(x, y + (fm.height() - kSwatch) / 2, kSwatch, kSwatch), color(c));
        painter.setPen(palette().color(QPalette::Mid));
        painter.drawRect(QRect(x, y + (fm.height() - kSwatch) / 2, kSwatch - 1, kSwatch - 1));
        painter.setPen(palette().color(QPalette::WindowText));
        painter.drawText(QPoint(x + kSwatch + 4, y + fm.ascent()), name(c));
        x += kSwatch + 4 + fm.horizontalAdvance(name(c)) + 16;
    }
}

}  // namespace kvlens::ui
