// The shared number, size and run-name text of the panels.
#include <gtest/gtest.h>

#include <limits>

#include "ui/DisplayText.h"

namespace kvlens::ui {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

TEST(DisplayText, BytesInDecimalUnits) {
    EXPECT_EQ(DisplayText::bytes(0), "0 B");
    EXPECT_EQ(DisplayText::bytes(999), "999 B");
    EXPECT_EQ(DisplayText::bytes(23'100), "23.1 KB");
    EXPECT_EQ(DisplayText::bytes(184'500'000), "184.5 MB");
    EXPECT_EQ(DisplayText::bytes(3'120'000'000), "3.1 GB");
}

TEST(DisplayText, NumbersAndNotMeasured) {
    EXPECT_EQ(DisplayText::percent(0.125), "12.5%");
    EXPECT_EQ(DisplayText::percent(kNaN), "n/a");
    EXPECT_EQ(DisplayText::real(0.0123456), "0.0123");
    EXPECT_EQ(DisplayText::real(kNaN), "n/a");
    EXPECT_EQ(DisplayText::percentDelta(0.05), "+5.0%");
    EXPECT_EQ(DisplayText::percentDelta(-0.05), "-5.0%");
    EXPECT_EQ(DisplayText::percentDelta(kNaN), "n/a");
    EXPECT_EQ(DisplayText::realDelta(-0.002), "-0.002");
}

TEST(DisplayText, ByteTokensOfControlCharactersReadAsSymbols) {
    EXPECT_EQ(DisplayText::piece("<0x0A>"), QString::fromUtf8("\u21b5\n"));
    EXPECT_EQ(DisplayText::piece("<0x09>"), QString::fromUtf8("\u21e5"));
    EXPECT_EQ(DisplayText::piece("<0x0D>"), QString::fromUtf8("\u240d"));
    EXPECT_EQ(DisplayText::piece("<0x41>"), "A");
    EXPECT_EQ(DisplayText::piece("<0xE2>"), "<0xE2>");  // a UTF-8 lead byte alone: as it is
    EXPECT_EQ(DisplayText::piece("<0x0G>"), "<0x0G>");
    EXPECT_EQ(DisplayText::piece("<0x0A"), "<0x0A");
    EXPECT_EQ(DisplayText::piece(" magic"), " magic");
    EXPECT_EQ(DisplayText::piece(""), "");
}

TEST(DisplayText, MethodAndBudget) {
    PressParams p;
    p.method = "snapkv";
    p.budget = 64;
    EXPECT_EQ(DisplayText::method(p), "snapkv B=64");
    EXPECT_EQ(DisplayText::budgetEntries(p, 512), 64);
    p.budget = 0;
    p.budgetRatio = 0.125;
    EXPECT_EQ(DisplayText::method(p), "snapkv B=12.5%");
    EXPECT_EQ(DisplayText::budgetEntries(p, 512), 64);
    p.method = "full";
    EXPECT_EQ(DisplayText::method(p), "full");
}

}  // namespace
}  // namespace kvlens::ui
