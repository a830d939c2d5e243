#include "ui/CacheSizeChart.h"

#include <QPainter>
#include <QPainterPath>
#include <algorithm>

namespace kvlens::ui {

CacheSizeChart::CacheSizeChart(QWidget* parent) : QWidget(parent) {
    setObjectName("cacheSizeChart");
    setMinimumHeight(90);
}

void CacheSizeChart::setEntries(std::vector<int64_t> entries, int64_t budget, int64_t every) {
    entries_ = std::move(entries);
    budget_ = budget;
    every_ = every;
    update();
}

QString CacheSizeChart::summary() const {
    if (entries_.empty()) return QString();
    const auto [lo, hi] = std::minmax_element(entries_.begin(), entries_.end());
    return QString("Cache (per head): %1-%2 entries over %3 steps, cut back to %4 every %5")
        .arg(*lo)
        .arg(*hi)
        .arg(entries_.size())
        .arg(budget_)
        .arg(every_);
}

void CacheSizeChart::paintEvent(QPaintEvent*) {
    QPainter p(this);
    p.fillRect(rect(), palette().base());
    if (entries_.empty()) return;
    p.setRenderHint(QPainter::Antialiasing);
    const QFontMetrics fm(font());
    const int textH = fm.height();
    p.setPen(palette().text().color());
    p.drawText(QRect(4, 2, width() - 8, textH), Qt::AlignLeft | Qt::AlignVCenter, summary());
    const int64_t top = std::max<int64_t>(*std::max_element(entries_.begin(), entries_.end()), budget_);
    const int64_t bottom = std::min<int64_t>(*std::min_element(entries_.begin(), entries_.end()), budget_);
    const QString topLabel = QString::number(top), bottomLabel = QString::number(bottom);
    const int left = 8 + std::max(fm.horizontalAdvance(topLabel), fm.horizontalAdvance(bottomLabel));
    const QRectF plot(left, textH + 8, std::max(10, width() - left - 8), std::max(10, height() - textH - 14));
    const double span = double(std::max<int64_t>(1, top - bottom));
    auto y = [&](int64_t v) { return plot.bottom() - (double(v - bottom) / span) * plot.height(); };
    auto x = [&](size_t i) {
        return plot.left() + (entries_.size() > 1 ? double(i) / double(entries_.size() - 1) : 0.5) * plot.width();
    };
    p.drawText(QRectF(0, y(top) - textH / 2.0, left - 4, textH), Qt::AlignRight | Qt::AlignVCenter, topLabel);
    p.drawText(QRectF(0, y(bottom) - textH / 2.0, left - 4, textH), Qt::AlignRight | Qt::AlignVCenter, bottomLabel);
    p.setPen(QPen(QColor(0xd5, 0x5e, 0x00), 1.0, Qt::DashLine));  // the budget
    p.drawLine(QPointF(plot.left(), y(budget_)), QPointF(plot.right(), y(budget_)));
    QPainterPath line;
    for (size_t i = 0; i < entries_.size(); ++i) {
        if (i == 0) {
            line.moveTo(x(i), y(entries_[i]));
        } else {
            line.lineTo(x(i), y(entries_[i]));
        }
    }
    p.setPen(QPen(QColor(0x00, 0x72, 0xb2), 1.5));
    p.drawPath(line);
}

}  // namespace kvlens::ui
