// Jaccard overlap of two selections, by hand and across GQA modes.
#include <gtest/gtest.h>

#include "core/Error.h"
#include "core/SelectionOverlap.h"

namespace kvlens {
namespace {

Selection make(GqaMode gqa, std::vector<std::vector<std::vector<int32_t>>> kept) {
    Selection s;
    s.promptLength = 10;
    s.queryHeads = 4;
    s.kvHeads = 2;
    s.gqa = gqa;
    s.kept = std::move(kept);
    return s;
}

TEST(SelectionOverlap, JaccardOfLists) {
    EXPECT_EQ(SelectionOverlap::jaccard({1, 2, 3}, {2, 3, 4}), 0.5);
    EXPECT_EQ(SelectionOverlap::jaccard({1, 2}, {3, 4}), 0.0);
    EXPECT_EQ(SelectionOverlap::jaccard({5}, {5}), 1.0);
    EXPECT_EQ(SelectionOverlap::jaccard({}, {}), 1.0);
    EXPECT_EQ(SelectionOverlap::jaccard({}, {1}), 0.0);
}

TEST(SelectionOverlap, PerLayerMeanOverQueryHeadsAcrossModes) {
    // KV-head selection: query heads 0,1 read KV head 0; 2,3 read KV head 1.
    Selection a = make(GqaMode::KvHead, {{{0, 1, 2, 3}, {6, 7}}, {{9}, {9}}});
    Selection b = make(GqaMode::QueryHead, {{{0, 1, 2, 3}, {0, 1}, {6, 7}, {8, 9}}, {{9}, {9}, {9}, {8}}});
    const std::vector<double> j = SelectionOverlap::jaccardPerLayer(a, b);
    ASSERT_EQ(j.size(), 2u);
    EXPECT_DOUBLE_EQ(j[0], (1.0 + 0.5 + 1.0 + 0.0) / 4);
    EXPECT_DOUBLE_EQ(j[1], (1.0 + 1.0 + 1.0 + 0.0) / 4);
    EXPECT_EQ(SelectionOverlap::jaccardPerLayer(a, a), (std::vector<double>{1.0, 1.0}));
}

TEST(SelectionOverlap, DifferentPromptsAreAnError) {
    Selection a = make(GqaMode::KvHead, {{{0}, {1}}});
    Selection b = a;
    EXPECT_TRUE(SelectionOverlap::comparable(a, b));
    b.promptLength = 11;
    EXPECT_FALSE(SelectionOverlap::comparable(a, b));
    try {
        SelectionOverlap::jaccardPerLayer(a, b);
        FAIL();
    } catch (const Error& e) {
        EXPECT_EQ(std::string(e.what()), "cannot compare selections made on different prompts or models");
    }
}

}  // namespace
}  // namespace kvlens
