// The full-cache and compressed greedy continuations side by side, token by token, with
// the first divergence and every later differing token highlighted, and the run metrics.
#pragma once

#include <QColor>
#include <QString>
#include <QWidget>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/RunMetrics.h"

class QLabel;
class QTextDocument;
class QTextEdit;

namespace kvlens::ui {

class CacheSizeChart;

class OutputsPanel : public QWidget {
    Q_OBJECT

public:
    explicit OutputsPanel(QWidget* parent = nullptr);

    // Tokens are compared by id when `metrics` holds as many ids as pieces (two ids can
    // decode alike), else by their text; a step only one side has counts as differing.
    void setOutputs(const std::vector<std::string>& fullPieces,
                    const std::vector<std::string>& compressedPieces, const RunMetrics& metrics,
                    const QString& label);
    // Empties both sides and the metrics, showing `why`.
    void clear(const QString& why);
    // With compression during decoding: the entries per head (mean) after each step (the
    // chart under the metrics); empty hides it, as setOutputs and clear do.
    void setCacheEntries(std::vector<int64_t> entries, int64_t budget, int64_t every);
    CacheSizeChart* cacheChart() const { return cacheChart_; }

    // The first step (0-based) whose tokens differ; nullopt when they all agree.
    std::optional<int> firstDivergence() const { return firstDivergence_; }
    // Which steps differ (the highlighted ones are those from the first divergence on).
    const std::vector<bool>& differing() const { return differing_; }
    QTextDocument* fullDocument() const;
    QTextDocument* compressedDocument() const;
    // Characters [begin, end) of token `step` in a side's document.
    std::pair<int, int> tokenRange(bool compressed, int step) const;
    QString message() const;

    static QColor firstDivergenceColor();
    static QColor differingColor();

private:
    void fill(QTextEdit* view, const std::vector<std::string>& pieces,
              const std::vector<int32_t>* ids, std::vector<std::pair<int, int>>& ranges);
    void setMetricTexts(const RunMetrics* metrics, size_t steps);

    QLabel* message_ = nullptr;
    CacheSizeChart* cacheChart_ = nullptr;
    QLabel* compressedHeader_ = nullptr;
    QTextEdit* full_ = nullptr;
    QTextEdit* compressed_ = nullptr;
    QLabel* agreedPrefix_ = nullptr;
    QLabel* tokenAgreement_ = nullptr;
    QLabel* meanKl_ = nullptr;
    QLabel* top1_ = nullptr;
    QLabel* ratio_ = nullptr;
    QLabel* hitRate_ = nullptr;
    std::vector<bool> differing_;
    std::optional<int> firstDivergence_;
    std::vector<std::pair<int, int>> fullRanges_, compressedRanges_;
};

}  // namespace kvlens::ui
