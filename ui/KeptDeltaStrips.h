// Three stacked strips of one layer, heads by prompt positions: what run A kept, what run
// B kept, and their delta (both / A only / B only / neither), in one fixed colour scale.
//
// Every strip uses the same four colours: in A's strip a kept position is "both" or
// "A only" (so it also says whether B kept it), in B's strip "both" or "B only", and the
// delta shows all four. Column rule, when the prompt has more positions than the strip
// has pixel columns: column x covers positions [x*P/W, (x+1)*P/W) and shows the kept
// category with the most positions in that span; ties go to A only, then B only, then
// both (a difference is what a comparison looks for); it shows "neither" only when no
// position of the span is kept. A majority vote that counted "neither" would blank out
// a selection of a few percent. With fewer positions than columns, each position is a
// band of whole columns.
#pragma once

#include <QColor>
#include <QRect>
#include <QString>
#include <QWidget>
#include <cstdint>
#include <utility>
#include <vector>

#include "core/Selection.h"

namespace kvlens::ui {

class KeptDeltaStrips : public QWidget {
    Q_OBJECT

public:
    enum Category : uint8_t { Neither = 0, Both = 1, AOnly = 2, BOnly = 3 };
    enum class Strip { A = 0, B = 1, Delta = 2 };

    explicit KeptDeltaStrips(QWidget* parent = nullptr);

    static QColor color(Category category);
    static QString name(Category category);

    // The two selections must be comparable (SelectionOverlap::comparable). Rows are
    // their heads when both index heads alike, else query heads (each read through
    // Selection::headOf).
    void setLayer(const Selection& a, const Selection& b, int64_t layer);
    void setCaptions(const QString& a, const QString& b);
    void clear();

    int rows() const { return int(categories_.size()); }
    int64_t positions() const { return positions_; }
    const QString& rowUnit() const { return rowUnit_; }
    // Category of (row, position) in the delta.
    Category category(int row, int64_t position) const;
    // Where a strip's cells are drawn (widget coordinates), one rowHeight() per row.
    QRect stripRect(Strip strip) const;
    int rowHeight() const;

    // Positions [first, end) that pixel column x of `width` columns shows.
    static std::pair<int64_t, int64_t> span(int x, int width, int64_t positions);
    // The category a column shows for `cats` over [first, end) in `strip` (the rule above).
    static Category columnCategory(const std::vector<uint8_t>& cats, int64_t first, int64_t end,
                                   Strip strip);

    QSize sizeHint() const override;
    QSize minimumSizeHint() const override;

protected:
    void paintEvent(QPaintEvent* event) override;

private:
    int captionHeight() const;
    int chromeHeight() const;  // captions, gaps, axis and legend

    std::vector<std::vector<uint8_t>> categories_;  // [row][position]
    int64_t positions_ = 0;
    QString rowUnit_;
    QString captionA_, captionB_;
};

}  // namespace kvlens::ui
