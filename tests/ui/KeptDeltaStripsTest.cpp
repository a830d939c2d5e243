// The strips' colour per category and the column rule (kept categories by majority,
// ties to A only, then B only, then both; "neither" only for a span nothing kept),
// checked on the rule itself and on the pixels of a grabbed, downsampled picture.
#include <gtest/gtest.h>

#include "WidgetFixtures.h"
#include "ui/KeptDeltaStrips.h"

namespace kvlens::ui {
namespace {

using S = KeptDeltaStrips;

TEST(KeptDeltaStrips, ColumnRuleTakesTheMajorityOfKeptCategories) {
    const std::vector<uint8_t> cats = {S::Neither, S::AOnly, S::Both,    S::Both,
                                       S::Neither, S::BOnly, S::Neither, S::Neither};
    EXPECT_EQ(S::columnCategory(cats, 0, 4, S::Strip::Delta), S::Both);   // 2 both vs 1 A only
    EXPECT_EQ(S::columnCategory(cats, 0, 2, S::Strip::Delta), S::AOnly);  // 1 A only, 1 neither
    EXPECT_EQ(S::columnCategory(cats, 4, 8, S::Strip::Delta), S::BOnly);  // 3 neither, 1 B only
    EXPECT_EQ(S::columnCategory(cats, 6, 8, S::Strip::Delta), S::Neither);
    // Ties: A only, then B only, then both.
    const std::vector<uint8_t> tie = {S::AOnly, S::BOnly, S::Both};
    EXPECT_EQ(S::columnCategory(tie, 0, 3, S::Strip::Delta), S::AOnly);
    EXPECT_EQ(S::columnCategory(tie, 1, 3, S::Strip::Delta), S::BOnly);
    // A's strip never shows B only (and B's never A only).
    const std::vector<uint8_t> bHeavy = {S::BOnly, S::BOnly, S::Both};
    EXPECT_EQ(S::columnCategory(bHeavy, 0, 3, S::Strip::A), S::Both);
    EXPECT_EQ(S::columnCategory(bHeavy, 0, 3, S::Strip::B), S::BOnly);
    EXPECT_EQ(S::columnCategory(bHeavy, 0, 2, S::Strip::A), S::Neither);
}

TEST(KeptDeltaStrips, SpansCoverEveryPositionOnceOrRepeatOnePosition) {
    // 10 positions per column.
    EXPECT_EQ(S::span(0, 640, 6400), std::make_pair(int64_t(0), int64_t(10)));
    EXPECT_EQ(S::span(639, 640, 6400), std::make_pair(int64_t(6390), int64_t(6400)));
    // 64 positions over 640 columns: column 25 shows position 2 alone.
    EXPECT_EQ(S::span(25, 640, 64), std::make_pair(int64_t(2), int64_t(3)));
    int64_t next = 0;
    for (int x = 0; x < 700; ++x) {
        const auto [first, end] = S::span(x, 700, 5000);
        EXPECT_EQ(first, next);
        next = end;
    }
    EXPECT_EQ(next, 5000);
}

TEST(KeptDeltaStrips, DownsampledPixelsShowTheRuleAndTheLegendColours) {
    // 6400 positions on a 640-column strip: 10 positions per column, one KV head.
    const Selection a = test::makeSelection(1, 2, 1, 6400, GqaMode::KvHead, [](int, int) {
        std::vector<int32_t> kept = test::range(0, 10);  // column 0: A only throughout
        for (int32_t p : {100, 101}) kept.push_back(p);  // column 10: with B, "both" wins 2:1
        kept.push_back(200);                             // column 20: 1 A only, 9 neither
        return kept;
    });
    const Selection b = test::makeSelection(1, 2, 1, 6400, GqaMode::KvHead, [](int, int) {
        std::vector<int32_t> kept = {100, 101, 102};
        kept.push_back(305);  // column 30: B only
        return kept;
    });
    S strips;
    strips.resize(656, 220);  // 8 px margins: a 640-column strip
    strips.setLayer(a, b, 0);
    ASSERT_EQ(strips.stripRect(S::Strip::Delta).width(), 640);
    ASSERT_GE(strips.rowHeight(), 1);
    const QImage image = test::screenshot(strips, "kept_delta_strips_downsampled");
    const auto pixel = [&](S::Strip strip, int column) {
        const QRect r = strips.stripRect(strip);
        return image.pixel(r.left() + column, r.top() + r.height() / 2);
    };
    const struct {
        int column;
        S::Category delta, inA, inB;
    } expected[] = {{0, S::AOnly, S::AOnly, S::Neither},
                    {10, S::Both, S::Both, S::Both},
                    {20, S::AOnly, S::AOnly, S::Neither},
                    {30, S::BOnly, S::Neither, S::BOnly},
                    {40, S::Neither, S::Neither, S::Neither}};
    for (const auto& e : expected) {
        EXPECT_TRUE(test::sameColor(pixel(S::Strip::Delta, e.column), S::color(e.delta)))
            << "delta column " << e.column;
        EXPECT_TRUE(test::sameColor(pixel(S::Strip::A, e.column), S::color(e.inA)))
            << "A column " << e.column;
        EXPECT_TRUE(test::sameColor(pixel(S::Strip::B, e.column), S::color(e.inB)))
            << "B column " << e.column;
    }
    // The four colours are distinct and the two single-run ones are Okabe-Ito's.
    EXPECT_EQ(S::color(S::AOnly), QColor(0xe6, 0x9f, 0x00));
    EXPECT_EQ(S::color(S::BOnly), QColor(0x56, 0xb4, 0xe9));
    std::set<QRgb> colours;
    for (S::Category c : {S::Neither, S::Both, S::AOnly, S::BOnly})
        colours.insert(S::color(c).rgb());
    EXPECT_EQ(colours.size(), 4u);
}

TEST(KeptDeltaStrips, MixedGqaModesCompareQueryHeadByQueryHead) {
    // A: 2 KV heads for 4 query heads; B: one selection per query head.
    const Selection a = test::makeSelection(
        1, 4, 2, 16, GqaMode::KvHead, [](int, int h) { return test::range(h * 4, h * 4 + 4); });
    const Selection b = test::makeSelection(1, 4, 2, 16, GqaMode::QueryHead,
                                            [](int, int h) { return std::vector<int32_t>{h}; });
    S strips;
    strips.setLayer(a, b, 0);
    ASSERT_EQ(strips.rows(), 4);
    EXPECT_EQ(strips.rowUnit(), "query head");
    // Query head 1 reads A's KV head 0 (positions 0-3) and B's head 1 (position 1).
    EXPECT_EQ(strips.category(1, 0), S::AOnly);
    EXPECT_EQ(strips.category(1, 1), S::Both);
    EXPECT_EQ(strips.category(1, 4), S::Neither);
    // Query head 3 reads A's KV head 1 (positions 4-7) and B's head 3.
    EXPECT_EQ(strips.category(3, 3), S::BOnly);
    EXPECT_EQ(strips.category(3, 5), S::AOnly);
}

}  // namespace
}  // namespace kvlens::ui
