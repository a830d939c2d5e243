// The report's kept-position maps shade the end each run keeps whole and name it: the
// observation window for window methods, LagKV's tail for `lagkv` (and a wrapper ranking by
// LagKV where the tail passes the window); the caption says which (the legend takes the same
// name: KeptPositionsFigure.TheKeptEndIsNamedAsTheCallerSays).
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

}  // namespace
}  // namespace kvlens
