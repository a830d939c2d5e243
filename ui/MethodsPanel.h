// The "Methods & budgets" panel: method, budget (slider and box, in entries or as a
// ratio of the prompt), and one control per knob of the knob table (core/Methods), each
// enabled when the method in effect reads it. Every change emits paramsChanged at once;
// the window re-selects on the stored capture.
#pragma once

#include <QStringList>
#include <QWidget>

#include <array>
#include <cstdint>
#include <string>

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
    // How the panel shows a knob: its label (nullptr: no control), and a number's range,
    // step and decimals as the GUI offers them (within the knob table's range).
    struct Look {
        const char* label = nullptr;
        double low = 0.0, high = 0.0, step = 1.0;
        int decimals = 0;
    };
    static Look lookOf(Knob k);
    // The control's objectName: the knob's JSON key in camel case (layer_weights: layerWeights).
    static QString controlName(const KnobInfo& k);
    // The knob table's help, flag, values, default and the methods that read it.
    static std::string tooltipOf(const KnobInfo& k);
    QWidget* control(Knob k) const { return controls_[size_t(k)]; }
    QSpinBox* spinBox(Knob k) const;
    QComboBox* combo(Knob k) const;
    QLineEdit* lineEdit(Knob k) const;
    // The control's value as its knob's text (methods::setKnob reads it), and the reverse.
    QString controlText(Knob k) const;
    void setControl(Knob k, const PressParams& p);
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
    // Each knob's control (nullptr: none), in knob-table order, made from the knob table.
    std::array<QWidget*, size_t(Knob::Count_)> controls_{};
    QToolButton* compared_;
    QMenu* comparedMenu_;
    QLabel* crossHeadNote_;  // methods::crossHeadNote for the method and scorer shown
    QLabel* status_;
    int64_t promptLength_ = 0;
    bool quiet_ = false;  // set while controls are filled programmatically
};

}  // namespace kvlens::ui
