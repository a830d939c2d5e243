// The baseline comparison: a known pair of selections gives each category's colour at
// known columns of the grabbed view, the Jaccard label its value per layer, the metrics
// their deltas; runs that cannot be compared give one line saying why.
#include <gtest/gtest.h>

#include <QLabel>
#include <QSpinBox>
#include <limits>

#include "WidgetFixtures.h"
#include "ui/KeptDeltaStrips.h"
#include "ui/RunComparisonView.h"

namespace kvlens::ui {
namespace {

using S = KeptDeltaStrips;

QString textOf(const QWidget& w, const char* name) {
    const auto* label = w.findChild<QLabel*>(name);
    EXPECT_NE(label, nullptr) << name;
    return label ? label->text() : QString();
}

// 2 layers, 4 query heads on 2 KV heads, 64 positions. Layer 0, head 0: A keeps 0-7 and
// 20, B keeps 4-11 and 30 (Jaccard 4/14); head 1: both keep 0-3 (1). Layer 1: A keeps
// {0}, B keeps {1} on both heads (0).
sessions::RunRecord knownRun(int64_t id, bool isA) {
    sessions::RunRecord r;
    r.id = id;
    r.promptId = 1;
    r.params.method = isA ? "snapkv" : "pyramidkv";
    r.params.budget = 9;
    r.selection = test::makeSelection(2, 4, 2, 64, GqaMode::KvHead, [&](int l, int h) {
        if (l == 1) return std::vector<int32_t>{isA ? 0 : 1};
        if (h == 1) return test::range(0, 4);
        std::vector<int32_t> kept = isA ? test::range(0, 8) : test::range(4, 12);
        kept.push_back(isA ? 20 : 30);
        return kept;
    });
    r.metrics.ratio = isA ? 0.125 : 0.25;
    r.metrics.tokenAgreement = isA ? 0.75 : 0.5;
    r.metrics.meanKl = isA ? 0.01 : 0.0125;
    r.metrics.top1Agreement = isA ? 0.875 : 0.8;
    r.metrics.hitRate = isA ? 0.9 : std::numeric_limits<double>::quiet_NaN();
    return r;
}

TEST(RunComparisonView, KnownSelectionsGiveEachCategoryAtItsColumns) {
    RunComparisonView view;
    view.resize(900, 520);
    view.show();
    view.setRuns(knownRun(3, true), knownRun(5, false));
    QApplication::processEvents();
    EXPECT_EQ(view.message(), "");
    const S* strips = view.strips();
    ASSERT_EQ(strips->rows(), 2);
    EXPECT_EQ(strips->rowUnit(), "KV head");

    const QImage image = test::screenshot(view, "run_comparison_known");
    const QPoint origin = strips->mapTo(&view, QPoint(0, 0));
    const auto pixel = [&](S::Strip strip, int row, int position) {
        const QRect r = strips->stripRect(strip);
        // The middle of the position's columns and of the row's band.
        const int x = r.left() + int((position + 0.5) * r.width() / 64.0);
        const int y = r.top() + row * strips->rowHeight() + strips->rowHeight() / 2;
        return image.pixel(origin + QPoint(x, y));
    };
    const struct {
        int position;
        S::Category delta;
    } row0[] = {{0, S::AOnly},  {3, S::AOnly},    {4, S::Both},   {7, S::Both},   {8, S::BOnly},
                {11, S::BOnly}, {12, S::Neither}, {20, S::AOnly}, {30, S::BOnly}, {63, S::Neither}};
    for (const auto& e : row0) {
        EXPECT_TRUE(test::sameColor(pixel(S::Strip::Delta, 0, e.position), S::color(e.delta)))
            << "delta, position " << e.position;
        const S::Category inA = e.delta == S::Both || e.delta == S::AOnly ? e.delta : S::Neither;
        const S::Category inB = e.delta == S::Both || e.delta == S::BOnly ? e.delta : S::Neither;
        EXPECT_TRUE(test::sameColor(pixel(S::Strip::A, 0, e.position), S::color(inA)))
            << "A, position " << e.position;
        EXPECT_TRUE(test::sameColor(pixel(S::Strip::B, 0, e.position), S::color(inB)))
            << "B, position " << e.position;
    }
    EXPECT_TRUE(test::sameColor(pixel(S::Strip::Delta, 1, 2), S::color(S::Both)));
    EXPECT_TRUE(test::sameColor(pixel(S::Strip::Delta, 1, 5), S::color(S::Neither)));
}

TEST(RunComparisonView, JaccardLabelFollowsTheLayer) {
    RunComparisonView view;
    view.setRuns(knownRun(3, true), knownRun(5, false));
    // Layer 0: (4/14 + 1) / 2 over the query heads = 0.643; layer 1: 0.
    ASSERT_TRUE(view.jaccard().has_value());
    EXPECT_NEAR(*view.jaccard(), (4.0 / 14.0 + 1.0) / 2.0, 1e-12);
    EXPECT_EQ(textOf(view, "jaccard"), "Jaccard: 0.643 (mean over layers 0.321)");
    auto* layerBox = view.findChild<QSpinBox*>("layer");
    ASSERT_NE(layerBox, nullptr);
    EXPECT_EQ(layerBox->maximum(), 1);
    layerBox->setValue(1);
    EXPECT_EQ(view.layer(), 1);
    EXPECT_EQ(textOf(view, "jaccard"), "Jaccard: 0.000 (mean over layers 0.321)");
    EXPECT_EQ(view.strips()->category(0, 0), S::AOnly);
    EXPECT_EQ(view.strips()->category(0, 1), S::BOnly);
    view.setLayer(7);  // clamped
    EXPECT_EQ(view.layer(), 1);
}

TEST(RunComparisonView, MetricsSideBySideWithDeltas) {
    RunComparisonView view;
    view.setRuns(knownRun(3, true), knownRun(5, false));
    EXPECT_EQ(textOf(view, "ratio.a"), "12.5%");
    EXPECT_EQ(textOf(view, "ratio.b"), "25.0%");
    EXPECT_EQ(textOf(view, "ratio.delta"), "+12.5%");
    EXPECT_EQ(textOf(view, "agreement.delta"), "-25.0%");
    EXPECT_EQ(textOf(view, "kl.a"), "0.01");
    EXPECT_EQ(textOf(view, "kl.b"), "0.0125");
    EXPECT_EQ(textOf(view, "kl.delta"), "+0.0025");
    EXPECT_EQ(textOf(view, "top1.delta"), "-7.5%");
    EXPECT_EQ(textOf(view, "hit.a"), "90.0%");
    EXPECT_EQ(textOf(view, "hit.b"), "n/a");
    EXPECT_EQ(textOf(view, "hit.delta"), "n/a");
}

TEST(RunComparisonView, RunsThatCannotBeComparedSayWhyInOneLine) {
    RunComparisonView view;
    sessions::RunRecord a = knownRun(3, true);
    sessions::RunRecord b = knownRun(5, false);
    b.promptId = 2;
    view.setRuns(a, b);
    EXPECT_EQ(view.message(),
              "Runs #3 and #5 were made on different prompts (prompt 1 vs 2): their positions "
              "do not line up");
    EXPECT_EQ(view.strips()->rows(), 0);
    EXPECT_FALSE(view.jaccard().has_value());
    EXPECT_EQ(textOf(view, "jaccard"), "");

    b = knownRun(5, false);
    b.selection.promptLength = 80;
    view.setRuns(a, b);
    EXPECT_EQ(view.message(), "Runs #3 and #5 have different prompt lengths (64 vs 80 tokens)");

    b = knownRun(5, false);
    b.selection.kept.pop_back();
    view.setRuns(a, b);
    EXPECT_EQ(view.message(), "Runs #3 and #5 have different layer counts (2 vs 1)");

    b = knownRun(5, false);
    b.selection.queryHeads = 8;
    view.setRuns(a, b);
    EXPECT_EQ(view.message(),
              "Runs #3 and #5 were made on models with different heads (4 query / 2 KV vs 8 / "
              "2)");

    b = knownRun(5, false);
    b.status = "failed";
    b.error = "out of memory";
    b.selection = Selection();
    view.setRuns(a, b);
    EXPECT_EQ(view.message(), "Run #5 has no selection to compare (it failed: out of memory)");

    // A comparable pair afterwards shows the picture again.
    view.setRuns(a, knownRun(5, false));
    EXPECT_EQ(view.message(), "");
    EXPECT_EQ(view.strips()->rows(), 2);
}

TEST(RunComparisonView, RealisticScreenshot) {
    RunComparisonView view;
    view.resize(1000, 560);
    view.show();
    sessions::RunRecord a = test::realisticRun("snapkv", 64, 1, 512, 0.82);
    sessions::RunRecord b = test::realisticRun("pyramidkv", 64, 2, 512, 0.77);
    a.id = 4;
    b.id = 7;
    a.promptId = b.promptId = 1;
    view.setRuns(a, b);
    view.setLayer(2);
    QApplication::processEvents();
    ASSERT_EQ(view.message(), "");
    const QImage image = test::screenshot(view, "run_comparison");
    // Text rendered under the offscreen platform: the title row is not one flat colour.
    const QColor background = image.pixelColor(2, 2);
    int differing = 0;
    for (int x = 0; x < image.width(); ++x) differing += image.pixelColor(x, 14) != background;
    EXPECT_GT(differing, 20);
}

}  // namespace
}  // namespace kvlens::ui
