// run --save keeps the prompt's per-layer attention statistics with the run:
// every layer's mean and every query head, five figures each, as the store
// gives them back.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>

#include "cli/CliHarness.h"
#include "sessions/SessionStore.h"

namespace {

using kvlens::test::runKvlens;
using kvlens::test::testOutputPath;

TEST(SaveStatisticsCli, RunSaveKeepsEveryLayerAndHeadStatistic) {
    const std::string store = testOutputPath("save_stats_" + std::to_string(::getpid()) + ".db");
    std::filesystem::remove(store);
    const auto r = runKvlens("run --model random:tiny --prompt 'the quick brown fox jumps over the lazy dog, "
                             "again and again and again' --method snapkv --budget 40 --window 8 -n 4 --save "
                             "--session stats --store " + store);
    ASSERT_EQ(r.exitCode, 0) << r.err;
    kvlens::sessions::SessionStore s(store, kvlens::sessions::SessionStore::Access::ReadOnly);
    const auto runs = s.runs(s.session("stats").id);
    ASSERT_EQ(runs.size(), 1u);
    const auto run = s.run(runs[0].id);
    // random:tiny: 4 layers, 8 query heads; the mean is head -1.
    ASSERT_EQ(run.layerStats.size(), size_t(4 * (8 + 1) * 5));
    std::map<std::pair<std::string, int>, double> headSum, mean;
    for (const auto& st : run.layerStats) {
        EXPECT_GE(st.layer, 0);
        EXPECT_LT(st.layer, 4);
        if (st.head < 0) {
            mean[{st.name, st.layer}] = st.value;
        } else {
            headSum[{st.name, st.layer}] += st.value / 8.0;
        }
        if (st.name == "sink_mass" || st.name == "local_mass") {
            EXPECT_GE(st.value, 0.0);
            EXPECT_LE(st.value, 1.0 + 1e-9);
        }
        if (st.name == "effective_positions" || st.name == "positions_90pct") {
            EXPECT_GE(st.value, 1.0);
        }
    }
    ASSERT_EQ(mean.size(), size_t(4 * 5));
    for (const auto& [key, value] : mean) EXPECT_NEAR(value, headSum[key], 1e-9) << key.first << " layer " << key.second;
}

}  // namespace
