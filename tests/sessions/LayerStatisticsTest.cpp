// The stored rows of a prompt's attention statistics: five per layer mean (head -1) and
// per query head, in layer order, each holding its own figure.
#include "sessions/LayerStatistics.h"

#include <gtest/gtest.h>

namespace kvlens::sessions {
namespace {

TEST(LayerStatisticsTest, FiveRowsPerLayerMeanAndHead) {
    std::vector<LayerAttentionSummary> layers(2);
    auto summary = [](double entropy, double effective, double p90, double sink, double local) {
        HeadAttentionSummary h;
        h.entropy = entropy;
        h.effectivePositions = effective;
        h.positions90 = p90;
        h.sinkMass = sink;
        h.localMass = local;
        return h;
    };
    for (int l = 0; l < 2; ++l) {
        layers[l].mean = summary(1.0 + l, 2.0 + l, 3.0 + l, 4.0 + l, 5.0 + l);
        layers[l].heads = {summary(10.0 + l, 20.0, 30.0, 40.0, 50.0), summary(11.0 + l, 21.0, 31.0, 41.0, 51.0)};
    }
    const std::vector<LayerStatistic> rows = LayerStatistics::of(layers);
    ASSERT_EQ(rows.size(), 2u * 3u * 5u);
    EXPECT_EQ(rows[0].name, "entropy");
    EXPECT_EQ(rows[0].layer, 0);
    EXPECT_EQ(rows[0].head, -1);
    EXPECT_DOUBLE_EQ(rows[0].value, 1.0);
    EXPECT_EQ(rows[1].name, "effective_positions");
    EXPECT_DOUBLE_EQ(rows[1].value, 2.0);
    EXPECT_EQ(rows[2].name, "positions_90pct");
    EXPECT_DOUBLE_EQ(rows[2].value, 3.0);
    EXPECT_EQ(rows[3].name, "sink_mass");
    EXPECT_DOUBLE_EQ(rows[3].value, 4.0);
    EXPECT_EQ(rows[4].name, "local_mass");
    EXPECT_DOUBLE_EQ(rows[4].value, 5.0);
    // Layer 0, head 1: the second head's entropy.
    EXPECT_EQ(rows[10].layer, 0);
    EXPECT_EQ(rows[10].head, 1);
    EXPECT_DOUBLE_EQ(rows[10].value, 11.0);
    // Layer 1 starts after 15 rows, with its mean.
    EXPECT_EQ(rows[15].layer, 1);
    EXPECT_EQ(rows[15].head, -1);
    EXPECT_DOUBLE_EQ(rows[15].value, 2.0);
    EXPECT_TRUE(LayerStatistics::of({}).empty());
}

}  // namespace
}  // namespace kvlens::sessions
