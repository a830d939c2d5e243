// The Needle runs panel against a real store: the sessions holding niah runs, the task
// and question groups, methods and metrics, the heatmap's cells (values, colours and
// clicks), a cell's samples and the run and model a click opens, and store failures in
// one line. The heatmap alone: its cells at their pixels, no click on an empty cell.
#include <gtest/gtest.h>

#include <QComboBox>
#include <QListWidget>
#include <QMouseEvent>
#include <QTest>
#include <cmath>
#include <stdexcept>

#include "WidgetFixtures.h"
#include "sessions/SessionStore.h"
#include "ui/NiahHeatmap.h"
#include "ui/NiahPanel.h"

namespace kvlens::ui {
namespace {

using sessions::NiahRunRecord;
using sessions::SessionStore;

NiahRunRecord niahRun(int64_t session, int64_t model, const std::string& params, int64_t length, double depth,
                      int64_t sample, double contains, bool after = false) {
    NiahRunRecord r;
    r.sessionId = session;
    r.modelId = model;
    r.task = "single";
    r.taskSeed = 11;
    r.length = length;
    r.tokens = length - 3;
    r.depth = depth;
    r.sample = sample;
    r.questionAfter = after;
    r.newTokens = 12;
    r.method = params.substr(0, params.find(' '));
    r.budget = r.method == "full" ? "all" : params.substr(params.find("B=") + 2, params.find(' ', params.find("B=")) - params.find("B=") - 2);
    r.params = params;
    r.contains = contains;
    r.exact = contains;
    r.needleKept = contains * 0.5;
    r.agreement = 0.75;
    r.meanKl = 0.1;
    r.answer = contains > 0 ? ": 5659930.\n" : ": 1111.";
    r.expected = {"5659930"};
    r.needlePositions = {40, 41, 42};
    return r;
}

struct NiahStore {
    std::string path = test::storePath("niah.db");
    std::shared_ptr<SessionStore> store = std::make_shared<SessionStore>(path);
    int64_t modelId = 0;
    NiahStore() {
        sessions::ModelRecord m;
        m.spec = "models/kvlens-testbed.gguf";
        m.isFile = true;
        m.path = "/models/kvlens-testbed.gguf";
        m.layers = 4;
        modelId = store->saveModel(m);
        const int64_t sweep = store->openSession("sweep").id;
        store->openSession("plain");  // no niah runs: not listed
        const std::string snap = "snapkv B=64 W=32 k=7 max kv-head";
        for (int64_t L : {1024, 2048})
            for (double d : {0.0, 50.0, 100.0}) {
                store->saveNiahRun(niahRun(sweep, modelId, "full B=0", L, d, 0, 1.0));
                // SnapKV finds the needle only at depth 100 of 1024, and in one of two samples at 50.
                store->saveNiahRun(niahRun(sweep, modelId, snap, L, d, 0, L == 1024 && d == 100 ? 1.0 : 0.0));
                if (d == 50.0) store->saveNiahRun(niahRun(sweep, modelId, snap, L, d, 1, 1.0));
                store->saveNiahRun(niahRun(sweep, modelId, snap, L, d, 0, 0.0, true));
            }
    }
};

TEST(NiahPanelTest, ShowsEachMethodsHeatmapAndOpensACellsSample) {
    NiahStore s;
    NiahPanel panel;
    std::vector<std::pair<NiahRunRecord, sessions::ModelRecord>> opened;
    std::vector<QString> errors;
    QObject::connect(&panel, &NiahPanel::sampleRequested,
                     [&](const NiahRunRecord& r, const sessions::ModelRecord& m) { opened.emplace_back(r, m); });
    QObject::connect(&panel, &NiahPanel::errorOccurred, [&](const QString& m) { errors.push_back(m); });
    panel.setStore(s.store);
    panel.resize(720, 560);
    panel.show();
    EXPECT_EQ(panel.sessionNames(), QStringList{"sweep"});
    EXPECT_EQ(panel.currentSession(), "sweep");
    EXPECT_EQ(panel.groupNames(),
              (QStringList{"single, question inside", "single, question after the compression"}));
    EXPECT_EQ(panel.kindNames(), (QStringList{"full", "snapkv 64"}));
    // The first compressed method is shown, not FullKV.
    const NiahHeatmap& map = *panel.heatmap();
    ASSERT_EQ(map.rows(), 3);
    ASSERT_EQ(map.columns(), 2);
    EXPECT_DOUBLE_EQ(map.value(2, 0), 1.0);  // depth 100, 1024 tokens
    EXPECT_DOUBLE_EQ(map.value(1, 0), 0.5);  // depth 50: two samples, one right
    EXPECT_DOUBLE_EQ(map.value(0, 1), 0.0);
    EXPECT_EQ(panel.summaryText(),
              "snapkv 64 over 8 runs: contains 37.5%, exact 37.5%, needle kept 18.8%, agreement 75.0%");
    panel.showMetric(NiahPanel::Metric::NeedleKept);
    EXPECT_DOUBLE_EQ(map.value(1, 0), 0.25);
    panel.showMetric(NiahPanel::Metric::Contains);
    test::screenshot(panel, "niah_panel");

    // A click on the depth-50 cell of 1024 tokens: its two samples listed, the first opened.
    const QRect cell = map.cellRect(1, 0);
    QTest::mouseClick(panel.heatmap(), Qt::LeftButton, Qt::NoModifier, cell.center());
    ASSERT_EQ(opened.size(), 1u);
    EXPECT_EQ(opened[0].first.sample, 0);
    EXPECT_EQ(opened[0].first.depth, 50.0);
    EXPECT_EQ(opened[0].first.length, 1024);
    EXPECT_EQ(opened[0].first.method, "snapkv");
    EXPECT_FALSE(opened[0].first.questionAfter);
    EXPECT_EQ(opened[0].second.path, "/models/kvlens-testbed.gguf");
    EXPECT_EQ(map.selectedCell(), std::make_pair(1, 0));
    ASSERT_EQ(panel.sampleLines().size(), 2);
    EXPECT_EQ(panel.sampleLines()[0],
              "sample 0: 1021 tokens, depth 50%, answer ': 1111.' (expected 5659930): contains 0.0%, needle kept 0.0%");
    EXPECT_EQ(panel.sampleLines()[1].left(50), "sample 1: 1021 tokens, depth 50%, answer ': 565993");
    EXPECT_TRUE(panel.openSample(1));
    ASSERT_EQ(opened.size(), 2u);
    EXPECT_EQ(opened[1].first.sample, 1);
    EXPECT_FALSE(panel.openSample(2));

    // The other group and method through their boxes.
    panel.findChild<QComboBox*>("niahGroup")->setCurrentIndex(1);
    EXPECT_EQ(panel.kindNames(), QStringList{"snapkv 64"});
    EXPECT_DOUBLE_EQ(map.value(2, 0), 0.0);
    EXPECT_TRUE(panel.openCell(2, 1));
    EXPECT_TRUE(opened.back().first.questionAfter);
    panel.findChild<QComboBox*>("niahGroup")->setCurrentIndex(0);
    panel.findChild<QComboBox*>("niahKind")->setCurrentIndex(0);
    EXPECT_EQ(panel.summaryText().left(23), "full over 6 runs: conta");
    EXPECT_TRUE(errors.empty());

    // A session deleted behind the panel's back: one line, the heatmap as it was.
    s.store->deleteSession("sweep");
    EXPECT_FALSE(panel.showSession("sweep"));
    ASSERT_EQ(errors.size(), 1u);
    EXPECT_NE(errors[0].indexOf("sweep"), -1) << errors[0].toStdString();
    EXPECT_EQ(map.rows(), 3);
    panel.refresh();  // now no session holds niah runs
    EXPECT_TRUE(panel.sessionNames().isEmpty());
    EXPECT_EQ(map.rows(), 0);
    panel.setStore(nullptr);
    EXPECT_FALSE(panel.openCell(0, 0));
}

TEST(NiahPanelTest, TheHeatmapDrawsItsCellsAndIgnoresClicksOnEmptyOnes) {
    NiahHeatmap map;
    EXPECT_THROW(map.setData({"0%"}, {"1024", "2048"}, {0.5}, "accuracy"), std::invalid_argument);
    map.setData({"0%", "50%"}, {"1024", "2048"}, {0.0, 1.0, NAN, 0.5}, "accuracy");
    map.resize(420, 200);
    map.show();
    int clicks = 0;
    QObject::connect(&map, &NiahHeatmap::cellClicked, [&](int, int) { ++clicks; });
    const QImage image = test::screenshot(map, "niah_heatmap");
    for (const auto& [row, column] : {std::make_pair(0, 0), std::make_pair(0, 1), std::make_pair(1, 0)}) {
        // A pixel near the cell's corner: the fill, not its text.
        const QPoint at = map.cellRect(row, column).topLeft() + QPoint(3, 3);
        EXPECT_EQ(image.pixelColor(at), NiahHeatmap::colorOf(map.value(row, column))) << row << "," << column;
    }
    EXPECT_NE(NiahHeatmap::colorOf(0.0), NiahHeatmap::colorOf(1.0));
    EXPECT_EQ(map.cellAt(map.cellRect(1, 1).center()), std::make_pair(1, 1));
    EXPECT_EQ(map.cellAt(QPoint(2, 2)), std::make_pair(-1, -1));
    QTest::mouseClick(&map, Qt::LeftButton, Qt::NoModifier, map.cellRect(1, 0).center());  // no run there
    EXPECT_EQ(clicks, 0);
    EXPECT_EQ(map.selectedCell(), std::make_pair(-1, -1));
    QTest::mouseClick(&map, Qt::LeftButton, Qt::NoModifier, map.cellRect(1, 1).center());
    EXPECT_EQ(clicks, 1);
    EXPECT_EQ(map.selectedCell(), std::make_pair(1, 1));
}

}  // namespace
}  // namespace kvlens::ui
