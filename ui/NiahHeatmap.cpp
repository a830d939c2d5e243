#include "ui/NiahHeatmap.h"

#include <QMouseEvent>
#include <QPainter>
#include <cmath>
#include <stdexcept>

#include "viz/Colormap.h"

namespace kvlens::ui {
namespace {

constexpr int kLeft = 64;     // depth labels ("100%") and the axis name
constexpr int kTop = 22;      // length labels
constexpr int kBottom = 8;
constexpr int kBarWidth = 14;  // the colour bar at the right, with its labels
constexpr int kBarGap = 12;
constexpr int kBarLabels = 58;

}  // namespace

NiahHeatmap::NiahHeatmap(QWidget* parent) : QWidget(parent) {
    setMouseTracking(false);
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Expanding);
}

void NiahHeatmap::setData(QStringList rowLabels, QStringList columnLabels, std::vector<double> values,
                          const QString& valueName) {
    if (values.size() != static_cast<size_t>(rowLabels.size()) * static_cast<size_t>(columnLabels.size()))
        throw std::invalid_argument("NiahHeatmap: " + std::to_string(values.size()) + " values for " +
                                    std::to_string(rowLabels.size()) + " x " + std::to_string(columnLabels.size()) +
                                    " cells");
    rowLabels_ = std::move(rowLabels);
    columnLabels_ = std::move(columnLabels);
    values_ = std::move(values);
    valueName_ = valueName;
    selected_ = {-1, -1};
    update();
}

void NiahHeatmap::clear() { setData({}, {}, {}, {}); }

double NiahHeatmap::value(int row, int column) const {
    if (row < 0 || column < 0 || row >= rows() || column >= columns()) return NAN;
    return values_[static_cast<size_t>(row) * static_cast<size_t>(columns()) + static_cast<size_t>(column)];
}

void NiahHeatmap::setSelectedCell(int row, int column) {
    selected_ = row >= 0 && column >= 0 && row < rows() && column < columns() ? std::make_pair(row, column)
                                                                               : std::make_pair(-1, -1);
    update();
}

QColor NiahHeatmap::colorOf(double v) {
    const viz::Rgb c = std::isnan(v) ? viz::Colormap::nanColor() : viz::Colormap::viridis().map(v);
    return QColor(c.r, c.g, c.b);
}

QRect NiahHeatmap::gridRect() const {
    const int right = kBarGap + kBarWidth + kBarLabels;
    return QRect(kLeft, kTop, std::max(1, width() - kLeft - right), std::max(1, height() - kTop - kBottom));
}

QRect NiahHeatmap::cellRect(int row, int column) const {
    if (row < 0 || column < 0 || row >= rows() || column >= columns()) return {};
    const QRect g = gridRect();
    const int x0 = g.left() + g.width() * column / columns(), x1 = g.left() + g.width() * (column + 1) / columns();
    const int y0 = g.top() + g.height() * row / rows(), y1 = g.top() + g.height() * (row + 1) / rows();
    return QRect(x0, y0, x1 - x0, y1 - y0);
}

std::pair<int, int> NiahHeatmap::cellAt(QPoint p) const {
    if (rows() == 0 || columns() == 0) return {-1, -1};
    const QRect g = gridRect();
    if (!g.contains(p)) return {-1, -1};
    const int column = std::min(columns() - 1, (p.x() - g.left()) * columns() / g.width());
    const int row = std::min(rows() - 1, (p.y() - g.top()) * rows() / g.height());
    return {row, column};
}

QSize NiahHeatmap::sizeHint() const {
    return QSize(kLeft + 90 * std::max(1, columns()) + kBarGap + kBarWidth + kBarLabels,
                 kTop + 22 * std::max(1, rows()) + kBottom);
}

QSize NiahHeatmap::minimumSizeHint() const { return QSize(240, 140); }

void NiahHeatmap::paintEvent(QPaintEvent*) {
    QPainter p(this);
    p.fillRect(rect(), palette().window());
    if (rows() == 0 || columns() == 0) {
        p.setPen(palette().color(QPalette::PlaceholderText));
        p.drawText(rect(), Qt::AlignCenter | Qt::TextWordWrap,
                   "No needle runs to show: run kvlens niah ... --save, then open its store.");
        return;
    }
    const QColor text = palette().color(QPalette::WindowText);
    QFont small = font();
    small.setPointSizeF(std::max(6.0, font().pointSizeF() * 0.9));
    p.setFont(small);
    const QRect g = gridRect();
    for (int r = 0; r < rows(); ++r) {
        for (int c = 0; c < columns(); ++c) {
            const QRect cell = cellRect(r, c).adjusted(0, 0, -1, -1);
            const double v = value(r, c);
            const QColor fill = colorOf(v);
            p.fillRect(cell, fill);
            // Dark text on the light end of viridis, light text on the dark end.
            p.setPen(fill.lightnessF() > 0.55 ? QColor(20, 20, 20) : QColor(245, 245, 245));
            if (cell.height() >= 11)
                p.drawText(cell, Qt::AlignCenter,
                           std::isnan(v) ? QString("-") : QString::number(100.0 * v, 'f', 0) + "%");
        }
        p.setPen(text);
        const QRect row = cellRect(r, 0);
        p.drawText(QRect(0, row.top(), kLeft - 6, row.height()), Qt::AlignRight | Qt::AlignVCenter, rowLabels_[r]);
    }
    for (int c = 0; c < columns(); ++c) {
        const QRect col = cellRect(0, c);
        p.drawText(QRect(col.left(), 2, col.width(), kTop - 4), Qt::AlignCenter, columnLabels_[c]);
    }
    p.drawText(QRect(2, 2, kLeft - 6, kTop - 4), Qt::AlignLeft | Qt::AlignVCenter, "depth");
    if (selected_.first >= 0) {
        QPen frame(QColor(255, 80, 220), 3);
        p.setPen(frame);
        p.setBrush(Qt::NoBrush);
        p.drawRect(cellRect(selected_.first, selected_.second).adjusted(1, 1, -2, -2));
    }
    // The colour bar: 0% at the bottom, 100% at the top.
    const QRect bar(g.right() + kBarGap, g.top(), kBarWidth, g.height());
    for (int y = 0; y < bar.height(); ++y) {
        const double t = 1.0 - (y + 0.5) / bar.height();
        p.fillRect(QRect(bar.left(), bar.top() + y, bar.width(), 1), colorOf(t));
    }
    p.setPen(text);
    const int lx = bar.right() + 4;
    p.drawText(QRect(lx, bar.top() - 2, kBarLabels, 14), Qt::AlignLeft | Qt::AlignTop, "100%");
    p.drawText(QRect(lx, bar.bottom() - 12, kBarLabels, 14), Qt::AlignLeft | Qt::AlignBottom, "0%");
    p.save();
    p.translate(lx + 44, bar.center().y());
    p.rotate(-90);
    p.drawText(QRect(-bar.height() / 2, -8, bar.height(), 16), Qt::AlignCenter, valueName_);
    p.restore();
}

void NiahHeatmap::mousePressEvent(QMouseEvent* event) {
    if (event->button() != Qt::LeftButton) return;
    const auto [row, column] = cellAt(event->position().toPoint());
    if (row < 0 || std::isnan(value(row, column))) return;
    setSelectedCell(row, column);
    emit cellClicked(row, column);
}

}  // namespace kvlens::ui
