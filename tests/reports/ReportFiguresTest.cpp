// Report figures on data made here: the kept-position maps shade the end each run keeps whole
// and name it (the observation window for window methods, LagKV's tail for `lagkv` and a
// wrapper ranking by LagKV where the tail passes the window; the caption says which, the
// legend takes the same name: KeptPositionsFigure.TheKeptEndIsNamedAsTheCallerSays); runs
// compressed while decoding get the cache's size over the steps.
#include <gtest/gtest.h>

#include <string>

#include "reports/ReportData.h"
#include "reports/ReportFigures.h"

namespace kvlens {
namespace {

sessions::RunRecord run(int64_t id, const std::string& method, int64_t T, int64_t keptFrom) {
    sessions::RunRecord r;
    r.id = id;
    r.params.method = method;
    r.params.budget = 64;
    r.params.window = 8;
    r.params.sinks = 4;
    r.params.lag = 16;
    r.selection.promptLength = T;
    r.selection.queryHeads = 2;
    r.selection.kvHeads = 1;
    r.selection.kept.assign(1, std::vector<std::vector<int32_t>>(1));
    for (int32_t p = int32_t(keptFrom); p < T; ++p) r.selection.kept[0][0].push_back(p);
    return r;
}

TEST(ReportKeptMaps, TheEndKeptWholeIsTheWindowOrLagKvsTail) {
    const int64_t T = 100;  // lagkv: sinks 4, lag 16: 6 full partitions, the tail from 4 + 5 x 16 = 84
    ReportData d;
    d.prompt.tokenIds.assign(size_t(T), 1);
    d.runs = {run(1, "lagkv", T, 40)};
    std::vector<ReportFigure> maps = ReportFigures::keptMaps(d);
    ASSERT_EQ(maps.size(), 1u);
    EXPECT_NE(maps[0].caption.find("orange: kept as LagKV's tail;"), std::string::npos) << maps[0].caption;

    d.runs = {run(1, "snapkv", T, 40)};
    maps = ReportFigures::keptMaps(d);
    ASSERT_EQ(maps.size(), 1u);
    EXPECT_NE(maps[0].caption.find("orange: kept observation window;"), std::string::npos) << maps[0].caption;

    d.runs = {run(1, "snapkv", T, 40), run(2, "lagkv", T, 40), run(3, "knorm", T, 40)};
    maps = ReportFigures::keptMaps(d);
    ASSERT_EQ(maps.size(), 1u);
    EXPECT_NE(maps[0].caption.find("orange: kept observation window (LagKV's tail where LagKV ranks);"),
              std::string::npos)
        << maps[0].caption;

    // KNorm keeps no end whole: with LagKV alone beside it, the legend names the tail only.
    d.runs = {run(2, "lagkv", T, 40), run(3, "knorm", T, 40)};
    maps = ReportFigures::keptMaps(d);
    ASSERT_EQ(maps.size(), 1u);
    EXPECT_NE(maps[0].caption.find("orange: kept as LagKV's tail;"), std::string::npos) << maps[0].caption;
}

TEST(ReportCacheWhileDecoding, DrawsTheCacheOfEachRunCompressedWhileDecodingAndItsBudget) {
    ReportData d;
    d.prompt.tokenIds.assign(100, 1);
    d.runs = {run(1, "snapkv", 100, 40), run(2, "knorm", 100, 40)};
    EXPECT_FALSE(ReportFigures::hasCacheWhileDecoding(d));  // neither compressed while decoding
    for (const ReportFigure& f : ReportFigures::build(d)) EXPECT_NE(f.name, "cache");
    d.runs[1].metrics.decodeEvery = 2;
    d.runs[1].metrics.cacheEntries = {65, 64, 65, 64, 65};
    ASSERT_TRUE(ReportFigures::hasCacheWhileDecoding(d));
    const std::vector<ReportFigure> all = ReportFigures::build(d);
    ASSERT_EQ(all.back().name, "cache");
    const ReportFigure& f = all.back();
    EXPECT_FALSE(f.png.empty());
    EXPECT_NE(f.svg.find("Cache while decoding"), std::string::npos);
    EXPECT_NE(f.svg.find("stroke=\"#8c8c8c\""), std::string::npos);  // the budget: a grey reference line
    // The CSV: the run's five steps, then the budget's line from step 1 to 5.
    const auto& rows = f.csv.rows();
    ASSERT_EQ(rows.size(), 5u + 2u);
    EXPECT_EQ(rows[0], (std::vector<std::string>{"cache", "#2 knorm 64, every 2", "1", "65", "entries per head"}));
    EXPECT_EQ(rows[4][3], "65");
    EXPECT_EQ(rows[5], (std::vector<std::string>{"cache", "budget 64", "1", "64", "entries per head"}));
    EXPECT_EQ(rows[6][2], "5");
}

}  // namespace
}  // namespace kvlens
