// The Model & prompt panel's "compress every" tooltip names the methods from the method
// table's decode forms: every method that compresses while decoding, and no other; its
// sliding-window choice reaches the load options.
#include <gtest/gtest.h>

#include <QComboBox>
#include <QSpinBox>

#include "core/Methods.h"
#include "ui/ModelPromptPanel.h"

namespace kvlens::ui {
namespace {

TEST(ModelPromptPanelTest, TheDecodeTooltipNamesExactlyTheMethodsWithADecodeForm) {
    ModelPromptPanel panel;
    const auto* every = panel.findChild<QSpinBox*>("decodeEvery");
    ASSERT_NE(every, nullptr);
    const std::string tip = every->toolTip().toStdString();
    const std::string rule = tip.substr(0, tip.find(" with --scorer "));
    for (const MethodInfo& m : methods::all()) {
        // Whole words: "chunkkv" is not "chunkkv-kvpress".
        const std::string name = m.name;
        bool named = false;
        for (size_t at = rule.find(name); at != std::string::npos; at = rule.find(name, at + 1)) {
            const char before = at == 0 ? ' ' : rule[at - 1], after = at + name.size() < rule.size() ? rule[at + name.size()] : ' ';
            if ((before == ' ' || before == '(' || before == '\n') && (after == ',' || after == ';' || after == ' ' || after == '\n'))
                named = true;
        }
        EXPECT_EQ(named, m.decode != DecodeForm::None) << name << " in: " << tip;
    }
    // The scorers a wrapper decodes by: those with a decode form of their own.
    EXPECT_NE(tip.find("with --scorer snapkv, h2o, tova, knorm, keydiff, lagkv, expected or cur"), std::string::npos) << tip;
}

// The sliding-window choice reaches the load options (the CLI's --sliding-window).
TEST(ModelPromptPanelTest, TheSlidingWindowChoiceReachesTheLoadOptions) {
    ModelPromptPanel panel;
    auto* window = panel.findChild<QComboBox*>("slidingWindow");
    ASSERT_NE(window, nullptr);
    EXPECT_EQ(window->currentText().toStdString(), "window: apply");
    EXPECT_FALSE(panel.loadOptions().ignoreSlidingWindow);
    window->setCurrentIndex(1);
    EXPECT_TRUE(panel.loadOptions().ignoreSlidingWindow);
}

}  // namespace
}  // namespace kvlens::ui
