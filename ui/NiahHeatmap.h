// One method's needle-in-a-haystack runs as a depth x length heatmap: rows are needle
// depths (0% at the top), columns prompt lengths, each cell coloured by its value in
// [0, 1] (viridis, as the report's figures) with its percentage written in it; a cell
// the sweep has no run for is grey and reads "-". The selected cell is framed. A click
// on a cell with a value emits cellClicked. Painted with QPainter (a few dozen cells).
#pragma once

#include <QColor>
#include <QRect>
#include <QString>
#include <QStringList>
#include <QWidget>
#include <utility>
#include <vector>

namespace kvlens::ui {

class NiahHeatmap : public QWidget {
    Q_OBJECT

public:
    explicit NiahHeatmap(QWidget* parent = nullptr);

    // `values` row-major, rows x columns (NaN: no run); `valueName` titles the colour bar.
    // Throws std::invalid_argument when the sizes disagree. Clears the selection.
    void setData(QStringList rowLabels, QStringList columnLabels, std::vector<double> values,
                 const QString& valueName);
    void clear();
    int rows() const { return static_cast<int>(rowLabels_.size()); }
    int columns() const { return static_cast<int>(columnLabels_.size()); }
    double value(int row, int column) const;  // NaN outside or without a run

    void setSelectedCell(int row, int column);  // -1, -1: none
    std::pair<int, int> selectedCell() const { return selected_; }

    // In widget pixels; an empty rect outside the grid.
    QRect cellRect(int row, int column) const;
    // The cell under `p`, or (-1, -1).
    std::pair<int, int> cellAt(QPoint p) const;
    // The colour a value is drawn in (the missing grey for NaN).
    static QColor colorOf(double value);

    QSize sizeHint() const override;
    QSize minimumSizeHint() const override;

signals:
    void cellClicked(int row, int column);

protected:
    void paintEvent(QPaintEvent* event) override;
    void mousePressEvent(QMouseEvent* event) override;

private:
    QRect gridRect() const;  // all cells

    QStringList rowLabels_, columnLabels_;
    std::vector<double> values_;
    QString valueName_;
    std::pair<int, int> selected_{-1, -1};
};

}  // namespace kvlens::ui
