// Per-layer KV bytes as grouped bars, full cache next to compressed, on one byte axis
// (ticks in B/KB/MB/GB) that starts at zero, so bar heights compare directly.
#pragma once

#include <QColor>
#include <QRect>
#include <QRectF>
#include <QString>
#include <QWidget>
#include <cstdint>
#include <vector>

namespace kvlens::ui {

class MemoryChart : public QWidget {
    Q_OBJECT

public:
    explicit MemoryChart(QWidget* parent = nullptr);

    // Equal lengths, one entry per layer; otherwise the chart says why it shows nothing.
    void setBytes(std::vector<int64_t> full, std::vector<int64_t> compressed);
    // No bars: `why` in the middle.
    void setMessage(const QString& why);

    QString message() const { return message_; }
    int layers() const { return int(full_.size()); }
    // The top of the byte axis (a whole number of ticks at or above the largest bar).
    double axisMax() const { return axisMax_; }
    QRect plotRect() const;
    // Where a layer's bar is drawn (widget coordinates).
    QRectF barRect(int layer, bool compressed) const;
    static QColor fullColor();
    static QColor compressedColor();
    // An axis label in the unit `top` calls for: 0, 50 MB, 100 MB... with the decimals the
    // step needs.
    static QString tickLabel(double bytes, double step, double top);

    QSize sizeHint() const override { return QSize(560, 260); }
    QSize minimumSizeHint() const override { return QSize(240, 160); }

protected:
    void paintEvent(QPaintEvent* event) override;

private:
    int leftMargin() const;

    std::vector<int64_t> full_, compressed_;
    double axisMax_ = 1.0;
    double step_ = 1.0;
    QString message_;
};

}  // namespace kvlens::ui
