// The compressed cache's size over the decode steps, with compression during decoding
// (the Outputs panel): the entries per head (mean) after each step as a line, the budget
// as a dashed one, and a one-line summary above them.
#pragma once

#include <QString>
#include <QWidget>
#include <cstdint>
#include <vector>

namespace kvlens::ui {

class CacheSizeChart : public QWidget {
    Q_OBJECT

public:
    explicit CacheSizeChart(QWidget* parent = nullptr);

    // `entries`: the entries per head (mean, rounded up) after each step; `budget`: the entries the
    // compression cuts back to; `every`: its period in steps.
    void setEntries(std::vector<int64_t> entries, int64_t budget, int64_t every);
    // "Cache (per head): 256-271 entries over 1023 steps, cut back to 256 every 16".
    QString summary() const;
    const std::vector<int64_t>& entries() const { return entries_; }

    QSize sizeHint() const override { return {400, 110}; }

protected:
    void paintEvent(QPaintEvent* event) override;

private:
    std::vector<int64_t> entries_;
    int64_t budget_ = 0, every_ = 0;
};

}  // namespace kvlens::ui
