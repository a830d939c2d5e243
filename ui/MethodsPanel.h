// The "Methods & budgets" panel: method, budget (slider and box, in entries or as a
// ratio of the prompt), window, kernel, pooling, beta, alpha and GQA mode. Every
// change emits paramsChanged at once; the window re-selects on the stored capture.
#pragma once

#include <QStringList>
#include <QWidget>

#include <cstdint>

#include "core/PressParams.h"

class QComboBox;
class QDoubleSpinBox;
class QLineEdit;
class QLabel;
class QRadioButton;
class QSlider;
class QSpinBox;
class QMenu;
class QToolButton;

namespace kvlens::ui {

class MethodsPanel : public QWidget {
    Q_OBJECT

public:
    explicit MethodsPanel(QWidget* parent = nullptr);

    PressParams params() const;
    // Shows `params` without emitting paramsChanged (e.g. a run opened from the store).
    void setParams(const PressParams& params);
    // The budget's range follows the prompt (1 .. T entries).
    void setPromptLength(int64_t tokens);
    // Moves the budget (in entries) as a user would: emits paramsChanged.
    void setBudgetEntries(int64_t entries);
    // A line under the controls: the last selection's time, or why it failed.
    void showStatus(const QString& text, bool error);

    // The methods the kept positions' hover compares ("kept by"), chosen in the "Kept by"
    // menu. Offered: every method but FullKV; by default all of them but H2O, whose first
    // use replays the prompt (about 1.5 prefills). Unknown names are ignored.
    QStringList comparedMethods() const;
    void setComparedMethods(const QStringList& methods);
    static QStringList defaultComparedMethods();

signals:
    void paramsChanged();
    void comparedMethodsChanged();

private:
    void updateEnabled();
    // The window control's maximum: the window queries a capture keeps, or any length for
    // a method that prefills again (Finch's question is its window).
    static int windowMaximum(const PressParams& p);
    void budgetModeChanged();
    void updateComparedText();

    QComboBox* method_;
    QRadioButton* entries_;
    QRadioButton* ratio_;
    QSlider* budgetSlider_;
    QSpinBox* budget_;
    QDoubleSpinBox* budgetRatio_;
    QSpinBox* window_;
    QSpinBox* kernel_;
    QComboBox* pooling_;
    QDoubleSpinBox* beta_;
    QDoubleSpinBox* alpha_;
    QComboBox* gqa_;
    QComboBox* convention_;  // paper or kvpress
    QSpinBox* sinks_;   // StreamingLLM, LagKV, Expected Attention
    QSpinBox* lag_;     // LagKV
    QSpinBox* chunk_;   // ChunkKV
    QSpinBox* future_;  // Expected Attention
    QComboBox* scorer_;  // AdaKV, ChunkKV, CAKE: "(own)" or a scorer
    QDoubleSpinBox* tau1_;  // CAKE
    QDoubleSpinBox* tau2_;
    QDoubleSpinBox* gamma_;
    QDoubleSpinBox* lazy_;  // SimLayerKV
    QSpinBox* sketch_;      // LeverageScore, Compactor
    QSpinBox* attnChunk_;   // non-causal attention, Compactor
    QSpinBox* repeatChunk_; // KVzip
    QSpinBox* finchChunk_;  // Finch
    QDoubleSpinBox* blend_;  // Compactor (its minimum, -1, reads "auto")
    QDoubleSpinBox* think_;  // ThinK, over any method
    QLineEdit* layerWeights_;  // per-layer: "4,2,1,1", empty for equal shares
    QToolButton* compared_;
    QMenu* comparedMenu_;
    QLabel* status_;
    int64_t promptLength_ = 0;
    bool quiet_ = false;  // set while controls are filled programmatically
};

}  // namespace kvlens::ui
