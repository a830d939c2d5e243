// Grouped per-layer bars of full and compressed KV bytes, drawn with QPainter.
#include "ui/MemoryChart.h"

#include <QFontMetrics>
#include <QPainter>
#include <algorithm>
#include <cmath>

#include "viz/Ticks.h"

namespace kvlens::ui {

namespace {

constexpr int kMargin = 8;
constexpr int kTick = 4;
constexpr int kSwatch = 12;
constexpr int kMaxTicks = 5;

}  // namespace

MemoryChart::MemoryChart(QWidget* parent) : QWidget(parent) {
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Expanding);
    setMessage("No run yet");
}

QColor MemoryChart::fullColor() { return QColor(0xa8, 0xa8, 0xa8); }
QColor MemoryChart::compressedColor() { return QColor(0x00, 0x72, 0xb2); }  // Okabe-Ito blue

void MemoryChart::setBytes(std::vector<int64_t> full, std::vector<int64_t> compressed) {
    if (full.size() != compressed.size()) {
        setMessage(QString("No per-layer bars: %1 layers of full-cache bytes but %2 compressed")
                       .arg(full.size())
                       .arg(compressed.size()));
        return;
    }
    if (full.empty()) {
        setMessage("No per-layer bytes recorded");
        return;
    }
    full_ = std::move(full);
    compressed_ = std::move(compressed);
    message_.clear();
    int64_t largest = 0;
    for (size_t l = 0; l < full_.size(); ++l)
        largest = std::max({largest, full_[l], compressed_[l]});
    step_ = viz::Ticks::niceStep(0.0, std::max(double(largest), 1.0), kMaxTicks);
    axisMax_ = std::max(1.0, std::ceil(double(largest) / step_)) * step_;
    update();
}

void MemoryChart::setMessage(const QString& why) {
    full_.clear();
    compressed_.clear();
    message_ = why;
    axisMax_ = 1.0;
    step_ = 1.0;
    update();
}

QString MemoryChart::tickLabel(double bytes, double step, double top) {
    if (bytes == 0.0) return "0";
    double unit = 1.0;
    QString name = "B";
    if (top >= 1e9) {
        unit = 1e9, name = "GB";
    } else if (top >= 1e6) {
        unit = 1e6, name = "MB";
    } else if (top >= 1e3) {
        unit = 1e3, name = "KB";
    }
    return QString::fromStdString(viz::Ticks::format(bytes / unit, step / unit)) + " " + name;
}

int MemoryChart::leftMargin() const {
    const QFontMetrics fm = fontMetrics();
    int widest = 0;
    const long ticks = std::lround(axisMax_ / step_);
    for (long i = 0; i <= ticks; ++i)
        widest =
            std::max(widest, fm.horizontalAdvance(tickLabel(double(i) * step_, step_, axisMax_)));
    return kMargin + widest + kTick + 4;
}

QRect MemoryChart::plotRect() const {
    const QFontMetrics fm = fontMetrics();
    const int top = kMargin + fm.height() + 8;                        // the legend
    const int bottom = height() - kMargin - fm.height() * 2 - kTick;  // layer labels, axis title
    const int left = leftMargin();
    return QRect(left, top, std::max(width() - left - kMargin, 1), std::max(bottom - top, 1));
}

QRectF MemoryChart::barRect(int layer, bool compressed) const {
    const QRect plot = plotRect();
    const double group = double(plot.width()) / double(std::max(layers(), 1));
    const double barWidth = std::max(1.0, group * 0.4);
    const double left = plot.left() + group * layer + group * 0.1 + (compressed ? barWidth : 0.0);
    const int64_t bytes = (compressed ? compressed_ : full_).at(size_t(layer));
    const double h = double(bytes) / axisMax_ * double(plot.height());
    return QRectF(left, plot.bottom() + 1 - h, barWidth, h);
}

void MemoryChart::paintEvent(QPaintEvent*) {
    QPainter painter(this);
    painter.fillRect(rect(), palette().base());
    const QColor text = palette().color(QPalette::Text);
    const QFontMetrics fm = fontMetrics();
    painter.setPen(text);
    if (!message_.isEmpty()) {
        painter.drawText(rect().adjusted(kMargin, kMargin, -kMargin, -kMargin),
                         Qt::AlignCenter | Qt::TextWordWrap, message_);
        return;
    }
    const QRect plot = plotRect();

    // Horizontal grid lines and byte ticks.
    const long ticks = std::lround(axisMax_ / step_);
    for (long i = 0; i <= ticks; ++i) {
        const double v = double(i) * step_;
        const int y = plot.bottom() - int(std::lround(v / axisMax_ * plot.height()));
        painter.setPen(v == 0.0 ? text : palette().color(QPalette::Midlight));
        painter.drawLine(plot.left(), y, plot.right(), y);
        painter.setPen(text);
        painter.drawLine(plot.left() - kTick, y, plot.left() - 1, y);
        const QString label = tickLabel(v, step_, axisMax_);
        painter.drawText(
            QRect(kMargin, y - fm.height() / 2, plot.left() - kTick - 4 - kMargin, fm.height()),
            Qt::AlignRight | Qt::AlignVCenter, label);
    }

    // Bars; no antialiasing, so that each edge falls on whole pixels.
    for (int l = 0; l < layers(); ++l) {
        painter.fillRect(barRect(l, false), fullColor());
        painter.fillRect(barRect(l, true), compressedColor());
    }

    // Layer labels, thinned to fit.
    const double group = double(plot.width()) / double(layers());
    const int labelWidth = fm.horizontalAdvance(QString::number(layers() - 1)) + 8;
    const int every = std::max(1, int(std::ceil(labelWidth / group)));
    for (int l = 0; l < layers(); l += every) {
        const int x = plot.left() + int(group * (l + 0.5));
        painter.drawText(QRect(x - labelWidth, plot.bottom() + kTick, 2 * labelWidth, fm.height()),
                         Qt::AlignHCenter | Qt::AlignTop, QString::number(l));
    }
    painter.drawText(
        QRect(plot.left(), plot.bottom() + kTick + fm.height(), plot.width(), fm.height()),
        Qt::AlignHCenter | Qt::AlignTop, "layer");

    // Legend.
    int x = plot.left();
    const int y = kMargin;
    for (const auto& [color, name] :
         {std::pair<QColor, QString>{fullColor(), "full cache"},
          std::pair<QColor, QString>{compressedColor(), "compressed"}}) {
        painter.fillRect(QRect(x, y + (fm.height() - kSwatch) / 2, kSwatch, kSwatch), color);
        painter.drawText(QPoint(x + kSwatch + 4, y + fm.ascent()), name);
        x += kSwatch + 4 + fm.horizontalAdvance(name) + 16;
    }
}

}  // namespace kvlens::ui
