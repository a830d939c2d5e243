// A pinned baseline run A against a run B of the same prompt, one layer at a time:
// A's kept positions, B's, and their delta (KeptDeltaStrips), the layer's Jaccard index
// and the two runs' metrics side by side with their differences.
#pragma once

#include <QString>
#include <QWidget>
#include <optional>

#include "sessions/StoreRecords.h"

class QLabel;
class QSpinBox;

namespace kvlens::ui {

class KeptDeltaStrips;

class RunComparisonView : public QWidget {
    Q_OBJECT

public:
    explicit RunComparisonView(QWidget* parent = nullptr);
    ~RunComparisonView() override;

    // Runs of different prompts, prompt lengths, layer counts or head counts (or a run
    // without a selection) show one line saying why instead of the strips.
    void setRuns(const sessions::RunRecord& a, const sessions::RunRecord& b);
    // No comparison: shows `why` in one line.
    void clear(const QString& why);

    // Clamped to the runs' layers; also what the layer spin box sets.
    void setLayer(int layer);
    int layer() const { return layer_; }

    // The one-line explanation shown instead of the picture; empty while comparing.
    QString message() const;
    // The Jaccard index of the shown layer (averaged over query heads); nullopt when
    // nothing is compared.
    std::optional<double> jaccard() const;
    KeptDeltaStrips* strips() const { return strips_; }

    QSize sizeHint() const override;

signals:
    void layerChanged(int layer);

private:
    struct MetricRow {
        QLabel* a;
        QLabel* b;
        QLabel* delta;
    };

    void showMessage(const QString& why);
    void showLayer();
    void fillMetrics();
    static QString mismatch(const sessions::RunRecord& a, const sessions::RunRecord& b);

    QLabel* title_ = nullptr;
    QSpinBox* layerBox_ = nullptr;
    QLabel* jaccardLabel_ = nullptr;
    QLabel* message_ = nullptr;
    KeptDeltaStrips* strips_ = nullptr;
    QWidget* metrics_ = nullptr;
    QLabel* headerA_ = nullptr;
    QLabel* headerB_ = nullptr;
    MetricRow ratio_{}, agreement_{}, kl_{}, top1_{}, hit_{};

    std::optional<sessions::RunRecord> a_, b_;
    std::vector<double> jaccardPerLayer_;
    int layer_ = 0;
};

}  // namespace kvlens::ui
