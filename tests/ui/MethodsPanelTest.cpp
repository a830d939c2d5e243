// The Methods & budgets panel: one paramsChanged per user change with the new values,
// and no silent budget change when a shorter prompt narrows the slider.
#include "ui/MethodsPanel.h"

#include <gtest/gtest.h>

#include <QDoubleSpinBox>
#include <QRadioButton>
#include <QSignalSpy>
#include <QSlider>
#include <QSpinBox>

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

}  // namespace
}  // namespace kvlens::ui
