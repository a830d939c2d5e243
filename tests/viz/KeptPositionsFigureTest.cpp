// The kept-positions figure of `kvlens inspect` at prompt lengths beyond one pixel
// column per position: its plot width is asked of a share-kept (colour bar) figure,
// which must take a value panel (a long prompt's inspect once failed here, after the
// whole prefill). And the end a method keeps whole is named as the caller says (the
// observation window, or LagKV's tail).
#include <gtest/gtest.h>

#include "core/Selection.h"
#include "viz/CsvTable.h"
#include "viz/HeatmapFigure.h"
#include "viz/KeptPositionsFigure.h"

namespace kvlens::viz {
namespace {

Selection longSelection(int64_t T) {
    Selection s;
    s.promptLength = T;
    s.queryHeads = 8;
    s.kvHeads = 2;
    s.kept.assign(1, std::vector<std::vector<int32_t>>(2));
    for (int32_t p = 0; p < T; p += 7) s.kept[0][0].push_back(p);
    for (int32_t p = int32_t(T) - 64; p < T; ++p) s.kept[0][1].push_back(p);
    return s;
}

TEST(KeptPositionsFigure, LongPromptsDrawTheShareKeptPerColumn) {
    for (int64_t T : {300, 5000, 32406}) {
        const Selection s = longSelection(T);
        const int exactWidth = KeptPositionsFigure::plotWidth(s, 1600, 400, true);
        const int shareWidth = KeptPositionsFigure::plotWidth(s, 1600, 400, false);
        EXPECT_GT(exactWidth, 100);
        EXPECT_GT(shareWidth, 100);
        const bool exact = T <= exactWidth;
        EXPECT_EQ(exact, T == 300);
        HeatmapFigure fig(1600, 400);
        KeptPositionsFigure::setScale(fig, exact);
        fig.setYAxis(KeptPositionsFigure::headAxis(s), "");
        KeptPositionsFigure::addLayer(fig, s, 0, T - 64, exact, "L0");
        EXPECT_NO_THROW(fig.plotWidth()) << T;
    }
}

TEST(KeptPositionsFigure, TheKeptEndIsNamedAsTheCallerSays) {
    const Selection s = longSelection(300);
    for (const std::string name : {"observation window", "LagKV's tail"}) {
        HeatmapFigure fig(1600, 400);
        KeptPositionsFigure::setScale(fig, true, name);
        KeptPositionsFigure::addLayer(fig, s, 0, 300 - 100, true, "L0");
        const CsvTable t = fig.csv();
        ASSERT_EQ(t.rows().size(), 2u * 300u);
        // Kept positions from 200 on are the end kept whole, named so: head 0 keeps every 7th
        // position, head 1 the last 64.
        EXPECT_EQ(t.rows()[196].back(), "kept");
        EXPECT_EQ(t.rows()[203].back(), name);
        EXPECT_EQ(t.rows()[204].back(), "not kept");
        EXPECT_EQ(t.rows()[300 + 235].back(), "not kept");
        EXPECT_EQ(t.rows()[300 + 236].back(), name);
        EXPECT_EQ(t.rows()[300 + 299].back(), name);
    }
}

}  // namespace
}  // namespace kvlens::viz
