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

    window_ = new QSpinBox;
    window_->setObjectName("window");
    window_->setRange(1, 64);
    window_->setValue(32);
    window_->setToolTip("Observation window: the last W prompt queries vote, and are always kept");
    form->addRow("Window", window_);
    kernel_ = new QSpinBox;
    kernel_->setObjectName("kernel");
    kernel_->setRange(1, 63);
    kernel_->setSingleStep(2);
    kernel_->setValue(7);
    kernel_->setToolTip("Pooling kernel over positions (odd)");
    form->addRow("Kernel", kernel_);
    pooling_ = new QComboBox;
    pooling_->setObjectName("pool");
    pooling_->addItems({"max", "avg"});
    form->addRow("Pooling", pooling_);
    beta_ = new QDoubleSpinBox;
    beta_->setObjectName("beta");
    beta_->setRange(1.0, 1000.0);
    beta_->setValue(20.0);
    beta_->setToolTip("PyramidKV: the top layer keeps budget / beta");
    form->addRow("Beta", beta_);
    alpha_ = new QDoubleSpinBox;
    alpha_->setObjectName("alpha");
    alpha_->setRange(0.0, 1.0);
    alpha_->setSingleStep(0.05);
    alpha_->setValue(0.2);
    alpha_->setToolTip("AdaKV: the share of the budget every head keeps before the adaptive split");
    form->addRow("Alpha", alpha_);
    gqa_ = new QComboBox;
    gqa_->setObjectName("gqa");
    gqa_->addItems({"kv-head", "query-head"});
    gqa_->setToolTip("kv-head: one selection per KV head (votes averaged over its query heads);\n"
                     "query-head: one per query head");
    form->addRow("GQA", gqa_);
    convention_ = new QComboBox;
    convention_->setObjectName("convention");
    convention_->addItems({"paper", "kvpress"});
    convention_->setToolTip(
        QString::fromStdString("paper: the paper's form (the default); kvpress: keep exactly the positions kvpress's press "
                               "keeps\n(ratio budgets as int(T(1 - r)), avg pooling). For " +
                               methods::listWhere([](const MethodInfo& m) { return m.kvpressForm != KvpressForm::None; },
                                                  " and ") +
                               "."));
    form->addRow("Convention", convention_);
    auto spin = [&](const char* name, int lo, int hi, int value, const char* tip) {
        auto* box = new QSpinBox;
        box->setObjectName(name);
        box->setRange(lo, hi);
        box->setValue(value);
        box->setToolTip(tip);
        return box;
    };
    const PressParams defaults;
    sinks_ = spin("sinks", 0, 1 << 20, int(defaults.sinks),
                  "StreamingLLM, LagKV, Expected Attention, CUR, SimLayerKV, Compactor, KVzip (and a wrapper\n"
                  "scored by Expected Attention, CUR, Compactor, KVzip or LagKV): the first positions, always kept");
    form->addRow("Sinks", sinks_);
    lag_ = spin("lag", 1, 1 << 20, int(defaults.lag),
                "LagKV (the method, or a wrapper's scorer): positions per partition; each is scored against\n"
                "the next, the last full one and the remainder are kept whole (the budget must hold them and\n"
                "the sinks)");
    form->addRow("Lag", lag_);
    chunk_ = spin("chunk", 1, 1 << 20, int(defaults.chunk), "ChunkKV: consecutive positions kept or dropped together");
    form->addRow("Chunk", chunk_);
    future_ = spin("future", 1, 1 << 24, int(defaults.future),
                   "Expected Attention: the future query positions whose RoPE rotation is averaged");
    form->addRow("Future", future_);
    scorer_ = new QComboBox;
    scorer_->setObjectName("scorer");
    scorer_->addItem("(own)");
    for (const std::string& s : PressParams::scorerNames()) scorer_->addItem(QString::fromStdString(s));
    scorer_->setToolTip("AdaKV, ChunkKV (both forms), CAKE, per-layer, CriticalKV, CriticalAdaKV: the scores\n"
                        "they rank by; "
                        "(own): SnapKV's votes for all but CAKE, CAKE's eviction indicator for CAKE");
    form->addRow("Scorer", scorer_);
    auto real = [&](const char* name, double lo, double hi, double step, int decimals, double value, const char* tip) {
        auto* box = new QDoubleSpinBox;
        box->setObjectName(name);
        box->setRange(lo, hi);
        box->setSingleStep(step);
        box->setDecimals(decimals);
        box->setValue(value);
        box->setToolTip(tip);
        return box;
    };
    tau1_ = real("tau1", 0.05, 100.0, 0.1, 2, defaults.tau1,
                 "CAKE: a layer's preference is entropy^(1/tau1) x variance^(1/tau2) of its window's attention");
    tau2_ = real("tau2", 0.05, 100.0, 0.1, 2, defaults.tau2, "CAKE: see tau1");
    auto* tauRow = new QHBoxLayout;
    tauRow->addWidget(tau1_);
    tauRow->addWidget(tau2_);
    form->addRow("Tau 1, 2", tauRow);
    gamma_ = real("gamma", 0.0, 1e6, 10.0, 1, defaults.gamma,
                  "CAKE's eviction indicator: the window attention's mean + gamma x its variance");
    form->addRow("Gamma", gamma_);
    lazy_ = real("lazy", 0.0, 1.0, 0.05, 2, defaults.lazy,
                 "SimLayerKV: a layer whose last query gives the sinks and the recent positions more than\n"
                 "this share of its attention keeps only them (Llama 3 0.9, Llama 2 0.65, Mistral 0.8, Qwen 0.85)");
    form->addRow("Lazy above", lazy_);
    sketch_ = spin("sketch", 1, 4096, int(defaults.sketch),
                   "LeverageScore, Compactor: columns of the Gaussian sketch of each head's pre-RoPE keys");
    attnChunk_ = spin("attnChunk", 1, 1 << 20, int(defaults.attnChunk),
                      "Non-causal attention, Compactor: each query attends to every key of its chunk of\n"
                      "this many positions, before and after it (the first use replays the prompt)");
    auto* compactorRow = new QHBoxLayout;
    compactorRow->addWidget(sketch_);
    compactorRow->addWidget(attnChunk_);
    form->addRow("Sketch, chunk", compactorRow);
    blend_ = real("blend", -1.0, 100.0, 0.05, 2, defaults.blend,
                  "Compactor: the leverage scores' weight beside the non-causal attention's;\n"
                  "auto: the compression ratio 1 - B/T, as kvpress");
    blend_->setSpecialValueText("auto");
    form->addRow("Blend", blend_);
    think_ = real("think", 0.0, 0.95, 0.05, 2, defaults.think,
                  "ThinK, over any method: the share of each kept prompt key's channels pruned (zeroed), those of\n"
                  "lowest window-query x key energy; the Memory panel leaves them out of the KV bytes");
    form->addRow("ThinK channels", think_);
    repeatChunk_ = spin("repeatChunk", 1, 1 << 20, int(defaults.repeatChunk),
                        "KVzip: the prompt positions the model repeats per reconstruction pass (each pass\n"
                        "reads the whole prompt's KV; the first use runs the prompt a second time)");
    form->addRow("Repeat chunk", repeatChunk_);
    finchChunk_ = spin("finchChunk", 1, 1 << 20, int(defaults.finchChunk),
                       "Finch: the context positions prefilled per step, each followed by the question (the\n"
                       "last --window tokens) and an eviction to the step's share; each budget runs its own prefill");
    form->addRow("Finch chunk", finchChunk_);
    layerWeights_ = new QLineEdit;
    layerWeights_->setObjectName("layerWeights");
    layerWeights_->setPlaceholderText("equal");
    layerWeights_->setToolTip("Per-layer: each layer's share of the total budget, one weight per layer\n"
                              "(e.g. 4,2,1,1); empty: every layer the same budget");
    form->addRow("Layer weights", layerWeights_);
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
    connect(window_, qOverload<int>(&QSpinBox::valueChanged), this, changed);
    connect(kernel_, qOverload<int>(&QSpinBox::valueChanged), this, changed);
    connect(pooling_, &QComboBox::currentTextChanged, this, changed);
    connect(beta_, qOverload<double>(&QDoubleSpinBox::valueChanged), this, changed);
    connect(alpha_, qOverload<double>(&QDoubleSpinBox::valueChanged), this, changed);
    connect(gqa_, &QComboBox::currentTextChanged, this, changed);
    connect(convention_, &QComboBox::currentTextChanged, this, [this, changed](const QString& text) {
        // kvpress pools by avg and averages each KV head's query heads: the only settings it has.
        if (text == "kvpress") {
            const bool was = quiet_;
            quiet_ = true;
            pooling_->setCurrentText("avg");
            gqa_->setCurrentText("kv-head");
            quiet_ = was;
        }
        updateEnabled();  // chunkkv and finch read their kvpress twin's knobs under kvpress
        changed();
    });
    for (QSpinBox* box : {sinks_, lag_, chunk_, future_, sketch_, attnChunk_, repeatChunk_, finchChunk_})
        connect(box, qOverload<int>(&QSpinBox::valueChanged), this, changed);
    for (QDoubleSpinBox* box : {tau1_, tau2_, gamma_, lazy_, blend_, think_})
        connect(box, qOverload<double>(&QDoubleSpinBox::valueChanged), this, changed);
    connect(layerWeights_, &QLineEdit::editingFinished, this, changed);
    connect(think_, qOverload<double>(&QDoubleSpinBox::valueChanged), this, [this] { updateEnabled(); });
    connect(scorer_, &QComboBox::currentTextChanged, this, [this, changed] {
        updateEnabled();
        changed();
    });
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
    p.window = window_->value();
    p.kernel = kernel_->value();
    p.pooling = pooling_->currentText() == "avg" ? Pooling::Avg : Pooling::Max;
    p.beta = beta_->value();
    p.alpha = alpha_->value();
    p.gqa = gqa_->currentText() == "query-head" ? GqaMode::QueryHead : GqaMode::KvHead;
    p.convention = convention_->currentText() == "kvpress" ? Convention::Kvpress : Convention::Paper;
    p.method = methods::underConvention(p.method, p.convention);  // chunkkv under kvpress: chunkkv-kvpress
    p.sinks = sinks_->value();
    p.lag = lag_->value();
    p.chunk = chunk_->value();
    p.future = future_->value();
    if (p.takesScorer() && scorer_->currentIndex() > 0) p.scorer = scorer_->currentText().toStdString();
    p.tau1 = tau1_->value();
    p.tau2 = tau2_->value();
    p.gamma = gamma_->value();
    p.lazy = lazy_->value();
    p.sketch = sketch_->value();
    p.attnChunk = attnChunk_->value();
    p.repeatChunk = repeatChunk_->value();
    p.finchChunk = finchChunk_->value();
    // Below 0 (the spin box's "auto" and the step above it) is the compression ratio.
    p.blend = blend_->value() < 0.0 ? -1.0 : blend_->value();
    p.think = think_->value();
    if (p.reads(Knob::LayerWeights)) {
        // A word that is not a number stays in the list as NaN, which validate() names.
        for (const QString& w : layerWeights_->text().split(',', Qt::SkipEmptyParts)) {
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
    window_->setMaximum(windowMaximum(p));
    window_->setValue(int(p.window));
    kernel_->setValue(int(p.kernel));
    pooling_->setCurrentText(p.pooling == Pooling::Avg ? "avg" : "max");
    beta_->setValue(p.beta);
    alpha_->setValue(p.alpha);
    gqa_->setCurrentText(p.gqa == GqaMode::QueryHead ? "query-head" : "kv-head");
    convention_->setCurrentText(conventionName(p.convention));
    sinks_->setValue(int(p.sinks));
    lag_->setValue(int(p.lag));
    chunk_->setValue(int(p.chunk));
    future_->setValue(int(p.future));
    scorer_->setCurrentIndex(p.scorer.empty() ? 0 : std::max(0, scorer_->findText(QString::fromStdString(p.scorer))));
    tau1_->setValue(p.tau1);
    tau2_->setValue(p.tau2);
    gamma_->setValue(p.gamma);
    lazy_->setValue(p.lazy);
    sketch_->setValue(int(p.sketch));
    attnChunk_->setValue(int(p.attnChunk));
    repeatChunk_->setValue(int(p.repeatChunk));
    finchChunk_->setValue(int(p.finchChunk));
    blend_->setValue(p.blend < 0.0 ? blend_->minimum() : p.blend);
    think_->setValue(p.think);
    QStringList weights;
    for (double w : p.layerWeights) weights << QString::number(w, 'g', 6);
    layerWeights_->setText(weights.join(','));
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
    probe.convention = convention_->currentText() == "kvpress" ? Convention::Kvpress : Convention::Paper;
    probe.method = methods::underConvention(method_->currentText().toStdString(), probe.convention);
    if (probe.takesScorer() && scorer_->currentIndex() > 0) probe.scorer = scorer_->currentText().toStdString();
    probe.think = think_->value();
    // A control is enabled exactly when the method table says the method in effect reads
    // its knob (ThinK reads the window, whatever the method).
    const KnobSet reads = methods::effectiveKnobs(probe);
    const std::pair<Knob, QWidget*> controls[] = {
        {Knob::Window, window_},     {Knob::Scorer, scorer_},         {Knob::Kernel, kernel_},
        {Knob::Pooling, pooling_},   {Knob::Gqa, gqa_},               {Knob::Beta, beta_},
        {Knob::Alpha, alpha_},       {Knob::Sinks, sinks_},           {Knob::Lag, lag_},
        {Knob::Chunk, chunk_},       {Knob::Future, future_},         {Knob::Tau1, tau1_},
        {Knob::Tau2, tau2_},         {Knob::Gamma, gamma_},           {Knob::Lazy, lazy_},
        {Knob::LayerWeights, layerWeights_}, {Knob::Sketch, sketch_}, {Knob::AttnChunk, attnChunk_},
        {Knob::RepeatChunk, repeatChunk_},   {Knob::FinchChunk, finchChunk_}, {Knob::Blend, blend_},
        {Knob::Convention, convention_},
    };
    for (const auto& [knob, widget] : controls) widget->setEnabled(reads.has(knob));
    window_->setMaximum(windowMaximum(probe));
}

int MethodsPanel::windowMaximum(const PressParams& p) {
    // Finch's question (its window) may be longer than the 64 window queries a capture keeps.
    const MethodInfo* m = p.info();
    return m && m->needs.has(Need::SecondPrefill) ? (1 << 20) : int(PressParams::kMaxQuerySinks);
}

}  // namespace kvlens::ui
