#include "ui/MethodsPanel.h"

#include <QButtonGroup>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QToolButton>
#include <QRadioButton>
#include <QSlider>
#include <QSpinBox>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

namespace kvlens::ui {

MethodsPanel::MethodsPanel(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    auto* form = new QFormLayout;
    method_ = new QComboBox;
    method_->setObjectName("method");
    for (const std::string& m : PressParams::methodNames()) method_->addItem(QString::fromStdString(m));
    method_->setCurrentText("snapkv");
    form->addRow("Method", method_);

    auto* modeRow = new QHBoxLayout;
    entries_ = new QRadioButton("entries");
    ratio_ = new QRadioButton("ratio");
    entries_->setChecked(true);
    auto* group = new QButtonGroup(this);
    group->addButton(entries_);
    group->addButton(ratio_);
    modeRow->addWidget(entries_);
    modeRow->addWidget(ratio_);
    modeRow->addStretch(1);
    form->addRow("Budget in", modeRow);

    budgetSlider_ = new QSlider(Qt::Horizontal);
    budgetSlider_->setObjectName("budgetSlider");
    budgetSlider_->setRange(1, 4096);
    budgetSlider_->setValue(128);
    budget_ = new QSpinBox;
    budget_->setObjectName("budget");
    budget_->setRange(1, 1 << 20);
    budget_->setValue(128);
    budget_->setToolTip("KV entries kept per head, the observation window included");
    budgetRatio_ = new QDoubleSpinBox;
    budgetRatio_->setObjectName("budgetRatio");
    budgetRatio_->setRange(0.1, 100.0);
    budgetRatio_->setDecimals(1);
    budgetRatio_->setSuffix(" %");
    budgetRatio_->setValue(10.0);
    budgetRatio_->setToolTip("Entries per head as a share of the prompt length");
    auto* budgetRow = new QHBoxLayout;
    budgetRow->addWidget(budgetSlider_, 1);
    budgetRow->addWidget(budget_);
    budgetRow->addWidget(budgetRatio_);
    form->addRow("Budget", budgetRow);

    // One control per knob of the knob table (core/Methods), named after its JSON key in camel
    // case (layer_weights: layerWeights): its type picks the widget, the table its range, words
    // and tooltip; the presentation below only adds a label, a step and a real's range.
    const PressParams defaults;
    for (const KnobInfo& k : methods::knobs()) {
        const Look look = lookOf(k.knob);
        if (!look.label) continue;  // no control (--seed)
        QWidget* w = nullptr;
        switch (k.type) {
            case KnobType::Int: {
                auto* box = new QSpinBox;
                box->setRange(int(std::max<int64_t>(k.min, int64_t(look.low))), int(std::min<int64_t>(k.max, int64_t(look.high))));
                box->setSingleStep(int(look.step));
                w = box;
                break;
            }
            case KnobType::Real: {
                auto* box = new QDoubleSpinBox;
                box->setRange(look.low, look.high);
                box->setSingleStep(look.step);
                box->setDecimals(look.decimals);
                // Compactor's blend: its minimum, -1, reads "auto" (the compression ratio).
                if (k.knob == Knob::Blend) box->setSpecialValueText("auto");
                w = box;
                break;
            }
            case KnobType::Word: {
                auto* box = new QComboBox;
                box->addItems(QString(k.words).split('|'));
                w = box;
                break;
            }
            case KnobType::Name: {
                auto* box = new QComboBox;
                box->addItem("(own)");
                for (const std::string& n : PressParams::scorerNames()) box->addItem(QString::fromStdString(n));
                w = box;
                break;
            }
            case KnobType::Reals: {
                auto* line = new QLineEdit;
                line->setPlaceholderText("equal");
                w = line;
                break;
            }
            case KnobType::Seed: break;
        }
        if (!w) continue;
        w->setObjectName(controlName(k));
        w->setToolTip(QString::fromStdString(tooltipOf(k)));
        controls_[size_t(k.knob)] = w;
        setControl(k.knob, defaults);
        form->addRow(look.label, w);
    }
    compared_ = new QToolButton;
    compared_->setObjectName("comparedMethods");
    compared_->setPopupMode(QToolButton::InstantPopup);
    compared_->setToolTip(QString::fromStdString(
        "The methods the kept positions' hover compares at the same budget and window\n(\"kept by\"); " +
        methods::listWhere([](const MethodInfo& m) { return m.costlyFirstUse; }) +
        " are off by\ndefault: their first use runs the model again (a replay, W_o, a reconstruction, a prefill)"));
    comparedMenu_ = new QMenu(compared_);
    for (const std::string& m : PressParams::methodNames()) {
        if (methods::named(m).id == MethodId::Full) continue;
        QAction* a = comparedMenu_->addAction(QString::fromStdString(m));
        a->setCheckable(true);
        a->setChecked(defaultComparedMethods().contains(a->text()));
        connect(a, &QAction::toggled, this, [this] {
            updateComparedText();
            if (!quiet_) emit comparedMethodsChanged();
        });
    }
    compared_->setMenu(comparedMenu_);
    updateComparedText();
    form->addRow("Kept by", compared_);
    layout->addLayout(form);
    // Where the method compares its scorer's scores across heads that share no scale.
    crossHeadNote_ = new QLabel;
    crossHeadNote_->setObjectName("crossHeadNote");
    crossHeadNote_->setWordWrap(true);
    crossHeadNote_->setStyleSheet("color: #b07000;");
    crossHeadNote_->hide();
    layout->addWidget(crossHeadNote_);
    status_ = new QLabel;
    status_->setObjectName("selectionStatus");
    status_->setWordWrap(true);
    layout->addWidget(status_);
    layout->addStretch(1);

    auto changed = [this] {
        if (!quiet_) emit paramsChanged();
    };
    connect(method_, &QComboBox::currentTextChanged, this, [this, changed] {
        updateEnabled();
        changed();
    });
    connect(budgetSlider_, &QSlider::valueChanged, this, [this](int v) {
        // Programmatic moves (range changes, syncing from the boxes) change nothing else.
        if (quiet_) return;
        if (entries_->isChecked()) {
            budget_->setValue(v);
        } else if (promptLength_ > 0) {
            budgetRatio_->setValue(100.0 * v / double(promptLength_));
        }
    });
    connect(budget_, qOverload<int>(&QSpinBox::valueChanged), this, [this, changed](int v) {
        const bool was = quiet_;
        quiet_ = true;
        budgetSlider_->setValue(v);
        quiet_ = was;
        changed();
    });
    connect(budgetRatio_, qOverload<double>(&QDoubleSpinBox::valueChanged), this, [this, changed](double v) {
        if (promptLength_ > 0) {
            const bool was = quiet_;
            quiet_ = true;
            budgetSlider_->setValue(int(std::lround(v / 100.0 * double(promptLength_))));
            quiet_ = was;
        }
        changed();
    });
    connect(entries_, &QRadioButton::toggled, this, [this, changed] {
        budgetModeChanged();
        changed();
    });
    for (const KnobInfo& k : methods::knobs()) {
        QWidget* w = control(k.knob);
        if (auto* box = qobject_cast<QSpinBox*>(w)) {
            connect(box, qOverload<int>(&QSpinBox::valueChanged), this, changed);
        } else if (auto* real = qobject_cast<QDoubleSpinBox*>(w)) {
            connect(real, qOverload<double>(&QDoubleSpinBox::valueChanged), this, changed);
        } else if (auto* line = qobject_cast<QLineEdit*>(w)) {
            connect(line, &QLineEdit::editingFinished, this, changed);
        } else if (auto* combo = qobject_cast<QComboBox*>(w); combo && k.knob != Knob::Convention && k.knob != Knob::Scorer) {
            connect(combo, &QComboBox::currentTextChanged, this, changed);
        }
    }
    connect(combo(Knob::Convention), &QComboBox::currentTextChanged, this, [this, changed](const QString& text) {
        // kvpress pools by avg and averages each KV head's query heads: the only settings it has.
        if (text == "kvpress") {
            const bool was = quiet_;
            quiet_ = true;
            combo(Knob::Pooling)->setCurrentText("avg");
            combo(Knob::Gqa)->setCurrentText("kv-head");
            quiet_ = was;
        }
        updateEnabled();  // chunkkv and finch read their kvpress twin's knobs under kvpress
        changed();
    });
    // What the method in effect reads follows the scorer, and ThinK reads the window.
    connect(combo(Knob::Scorer), &QComboBox::currentTextChanged, this, [this, changed] {
        updateEnabled();
        changed();
    });
    connect(qobject_cast<QDoubleSpinBox*>(control(Knob::Think)), qOverload<double>(&QDoubleSpinBox::valueChanged), this,
            [this] { updateEnabled(); });
    budgetModeChanged();
    updateEnabled();
}

PressParams MethodsPanel::params() const {
    PressParams p;
    p.method = method_->currentText().toStdString();
    if (entries_->isChecked()) {
        p.budget = budget_->value();
    } else {
        p.budget = 0;
        p.budgetRatio = budgetRatio_->value() / 100.0;
    }
    for (const KnobInfo& k : methods::knobs()) {
        if (!control(k.knob) || k.knob == Knob::LayerWeights) continue;
        // A spin box or a list holds only values its knob takes.
        methods::setKnob(p, k.knob, controlText(k.knob).toStdString(), k.flag);
    }
    p.method = methods::underConvention(p.method, p.convention);  // chunkkv under kvpress: chunkkv-kvpress
    if (!p.takesScorer()) p.scorer.clear();
    if (p.reads(Knob::LayerWeights)) {
        // A word that is not a number stays in the list as NaN, which validate() names.
        for (const QString& w : lineEdit(Knob::LayerWeights)->text().split(',', Qt::SkipEmptyParts)) {
            bool ok = false;
            const double v = w.trimmed().toDouble(&ok);
            p.layerWeights.push_back(ok ? v : std::nan(""));
        }
    }
    return p;
}

void MethodsPanel::setParams(const PressParams& p) {
    quiet_ = true;
    method_->setCurrentText(QString::fromStdString(p.method));
    if (p.budget > 0) {
        entries_->setChecked(true);
        budget_->setValue(int(p.budget));
    } else {
        ratio_->setChecked(true);
        budgetRatio_->setValue(p.budgetRatio * 100.0);
    }
    spinBox(Knob::Window)->setMaximum(windowMaximum(p));
    for (const KnobInfo& k : methods::knobs()) setControl(k.knob, p);
    budgetModeChanged();
    updateEnabled();
    quiet_ = false;
}

void MethodsPanel::setPromptLength(int64_t tokens) {
    promptLength_ = tokens;
    const bool was = quiet_;
    quiet_ = true;
    // A shorter prompt clamps the slider, never the budget in the boxes.
    budgetSlider_->setRange(1, int(std::max<int64_t>(1, tokens)));
    budgetSlider_->setToolTip(QString("1 .. %1 entries per head (the prompt)").arg(tokens));
    budgetModeChanged();
    quiet_ = was;
}

void MethodsPanel::setBudgetEntries(int64_t entries) {
    // One paramsChanged, with the new budget, whatever mode the panel was in.
    quiet_ = true;
    if (!entries_->isChecked()) entries_->setChecked(true);
    budget_->setValue(int(entries));
    budgetModeChanged();
    quiet_ = false;
    emit paramsChanged();
}

void MethodsPanel::showStatus(const QString& text, bool error) {
    status_->setText(text);
    status_->setStyleSheet(error ? "color: #d55e00;" : "color: palette(mid);");
}

void MethodsPanel::budgetModeChanged() {
    const bool byEntries = entries_->isChecked();
    budget_->setVisible(byEntries);
    budgetRatio_->setVisible(!byEntries);
    const bool was = quiet_;
    quiet_ = true;
    if (byEntries) {
        budgetSlider_->setValue(budget_->value());
    } else if (promptLength_ > 0) {
        budgetSlider_->setValue(int(std::lround(budgetRatio_->value() / 100.0 * double(promptLength_))));
    }
    quiet_ = was;
}

QStringList MethodsPanel::defaultComparedMethods() {
    QStringList all;
    for (const std::string& m : PressParams::methodNames())
        if (methods::named(m).id != MethodId::Full && !methods::named(m).costlyFirstUse)
            all << QString::fromStdString(m);
    return all;
}

QStringList MethodsPanel::comparedMethods() const {
    QStringList chosen;
    for (QAction* a : comparedMenu_->actions())
        if (a->isChecked()) chosen << a->text();
    return chosen;
}

void MethodsPanel::setComparedMethods(const QStringList& methods) {
    quiet_ = true;
    for (QAction* a : comparedMenu_->actions()) a->setChecked(methods.contains(a->text()));
    quiet_ = false;
    updateComparedText();
    emit comparedMethodsChanged();
}

void MethodsPanel::updateComparedText() {
    const QStringList chosen = comparedMethods();
    compared_->setText(chosen.isEmpty() ? QString("no other method")
                                        : QString("%1 of %2 methods").arg(chosen.size()).arg(comparedMenu_->actions().size()));
}

void MethodsPanel::updateEnabled() {
    PressParams probe;
    probe.convention = parseConvention(controlText(Knob::Convention).toStdString());
    probe.method = methods::underConvention(method_->currentText().toStdString(), probe.convention);
    if (probe.takesScorer()) probe.scorer = controlText(Knob::Scorer).toStdString();
    probe.think = qobject_cast<QDoubleSpinBox*>(control(Knob::Think))->value();
    // A control is enabled exactly when the method table says the method in effect reads
    // its knob (ThinK reads the window, whatever the method; its own control is always on).
    const KnobSet reads = methods::effectiveKnobs(probe);
    for (const KnobInfo& k : methods::knobs())
        if (QWidget* w = control(k.knob)) w->setEnabled(k.knob == Knob::Think || reads.has(k.knob));
    spinBox(Knob::Window)->setMaximum(windowMaximum(probe));
    const std::string note = methods::crossHeadNote(probe);
    crossHeadNote_->setText(QString::fromStdString(note));
    crossHeadNote_->setVisible(!note.empty());
}

MethodsPanel::Look MethodsPanel::lookOf(Knob k) {
    // Labels, steps and the ranges the GUI offers (within the knob table's).
    switch (k) {
        case Knob::Window: return {"Window", 1, PressParams::kMaxQuerySinks, 1, 0};
        case Knob::Scorer: return {"Scorer"};
        case Knob::Kernel: return {"Kernel", 1, 63, 2, 0};
        case Knob::Pooling: return {"Pooling"};
        case Knob::Gqa: return {"GQA"};
        case Knob::Beta: return {"Beta", 1.0, 1000.0, 1.0, 2};
        case Knob::Schedule: return {"Schedule"};
        case Knob::Alpha: return {"Alpha", 0.0, 1.0, 0.05, 2};
        case Knob::Sinks: return {"Sinks", 0, 1 << 20, 1, 0};
        case Knob::Lag: return {"Lag", 1, 1 << 20, 1, 0};
        case Knob::Chunk: return {"Chunk", 1, 1 << 20, 1, 0};
        case Knob::Future: return {"Future", 1, 1 << 24, 1, 0};
        case Knob::Tau1: return {"Tau 1", 0.05, 100.0, 0.1, 2};
        case Knob::Tau2: return {"Tau 2", 0.05, 100.0, 0.1, 2};
        case Knob::Gamma: return {"Gamma", 0.0, 1e6, 10.0, 1};
        case Knob::Lazy: return {"Lazy above", 0.0, 1.0, 0.05, 2};
        case Knob::LayerWeights: return {"Layer weights"};
        case Knob::Sketch: return {"Sketch", 1, 4096, 1, 0};
        case Knob::AttnChunk: return {"Attention chunk", 1, 1 << 20, 1, 0};
        case Knob::RepeatChunk: return {"Repeat chunk", 1, 1 << 20, 1, 0};
        case Knob::FinchChunk: return {"Finch chunk", 1, 1 << 20, 1, 0};
        case Knob::Blend: return {"Blend", -1.0, 100.0, 0.05, 2};
        case Knob::Seed: return {};  // no control: Random's and LeverageScore's draw stays 0 here
        case Knob::Think: return {"ThinK channels", 0.0, 0.95, 0.05, 2};
        case Knob::Convention: return {"Convention"};
        case Knob::Count_: break;
    }
    return {};
}

QString MethodsPanel::controlName(const KnobInfo& k) {
    QString name;
    bool upper = false;
    for (const char* c = k.json; *c; ++c) {
        if (*c == '_') {
            upper = true;
            continue;
        }
        name += upper ? QChar::fromLatin1(*c).toUpper() : QChar::fromLatin1(*c);
        upper = false;
    }
    return name;
}

std::string MethodsPanel::tooltipOf(const KnobInfo& k) {
    return std::string(k.help) + "\n" + k.flag + ": " + methods::knobValuesText(k) + ", default " + k.defaultText +
           "\nread by " + methods::knobReaders(k);
}

QString MethodsPanel::controlText(Knob k) const {
    QWidget* w = control(k);
    if (auto* box = qobject_cast<QSpinBox*>(w)) return QString::number(box->value());
    if (auto* real = qobject_cast<QDoubleSpinBox*>(w)) {
        if (k == Knob::Blend && real->value() < 0.0) return "auto";  // the special value and the step above it
        return QString::fromStdString(methods::shortestText(real->value()));
    }
    if (auto* list = qobject_cast<QComboBox*>(w)) return k == Knob::Scorer && list->currentIndex() == 0 ? "" : list->currentText();
    if (auto* line = qobject_cast<QLineEdit*>(w)) return line->text();
    return {};
}

void MethodsPanel::setControl(Knob k, const PressParams& p) {
    QWidget* w = control(k);
    if (auto* box = qobject_cast<QSpinBox*>(w)) {
        box->setValue(QString::fromStdString(methods::knobValue(p, k)).toInt());
    } else if (auto* real = qobject_cast<QDoubleSpinBox*>(w)) {
        real->setValue(k == Knob::Blend && p.blend < 0.0 ? real->minimum() : std::stod(methods::knobValue(p, k)));
    } else if (auto* list = qobject_cast<QComboBox*>(w)) {
        const QString text = QString::fromStdString(methods::knobValue(p, k));
        list->setCurrentIndex(text.isEmpty() ? 0 : std::max(0, list->findText(text)));
    } else if (auto* line = qobject_cast<QLineEdit*>(w)) {
        QStringList weights;
        for (double v : p.layerWeights) weights << QString::number(v, 'g', 6);
        line->setText(weights.join(','));
    }
}

QSpinBox* MethodsPanel::spinBox(Knob k) const { return qobject_cast<QSpinBox*>(control(k)); }
QComboBox* MethodsPanel::combo(Knob k) const { return qobject_cast<QComboBox*>(control(k)); }
QLineEdit* MethodsPanel::lineEdit(Knob k) const { return qobject_cast<QLineEdit*>(control(k)); }

int MethodsPanel::windowMaximum(const PressParams& p) {
    // Finch's question (its window) may be longer than the 64 window queries a capture keeps.
    const MethodInfo* m = p.info();
    return m && m->needs.has(Need::SecondPrefill) ? (1 << 20) : int(PressParams::kMaxQuerySinks);
}

}  // namespace kvlens::ui
