// The Methods & budgets panel: one paramsChanged per user change with the new values,
// and no silent budget change when a shorter prompt narrows the slider.
#include "ui/MethodsPanel.h"

#include <cctype>
#include <cmath>

#include "core/Error.h"

#include <gtest/gtest.h>

#include <QComboBox>
#include <QDoubleSpinBox>
#include <QLabel>
#include <QLineEdit>
#include <QRadioButton>
#include <QSignalSpy>
#include <QSlider>
#include <QSpinBox>
#include <QMenu>
#include <QToolButton>

namespace kvlens::ui {
namespace {

TEST(MethodsPanelTest, SetBudgetEntriesEmitsOnceWithTheNewBudget) {
    MethodsPanel panel;
    panel.setPromptLength(2000);
    std::vector<int64_t> seen;
    QObject::connect(&panel, &MethodsPanel::paramsChanged, &panel, [&] { seen.push_back(panel.params().budget); });
    panel.setBudgetEntries(300);
    ASSERT_EQ(seen.size(), 1u);
    EXPECT_EQ(seen[0], 300);
    // From ratio mode too: one emission, already in entries.
    panel.findChild<QRadioButton*>()->setChecked(false);
    for (auto* b : panel.findChildren<QRadioButton*>())
        if (b->text() == "ratio") b->setChecked(true);
    seen.clear();
    panel.setBudgetEntries(150);
    ASSERT_EQ(seen.size(), 1u);
    EXPECT_EQ(seen[0], 150);
}

TEST(MethodsPanelTest, TheSliderMovesTheBudgetAndEmitsOnce) {
    MethodsPanel panel;
    panel.setPromptLength(1000);
    QSignalSpy changed(&panel, &MethodsPanel::paramsChanged);
    panel.findChild<QSlider*>("budgetSlider")->setValue(420);
    EXPECT_EQ(changed.size(), 1);
    EXPECT_EQ(panel.params().budget, 420);
    EXPECT_EQ(panel.findChild<QSpinBox*>("budget")->value(), 420);
}

TEST(MethodsPanelTest, AShorterPromptDoesNotChangeTheBudget) {
    MethodsPanel panel;
    panel.setPromptLength(2000);
    panel.setBudgetEntries(900);
    QSignalSpy changed(&panel, &MethodsPanel::paramsChanged);
    panel.setPromptLength(100);
    EXPECT_EQ(changed.size(), 0);
    EXPECT_EQ(panel.params().budget, 900);
    // Ratio mode keeps its ratio as typed.
    for (auto* b : panel.findChildren<QRadioButton*>())
        if (b->text() == "ratio") b->setChecked(true);
    panel.findChild<QDoubleSpinBox*>("budgetRatio")->setValue(12.5);
    panel.setPromptLength(7);
    EXPECT_DOUBLE_EQ(panel.params().budgetRatio, 0.125);
    EXPECT_EQ(panel.params().budget, 0);
}

// Controls a method does not use are disabled: the GQA mode is only the voting
// methods' (H2O, StreamingLLM and Random always select per KV head), the window
// every method that keeps one (Random included), kernel and pooling SnapKV's kin.
TEST(MethodsPanelTest, TheKeptByMenuChoosesTheComparedMethods) {
    MethodsPanel panel;
    const QStringList all = {"snapkv", "pyramidkv", "streamingllm", "adakv", "random", "tova",
                             "knorm",  "keydiff",   "lagkv",        "chunkkv", "expected", "cur",
                             "cake",   "simlayerkv", "perlayer", "leverage", "finch-kvpress", "chunkkv-kvpress"};
    // Every method but FullKV and those whose first use replays the prompt (H2O,
    // non-causal attention, Compactor), projects every value (CriticalKV, CriticalAdaKV) or
    // reconstructs the prompt (KVzip), or prefills it again for each budget (Finch).
    EXPECT_EQ(panel.comparedMethods(), all);
    EXPECT_EQ(MethodsPanel::defaultComparedMethods(), all);
    auto* button = panel.findChild<QToolButton*>("comparedMethods");
    ASSERT_NE(button, nullptr);
    EXPECT_EQ(button->text(), "18 of 25 methods");
    QSignalSpy changed(&panel, &MethodsPanel::comparedMethodsChanged);
    QSignalSpy params(&panel, &MethodsPanel::paramsChanged);
    for (QAction* a : button->menu()->actions())
        if (a->text() == "h2o" || a->text() == "random") a->toggle();  // as a click on the menu
    EXPECT_EQ(changed.size(), 2);
    EXPECT_EQ(params.size(), 0);  // the compared methods are not the selection's parameters
    EXPECT_TRUE(panel.comparedMethods().contains("h2o"));
    EXPECT_FALSE(panel.comparedMethods().contains("random"));
    panel.setComparedMethods({"tova", "no-such-method", "full"});
    EXPECT_EQ(panel.comparedMethods(), QStringList{"tova"});
    EXPECT_EQ(changed.size(), 3);  // one signal for the whole list
    EXPECT_EQ(button->text(), "1 of 25 methods");
    panel.setComparedMethods({});
    EXPECT_EQ(button->text(), "no other method");
}

// Driven by the method table: for every method, and every scorer of those that take one,
// each control is enabled exactly when the table says the method in effect reads its knob.
// (The hand-written matrix below checks the table's facts themselves.)
TEST(MethodsPanelTest, EveryControlFollowsTheMethodTable) {
    MethodsPanel panel;
    panel.setPromptLength(1000);
    // A knob's control is named after its JSON key in camel case (layer_weights: layerWeights).
    auto controlOf = [&](const KnobInfo& k) {
        std::string name;
        bool upper = false;
        for (const char* c = k.json; *c; ++c) {
            if (*c == '_') {
                upper = true;
                continue;
            }
            name += upper ? char(std::toupper(static_cast<unsigned char>(*c))) : *c;
            upper = false;
        }
        return panel.findChild<QWidget*>(QString::fromStdString(name));
    };
    int checked = 0;
    for (const MethodInfo& m : methods::all()) {
        std::vector<std::string> scorers = {""};
        if (m.takesScorer) scorers = methods::scorerNames();
        for (const std::string& scorer : scorers) {
            PressParams p = panel.params();
            p.method = m.name;
            p.scorer = scorer;
            p.think = 0.0;
            p.budget = 128;
            panel.setParams(p);
            ASSERT_EQ(panel.params().method, m.name);
            const KnobSet reads = methods::effectiveKnobs(panel.params());
            for (const KnobInfo& k : methods::knobs()) {
                QWidget* w = controlOf(k);
                // The seed has no control; ThinK's is always on.
                if (k.knob == Knob::Seed) continue;
                ASSERT_NE(w, nullptr) << "no control for " << k.flag;
                if (k.knob == Knob::Think) {
                    EXPECT_TRUE(w->isEnabled());
                    continue;
                }
                EXPECT_EQ(w->isEnabled(), reads.has(k.knob)) << m.name << " --scorer '" << scorer << "': " << k.flag;
                ++checked;
            }
        }
    }
    EXPECT_GT(checked, 26 * 20);
}

// The controls are made from the knob table: one per knob (the seed aside), named after its
// JSON key, of its type's widget, its words in its list, its range inside the table's, its
// tooltip the table's help, flag and default; every knob set away from its default shows and
// reads back as the same value.
TEST(MethodsPanelTest, EveryKnobsControlIsMadeFromTheKnobTableAndReadsBack) {
    MethodsPanel panel;
    panel.setPromptLength(1000);
    PressParams want;
    want.method = "pyramidkv";
    want.budget = 200;
    want.window = 17, want.kernel = 5, want.pooling = Pooling::Avg, want.gqa = GqaMode::QueryHead;
    want.beta = 7.5, want.schedule = PyramidSchedule::Factory, want.alpha = 0.35, want.sinks = 9, want.lag = 33;
    want.chunk = 7, want.future = 99, want.tau1 = 2.5, want.tau2 = 0.25, want.gamma = 123.5, want.lazy = 0.7;
    want.sketch = 31, want.attnChunk = 77, want.repeatChunk = 1000, want.finchChunk = 300, want.blend = 0.25;
    want.think = 0.15;
    panel.setParams(want);
    const PressParams got = panel.params();
    for (const KnobInfo& k : methods::knobs()) {
        std::string name;
        for (size_t i = 0; k.json[i]; ++i)
            name += k.json[i] == '_' ? char(std::toupper(static_cast<unsigned char>(k.json[++i]))) : k.json[i];
        QWidget* w = panel.findChild<QWidget*>(QString::fromStdString(name));
        if (k.knob == Knob::Seed) {
            EXPECT_EQ(w, nullptr);
            continue;
        }
        ASSERT_NE(w, nullptr) << k.flag;
        const std::string tip = w->toolTip().toStdString();
        EXPECT_NE(tip.find(k.help), std::string::npos) << k.flag << ": " << tip;
        EXPECT_NE(tip.find(std::string(k.flag) + ": "), std::string::npos) << tip;
        EXPECT_NE(tip.find(std::string("default ") + k.defaultText), std::string::npos) << tip;
        switch (k.type) {
            case KnobType::Int: {
                auto* box = qobject_cast<QSpinBox*>(w);
                ASSERT_NE(box, nullptr) << k.flag;
                EXPECT_GE(box->minimum(), k.min) << k.flag;
                EXPECT_LE(box->maximum(), k.max) << k.flag;
                break;
            }
            case KnobType::Real: EXPECT_NE(qobject_cast<QDoubleSpinBox*>(w), nullptr) << k.flag; break;
            case KnobType::Word: {
                auto* list = qobject_cast<QComboBox*>(w);
                ASSERT_NE(list, nullptr) << k.flag;
                QStringList items;
                for (int i = 0; i < list->count(); ++i) items << list->itemText(i);
                EXPECT_EQ(items.join('|').toStdString(), k.words);
                break;
            }
            case KnobType::Name: EXPECT_NE(qobject_cast<QComboBox*>(w), nullptr) << k.flag; break;
            case KnobType::Reals: EXPECT_NE(qobject_cast<QLineEdit*>(w), nullptr) << k.flag; break;
            case KnobType::Seed: break;
        }
        // Shown and read back (the layer weights are read only by per-layer, the scorer only by a wrapper).
        if (k.knob != Knob::LayerWeights && k.knob != Knob::Scorer) {
            EXPECT_EQ(methods::knobValue(got, k.knob), methods::knobValue(want, k.knob)) << k.flag;
        }
    }
    // A wrapper's scorer and per-layer's weights read back too.
    want.method = "perlayer";
    want.scorer = "keydiff";
    want.layerWeights = {4, 2, 1.5, 1};
    panel.setParams(want);
    EXPECT_EQ(panel.params().scorer, "keydiff");
    EXPECT_EQ(panel.params().layerWeights, want.layerWeights);
    // An automatic blend reads "auto" and back.
    want.blend = -1.0;
    panel.setParams(want);
    EXPECT_EQ(panel.findChild<QDoubleSpinBox*>("blend")->text(), "auto");
    EXPECT_EQ(methods::knobValue(panel.params(), Knob::Blend), "auto");
}

// Under kvpress's convention the panel's ChunkKV is kvpress's port of it: the parameters name
// chunkkv-kvpress, whose SnapKV scorer pools its votes (kernel on), where ChunkKV ranks the
// unpooled votes (kernel off); back under the paper's convention it is ChunkKV again.
TEST(MethodsPanelTest, ChunkKvUnderKvpressIsItsKvpressTwin) {
    MethodsPanel panel;
    panel.setPromptLength(1000);
    PressParams p = panel.params();
    p.method = "chunkkv";
    p.budget = 128;
    panel.setParams(p);
    auto* convention = panel.findChild<QComboBox*>("convention");
    auto* kernel = panel.findChild<QWidget*>("kernel");
    ASSERT_NE(convention, nullptr);
    ASSERT_NE(kernel, nullptr);
    EXPECT_TRUE(convention->isEnabled());
    EXPECT_FALSE(kernel->isEnabled());
    convention->setCurrentText("kvpress");
    EXPECT_EQ(panel.params().method, "chunkkv-kvpress");
    EXPECT_EQ(panel.params().convention, Convention::Kvpress);
    EXPECT_TRUE(kernel->isEnabled());
    convention->setCurrentText("paper");
    EXPECT_EQ(panel.params().method, "chunkkv");
    EXPECT_FALSE(kernel->isEnabled());
}

// The note under the controls where a method compares its scorer's scores across heads
// and the table says they share no scale there (review 5c): AdaKV ranking KNorm's.
TEST(MethodsPanelTest, ANoteWhereScoresAreComparedAcrossHeadsWithoutACommonScale) {
    MethodsPanel panel;
    panel.setPromptLength(1000);
    auto* note = panel.findChild<QLabel*>("crossHeadNote");
    auto* scorer = panel.findChild<QComboBox*>("scorer");
    auto* convention = panel.findChild<QComboBox*>("convention");
    ASSERT_NE(note, nullptr);
    ASSERT_NE(scorer, nullptr);
    ASSERT_NE(convention, nullptr);
    PressParams p = panel.params();
    p.method = "adakv";
    p.scorer = "snapkv";
    p.budget = 128;
    panel.setParams(p);
    EXPECT_TRUE(note->isHidden());
    scorer->setCurrentText("knorm");
    EXPECT_FALSE(note->isHidden());
    EXPECT_NE(note->text().indexOf("adakv compares knorm's scores across KV heads"), -1) << note->text().toStdString();
    scorer->setCurrentText("h2o");
    EXPECT_TRUE(note->isHidden());
    // ChunkKV ranks each head's chunks on its own; its kvpress form sums the heads' scores.
    p.method = "chunkkv";
    p.scorer = "expected";
    panel.setParams(p);
    EXPECT_TRUE(note->isHidden());
    convention->setCurrentText("kvpress");
    EXPECT_FALSE(note->isHidden());
    EXPECT_NE(note->text().indexOf("chunkkv-kvpress compares expected's scores"), -1) << note->text().toStdString();
}

TEST(MethodsPanelTest, ControlsAMethodIgnoresAreDisabled) {
    MethodsPanel panel;
    panel.setPromptLength(1000);
    struct Want {
        const char* method;
        bool gqa, window, kernel, beta, alpha, sinks = false, lag = false, chunk = false, future = false;
        bool scorer = false, tau = false, gamma = false, lazy = false, weights = false;
        bool sketch = false, attnChunk = false, blend = false, repeatChunk = false, finchChunk = false;
    };
    const Want wants[] = {{"full", false, false, false, false, false},
                          {"snapkv", true, true, true, false, false},
                          {"pyramidkv", true, true, true, true, false},
                          {"adakv", true, true, true, false, true, false, false, false, false, true},
                          {"h2o", false, true, false, false, false},
                          {"random", false, true, false, false, false},
                          {"streamingllm", false, false, false, false, false, true},
                          {"lagkv", false, false, false, false, false, true, true},
                          {"chunkkv", true, true, false, false, false, false, false, true, false, true},
                          {"expected", false, false, false, false, false, true, false, false, true},
                          {"cur", false, false, false, false, false, true},
                          {"cake", false, true, false, false, false, false, false, false, false, true, true, true},
                          {"simlayerkv", false, false, false, false, false, true, false, false, false, false, false,
                           false, true},
                          {"perlayer", true, true, true, false, false, false, false, false, false, true, false, false,
                           false, true},
                          {"leverage", false, false, false, false, false, false, false, false, false, false, false,
                           false, false, false, true},
                          {"noncausal", false, false, false, false, false, false, false, false, false, false, false,
                           false, false, false, false, true},
                          {"compactor", false, true, false, false, false, true, false, false, false, false, false,
                           false, false, false, true, true, true},
                          {"criticalkv", true, true, true, false, false, false, false, false, false, true},
                          {"criticaladakv", true, true, true, false, true, false, false, false, false, true},
                          {"kvzip", false, false, false, false, false, true, false, false, false, false, false,
                           false, false, false, false, false, false, true},
                          {"finch", false, true, false, false, false, false, false, false, false, false, false,
                           false, false, false, false, false, false, false, true},
                          {"finch-kvpress", false, true, false, false, false},
                          // kvpress's ChunkKV over SnapKV's pooled votes (its default scorer).
                          {"chunkkv-kvpress", false, true, true, false, false, false, false, true, false, true}};
    for (const Want& w : wants) {
        PressParams p = panel.params();
        p.method = w.method;
        p.budget = 128;
        panel.setParams(p);
        ASSERT_EQ(panel.params().method, w.method);
        EXPECT_EQ(panel.findChild<QWidget*>("gqa")->isEnabled(), w.gqa) << w.method;
        EXPECT_EQ(panel.findChild<QWidget*>("window")->isEnabled(), w.window) << w.method;
        EXPECT_EQ(panel.findChild<QWidget*>("kernel")->isEnabled(), w.kernel) << w.method;
        EXPECT_EQ(panel.findChild<QWidget*>("pool")->isEnabled(), w.kernel) << w.method;
        EXPECT_EQ(panel.findChild<QWidget*>("beta")->isEnabled(), w.beta) << w.method;
        EXPECT_EQ(panel.findChild<QWidget*>("alpha")->isEnabled(), w.alpha) << w.method;
        EXPECT_EQ(panel.findChild<QWidget*>("sinks")->isEnabled(), w.sinks) << w.method;
        EXPECT_EQ(panel.findChild<QWidget*>("lag")->isEnabled(), w.lag) << w.method;
        EXPECT_EQ(panel.findChild<QWidget*>("chunk")->isEnabled(), w.chunk) << w.method;
        EXPECT_EQ(panel.findChild<QWidget*>("future")->isEnabled(), w.future) << w.method;
        EXPECT_EQ(panel.findChild<QWidget*>("scorer")->isEnabled(), w.scorer) << w.method;
        EXPECT_EQ(panel.findChild<QWidget*>("tau1")->isEnabled(), w.tau) << w.method;
        EXPECT_EQ(panel.findChild<QWidget*>("tau2")->isEnabled(), w.tau) << w.method;
        EXPECT_EQ(panel.findChild<QWidget*>("gamma")->isEnabled(), w.gamma) << w.method;
        EXPECT_EQ(panel.findChild<QWidget*>("lazy")->isEnabled(), w.lazy) << w.method;
        EXPECT_EQ(panel.findChild<QWidget*>("layerWeights")->isEnabled(), w.weights) << w.method;
        EXPECT_EQ(panel.findChild<QWidget*>("sketch")->isEnabled(), w.sketch) << w.method;
        EXPECT_EQ(panel.findChild<QWidget*>("attnChunk")->isEnabled(), w.attnChunk) << w.method;
        EXPECT_EQ(panel.findChild<QWidget*>("blend")->isEnabled(), w.blend) << w.method;
        EXPECT_EQ(panel.findChild<QWidget*>("repeatChunk")->isEnabled(), w.repeatChunk) << w.method;
        EXPECT_EQ(panel.findChild<QWidget*>("finchChunk")->isEnabled(), w.finchChunk) << w.method;
        EXPECT_TRUE(panel.findChild<QWidget*>("think")->isEnabled()) << w.method;  // ThinK goes over any method
    }
    {
        // ThinK scores channels by the window's queries: the window comes on with it, even
        // for KNorm, and goes off again without it.
        PressParams t = panel.params();
        t.method = "knorm";
        t.think = 0.5;
        panel.setParams(t);
        EXPECT_EQ(panel.params().think, 0.5);
        EXPECT_TRUE(panel.findChild<QWidget*>("window")->isEnabled());
        panel.findChild<QDoubleSpinBox*>("think")->setValue(0.0);
        EXPECT_FALSE(panel.findChild<QWidget*>("window")->isEnabled());
        // One step up from Compactor's "auto" blend is still auto, not a refused -0.95.
        t.method = "compactor";
        t.think = 0.0;
        t.blend = -1.0;
        panel.setParams(t);
        panel.findChild<QDoubleSpinBox*>("blend")->stepUp();
        EXPECT_EQ(panel.params().blend, -1.0);
    }
    // Compactor's blend: "auto" (the compression ratio) at its minimum, a number otherwise;
    // both read back as set. As a wrapper's scorer, its knobs and sinks come on.
    {
        PressParams c = panel.params();
        c.method = "compactor";
        c.blend = -1.0;
        panel.setParams(c);
        EXPECT_EQ(panel.findChild<QDoubleSpinBox*>("blend")->text(), "auto");
        EXPECT_EQ(panel.params().blend, -1.0);
        c.blend = 0.4;
        c.sketch = 20;
        c.attnChunk = 100;
        panel.setParams(c);
        EXPECT_DOUBLE_EQ(panel.params().blend, 0.4);
        EXPECT_EQ(panel.params().sketch, 20);
        EXPECT_EQ(panel.params().attnChunk, 100);
        c.method = "adakv";
        c.scorer = "compactor";
        panel.setParams(c);
        for (const char* on : {"sinks", "sketch", "attnChunk", "blend", "window"})
            EXPECT_TRUE(panel.findChild<QWidget*>(on)->isEnabled()) << on;
    }
    // A scorer changes what the wrapper's knobs mean: AdaKV scored by Expected Attention
    // takes its sinks and future, not SnapKV's kernel, pooling or GQA mode.
    PressParams p = panel.params();
    p.method = "adakv";
    p.scorer = "expected";
    panel.setParams(p);
    EXPECT_EQ(panel.params().scorer, "expected");
    for (const char* on : {"sinks", "future", "alpha", "window"}) EXPECT_TRUE(panel.findChild<QWidget*>(on)->isEnabled()) << on;
    for (const char* off : {"kernel", "pool", "gqa", "gamma"}) EXPECT_FALSE(panel.findChild<QWidget*>(off)->isEnabled()) << off;
    // ChunkKV scored by LagKV takes its sinks and lag.
    p.method = "chunkkv";
    p.scorer = "lagkv";
    p.lag = 48;
    panel.setParams(p);
    EXPECT_EQ(panel.params().scorer, "lagkv");
    EXPECT_EQ(panel.params().lag, 48);
    for (const char* on : {"sinks", "lag", "chunk", "window"}) EXPECT_TRUE(panel.findChild<QWidget*>(on)->isEnabled()) << on;
    for (const char* off : {"future", "kernel", "alpha"}) EXPECT_FALSE(panel.findChild<QWidget*>(off)->isEnabled()) << off;
    // A method that takes no scorer never carries one.
    p.method = "snapkv";
    panel.setParams(p);
    EXPECT_EQ(panel.params().scorer, "");
    // Per-layer's weights, shown and read back; a word that is not a number reaches
    // validate() as NaN, which names the flag.
    p.method = "perlayer";
    p.layerWeights = {4, 2, 1.5, 1};
    panel.setParams(p);
    EXPECT_EQ(panel.findChild<QLineEdit*>("layerWeights")->text(), "4,2,1.5,1");
    EXPECT_EQ(panel.params().layerWeights, p.layerWeights);
    panel.findChild<QLineEdit*>("layerWeights")->setText("4,x");
    const PressParams bad = panel.params();
    ASSERT_EQ(bad.layerWeights.size(), 2u);
    EXPECT_TRUE(std::isnan(bad.layerWeights[1]));
    try {
        bad.validateSettings();
        ADD_FAILURE() << "a NaN weight passed";
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "--layer-weights: nan is not a positive weight");
    }
}

// The knobs of LagKV, ChunkKV and Expected Attention (and the sinks) reach the
// parameters, each change as one paramsChanged, and setParams shows stored ones.
TEST(MethodsPanelTest, TheNewMethodsKnobsReachTheParameters) {
    MethodsPanel panel;
    QSignalSpy changed(&panel, &MethodsPanel::paramsChanged);
    panel.findChild<QSpinBox*>("sinks")->setValue(8);
    panel.findChild<QSpinBox*>("lag")->setValue(32);
    panel.findChild<QSpinBox*>("chunk")->setValue(6);
    panel.findChild<QSpinBox*>("future")->setValue(1024);
    EXPECT_EQ(changed.size(), 4);
    const PressParams p = panel.params();
    EXPECT_EQ(p.sinks, 8);
    EXPECT_EQ(p.lag, 32);
    EXPECT_EQ(p.chunk, 6);
    EXPECT_EQ(p.future, 1024);
    PressParams stored;
    stored.method = "lagkv";
    stored.budget = 300;
    stored.sinks = 16;
    stored.lag = 64;
    stored.chunk = 12;
    stored.future = 256;
    panel.setParams(stored);
    EXPECT_EQ(changed.size(), 4);  // quiet, as for any stored run
    const PressParams back = panel.params();
    EXPECT_EQ(back.sinks, 16);
    EXPECT_EQ(back.lag, 64);
    EXPECT_EQ(back.chunk, 12);
    EXPECT_EQ(back.future, 256);
}

}  // namespace
}  // namespace kvlens::ui
