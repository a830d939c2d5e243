// --convention kvpress: ratio budgets truncate as kvpress's int(T x (1 - r)); PyramidKV's layer
// budgets follow kvpress's get_layer_budget (numbers worked out by hand from its formula);
// AdaKV sizes its safeguard on the total and ranks raw scores across heads; TOVA keeps the last
// position; CriticalKV and CriticalAdaKV rank kvpress's scores in kvpress's two stages; what the table says kvpress cannot reproduce is refused in one line; and the
// convention reads back from describe() lines, while the paper's (the default) leaves lines as
// they were.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "core/Error.h"
#include "core/Methods.h"
#include "core/PressParams.h"
#include "engine/compress/presses/AdaKvPress.h"
#include "engine/compress/presses/CriticalAdaKvPress.h"
#include "engine/compress/presses/CriticalKvPress.h"
#include "engine/compress/presses/Press.h"
#include "engine/compress/presses/PressScores.h"
#include "engine/compress/presses/PyramidKvPress.h"
#include "RandomCapture.h"

namespace kvlens {
namespace {

std::string errorOf(const PressParams& p, int64_t T = 400) {
    try {
        p.validate(T, 64);
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

PressParams kvpress(const std::string& method, double compressionRatio) {
    PressParams p;
    p.method = method;
    p.convention = Convention::Kvpress;
    p.pooling = Pooling::Avg;
    p.budget = 0;
    p.budgetRatio = 1.0 - compressionRatio;
    return p;
}

TEST(KvpressConvention, ARatioBudgetTruncatesAsKvpressDoes) {
    PressParams p = kvpress("snapkv", 0.5);
    EXPECT_EQ(p.resolveBudget(333), 166);  // int(333 x 0.5) = int(166.5)
    p.convention = Convention::Paper;
    EXPECT_EQ(p.resolveBudget(333), 167);  // rounded
    p = kvpress("snapkv", 0.3);
    EXPECT_EQ(p.resolveBudget(10), static_cast<int64_t>(10 * (1 - 0.3)));
    p.budget = 50;  // an entry count is what it says under either convention
    EXPECT_EQ(p.resolveBudget(333), 50);
}

TEST(KvpressConvention, PyramidKvsLayerBudgetsFollowKvpresssSchedule) {
    // T = 400, W = 32, r = 0.5: capacity 232; min 10, max 390 capped at 368, min 400 - 368 = 32.
    EXPECT_EQ(PyramidKvPress::kvpressBudgets(4, 400, 32, 200.0, 20.0), (std::vector<int64_t>{368, 256, 144, 32}));
    // r = 0.75: min 5 < W: every layer falls back to round(100).
    EXPECT_EQ(PyramidKvPress::kvpressBudgets(4, 400, 32, 100.0, 20.0), (std::vector<int64_t>(4, 100)));
    // Python's round() takes halves to even: 187.5 -> 188, 62.5 -> 62.
    EXPECT_EQ(PyramidKvPress::kvpressBudgets(3, 1000, 8, 125.0, 2.0), (std::vector<int64_t>{188, 125, 62}));
    // T = 333, r = 0.25: kept 249.75, max capped at 301, min 198.5; steps 34.1666...
    EXPECT_EQ(PyramidKvPress::kvpressBudgets(4, 333, 32, 333 * (1 - 0.25), 20.0),
              (std::vector<int64_t>{301, 267, 233, 198}));
}

TEST(KvpressConvention, PyramidKvKeepsEachLayersKvpressBudgetWindowIncluded) {
    const auto capture = test::randomCapture({4, 8, 2, 400, 16}, 5);
    PressParams p = kvpress("pyramidkv", 0.5);
    p.window = 32;
    const Selection s = Press::create(p.method)->select(*capture, p);
    EXPECT_EQ(s.layerBudgets, (std::vector<int64_t>{368, 256, 144, 32}));
    for (int64_t l = 0; l < 4; ++l) {
        for (const auto& head : s.kept[size_t(l)]) {
            ASSERT_EQ(int64_t(head.size()), s.layerBudgets[size_t(l)]);
            for (int64_t t = 400 - 32; t < 400; ++t)
                EXPECT_TRUE(std::binary_search(head.begin(), head.end(), int32_t(t))) << "window position " << t;
        }
    }
}

TEST(KvpressConvention, AdaKvGuaranteesItsShareOfTheTotalAndRanksRawScoresAcrossHeads) {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    // Two heads, the last two positions kept whole (SnapKV's padded window).
    presses::HeadScores scores = {{0.9f, 0.1f, 0.2f, 0.3f, nan, nan}, {0.5f, 0.6f, 0.05f, 0.04f, nan, nan}};
    // n_kept 4, alpha 0.75: n_safe = int(3.0) = 3, the two whole ones among them: one more per
    // head (0.9; 0.6); then 2 x 4 = 8 in all: the best two left of any head, 0.5 and 0.3.
    const auto kept = AdaKvPress::keepLayerKvpress(scores, 4, 0.75);
    EXPECT_EQ(kept[0], (std::vector<int32_t>{0, 3, 4, 5}));
    EXPECT_EQ(kept[1], (std::vector<int32_t>{0, 1, 4, 5}));
    // alpha 0: no safeguard; the raw scores alone (head 1 gets nothing beyond its window).
    const auto none = AdaKvPress::keepLayerKvpress(scores, 4, 0.0);
    EXPECT_EQ(none[0], (std::vector<int32_t>{0, 3, 4, 5}));
    EXPECT_EQ(none[1], (std::vector<int32_t>{0, 1, 4, 5}));
    const auto fewer = AdaKvPress::keepLayerKvpress(scores, 3, 0.0);  // 6 in all: 0.9 and 0.6
    EXPECT_EQ(fewer[0], (std::vector<int32_t>{0, 4, 5}));
    EXPECT_EQ(fewer[1], (std::vector<int32_t>{1, 4, 5}));
}

TEST(KvpressConvention, AdaKvOverKnormKeepsNoWindowOfItsOwn) {
    const auto capture = test::randomCapture({2, 8, 2, 200, 16}, 9);
    PressParams p = kvpress("adakv", 0.5);
    p.scorer = "knorm";
    p.window = 32;
    const Selection s = Press::create(p.method)->select(*capture, p);
    int64_t total = 0, inWindow = 0;
    for (const auto& layer : s.kept)
        for (const auto& head : layer) {
            total += int64_t(head.size());
            for (int32_t t : head) inWindow += t >= 200 - 32;
        }
    EXPECT_EQ(total, 2 * 2 * 100);  // layers x KV heads x int(200 x 0.5)
    EXPECT_LT(inWindow, 2 * 2 * 32);  // KNorm's own ranking, not a window kept whole
    p.convention = Convention::Paper;
    const Selection paper = Press::create(p.method)->select(*capture, p);
    for (const auto& layer : paper.kept)
        for (const auto& head : layer)
            for (int64_t t = 200 - 32; t < 200; ++t)
                EXPECT_TRUE(std::binary_search(head.begin(), head.end(), int32_t(t)));
}

TEST(KvpressConvention, LagKvAsAScorerRanksWithinEachPartitionAsLagKvPressDoes) {
    // T = 100, sinks 4, lag 16: partitions from 4; the last full one (84..99) is the tail.
    const auto capture = test::randomCapture({2, 8, 2, 100, 16}, 21);
    PressParams p = kvpress("adakv", 0.5);
    p.scorer = "lagkv";
    p.sinks = 4;
    p.lag = 16;
    const presses::HeadScores raw = presses::lagKvScores(*capture, 1, p);
    const presses::HeadScores ranked = presses::scorerScores(*capture, 1, p);
    ASSERT_EQ(ranked.size(), raw.size());
    for (size_t h = 0; h < ranked.size(); ++h) {
        for (int64_t t = 0; t < 100; ++t)
            EXPECT_EQ(std::isnan(ranked[h][t]), std::isnan(raw[h][t])) << "head " << h << " position " << t;
        for (int64_t from = 4; from + 16 <= 84; from += 16) {
            std::vector<float> seen;
            for (int64_t i = from; i < from + 16; ++i) {
                seen.push_back(ranked[h][i]);
                // A rank over 16: how many of the partition's raw scores are lower.
                int64_t below = 0;
                for (int64_t j = from; j < from + 16; ++j) below += raw[h][j] < raw[h][i];
                EXPECT_EQ(ranked[h][i], float(below) / 16.0f) << "head " << h << " position " << i;
            }
            std::sort(seen.begin(), seen.end());
            for (int r = 0; r < 16; ++r) EXPECT_EQ(seen[r], float(r) / 16.0f);
        }
    }
    // The paper's convention ranks the raw scores (AdaKV compares them across heads).
    p.convention = Convention::Paper;
    const presses::HeadScores paper = presses::scorerScores(*capture, 1, p);
    EXPECT_EQ(paper[0][4], raw[0][4]);
    // A prompt shorter than sinks + 2 x lag: kvpress's ramp after the sinks.
    const auto shortCapture = test::randomCapture({1, 8, 2, 30, 16}, 22);
    p.convention = Convention::Kvpress;
    const presses::HeadScores ramp = presses::scorerScores(*shortCapture, 0, p);
    EXPECT_TRUE(std::isnan(ramp[0][3]));
    EXPECT_EQ(ramp[1][4], 0.0f);
    EXPECT_EQ(ramp[1][17], float(13.0 / 26.0));
}

TEST(KvpressConvention, TovaKeepsTheLastPositionAndRanksTheRestForBMinusOne) {
    const auto capture = test::randomCapture({2, 8, 2, 120, 16}, 3);
    PressParams p = kvpress("tova", 0.0);
    p.budget = 20;
    const Selection s = Press::create(p.method)->select(*capture, p);
    const std::vector<std::vector<float>> scores = Press::create(p.method)->scores(*capture, p, 0);
    EXPECT_TRUE(std::isnan(scores[0].back()));
    for (const auto& layer : s.kept)
        for (const auto& head : layer) {
            ASSERT_EQ(head.size(), 20u);
            EXPECT_EQ(head.back(), 119);
        }
}

TEST(KvpressConvention, WhatKvpressCannotReproduceIsRefusedInOneLine) {
    PressParams p = kvpress("h2o", 0.5);
    EXPECT_EQ(errorOf(p).rfind("--convention kvpress: --method h2o does not keep kvpress's positions (", 0), 0u)
        << errorOf(p);
    p = kvpress("adakv", 0.5);
    p.scorer = "cake";
    EXPECT_EQ(errorOf(p).rfind("--convention kvpress: --scorer cake does not keep kvpress's positions (kvpress has "
                               "no such press)",
                               0),
              0u)
        << errorOf(p);
    p = kvpress("snapkv", 0.5);
    p.pooling = Pooling::Max;
    EXPECT_EQ(errorOf(p), "--pool max: kvpress pools the window's votes by avg (--convention kvpress)");
    p.pooling = Pooling::Avg;
    p.gqa = GqaMode::QueryHead;
    EXPECT_EQ(errorOf(p), "--gqa query-head: kvpress averages each KV head's query heads (--convention kvpress)");
    // Every method the table gives a kvpress form runs; every other is refused (a twin's
    // original names its twin, which the command line and the GUI run for it).
    for (const MethodInfo& m : methods::all()) {
        PressParams q = kvpress(m.name, 0.5);
        q.window = 16;
        if (m.id == MethodId::LagKv) q.lag = 32;
        EXPECT_EQ(errorOf(q).empty(), m.kvpressForm != KvpressForm::None && m.kvpressForm != KvpressForm::Twin)
            << m.name << ": " << errorOf(q);
    }
    // The paper's convention (the default) refuses none of them for it.
    EXPECT_EQ(errorOf(PressParams::fromDescription("h2o B=128")), "");
}

TEST(KvpressConvention, ChunkKvAndFinchRunAsTheirKvpressTwins) {
    EXPECT_EQ(methods::underConvention("chunkkv", Convention::Kvpress), "chunkkv-kvpress");
    EXPECT_EQ(methods::underConvention("finch", Convention::Kvpress), "finch-kvpress");
    EXPECT_EQ(methods::underConvention("chunkkv", Convention::Paper), "chunkkv");
    EXPECT_EQ(methods::underConvention("snapkv", Convention::Kvpress), "snapkv");
    EXPECT_EQ(methods::underConvention("nope", Convention::Kvpress), "nope");
    // Parameters built by hand (not through the command line or the GUI) name the twin to use.
    PressParams p = kvpress("finch", 0.5);
    EXPECT_EQ(errorOf(p), "--convention kvpress: kvpress's form of finch is --method finch-kvpress (the command "
                          "line runs it for --method finch)");
    // The twins read the convention knob; so do chunkkv and finch, whose kvpress form they are.
    for (const char* name : {"chunkkv", "finch", "chunkkv-kvpress", "finch-kvpress"}) {
        PressParams q;
        q.method = name;
        EXPECT_TRUE(methods::effectiveKnobs(q).has(Knob::Convention)) << name;
    }
}

TEST(KvpressConvention, CriticalKvRescalesKvpresssScoresWithTheirPads) {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    PressParams p = kvpress("criticalkv", 0.5);
    p.window = 4;
    // SnapKV's summed votes become kvpress's means (/ W); its window the layer's largest + 1.
    presses::HeadScores rows = {{4.0f, 8.0f, nan}, {2.0f, 12.0f, nan}};
    std::vector<std::vector<char>> padded;
    CriticalKvPress::kvpressScores(rows, padded, p);
    EXPECT_EQ(rows, (presses::HeadScores{{1.0f, 2.0f, 4.0f}, {0.5f, 3.0f, 4.0f}}));
    EXPECT_EQ(padded, (std::vector<std::vector<char>>{{0, 0, 1}, {0, 0, 1}}));
    // LagKV's sinks and tail: 1, its scores as they are.
    p.scorer = "lagkv";
    rows = {{0.5f, nan}, {nan, 0.25f}};
    CriticalKvPress::kvpressScores(rows, padded, p);
    EXPECT_EQ(rows, (presses::HeadScores{{0.5f, 1.0f}, {1.0f, 0.25f}}));
}

TEST(KvpressConvention, CriticalKvsFirstStageTakesTheScorersBestThenTheRescaledScoresTheRest) {
    // Position 4 is a padded window entry (the largest + 1).
    const std::vector<float> scores = {0.5f, 0.1f, 0.3f, 0.2f, 2.0f};
    const double norms[] = {0.1, 10.0, 1.0, 2.0, 1.0};
    // Stage 1 takes 4 and 0; stage 2 the best of (s + 1e-4) x n: 1 (1.001).
    EXPECT_EQ(CriticalKvPress::keepHeadKvpress(scores, norms, 3, 2).kept, (std::vector<int32_t>{0, 1, 4}));
    // Stage 1 takes 4 alone: then 1 (1.001) and 3 (0.4002) beat 0 (0.05001).
    const CriticalKvPress::KvpressHead one = CriticalKvPress::keepHeadKvpress(scores, norms, 3, 1);
    EXPECT_EQ(one.kept, (std::vector<int32_t>{1, 3, 4}));
    EXPECT_TRUE(std::isinf(one.ranked[4]));
    EXPECT_EQ(one.ranked[3], (0.2f + 1e-4f) * 2.0f);
    // A window larger than the first stage: its other entries compete at (max + 1 + 1e-4) x n.
    const std::vector<float> windowed = {0.5f, 0.1f, 2.0f, 2.0f};
    const double small[] = {1.0, 1.0, 1.0, 0.01};
    EXPECT_EQ(CriticalKvPress::keepHeadKvpress(windowed, small, 2, 1).kept, (std::vector<int32_t>{0, 2}));
}

TEST(KvpressConvention, CriticalAdaKvAllocatesOnTheSafeguardedScoresThenRunsBothStagesPerHead) {
    // n_kept 2, alpha 0.5: n_safe 1 (position 3 of each head); the 4 best of the layer: both
    // safeguards, 0.9 and 0.8 of head 0: budgets 3 and 1.
    const presses::HeadScores scores = {{0.9f, 0.8f, 0.7f, 5.0f}, {0.1f, 0.05f, 0.02f, 5.0f}};
    const double n0[] = {0.1, 1.0, 1.0, 1.0}, n1[] = {1.0, 1.0, 1.0, 1.0};
    std::vector<std::vector<float>> ranked;
    const auto kept = CriticalAdaKvPress::keepLayerKvpress(scores, {n0, n1}, 2, 0.5, &ranked);
    // Head 0: stage 1 int(3 x 0.5) = 1 (its safeguard); then 1 and 2 (0.8001, 0.7001) beat
    // 0's 0.09001, where the scorer alone would keep 0.
    EXPECT_EQ(kept[0], (std::vector<int32_t>{1, 2, 3}));
    EXPECT_EQ(kept[1], (std::vector<int32_t>{3}));
    EXPECT_EQ(ranked[0][0], (0.9f + 1e-4f) * 0.1f);
    EXPECT_TRUE(std::isinf(ranked[0][3]));
    // alpha 0: no safeguard; 5.0, 5.0, 0.9, 0.8 still: the same budgets.
    EXPECT_EQ(CriticalAdaKvPress::keepLayerKvpress(scores, {n0, n1}, 2, 0.0), kept);
}

TEST(KvpressConvention, CriticalKvFromTensorsWithAnOutputProjection) {
    // Capture::fromTensors computes ||W_o^(h) v_t||_1 from each layer's W_o [E, H x D].
    at::manual_seed(4);
    const int64_t L = 2, H = 4, KV = 2, T = 60, D = 8, E = 12, W = 8;
    std::vector<at::Tensor> q, k, v, o;
    for (int64_t l = 0; l < L; ++l) {
        q.push_back(at::randn({H, W, D}));
        k.push_back(at::randn({KV, T, D}));
        v.push_back(at::randn({KV, T, D}));
        o.push_back(at::randn({E, H * D}));
    }
    const auto capture = Capture::fromTensors(q, k, v, o);
    for (int64_t l = 0; l < L; ++l) {
        const at::Tensor norms = capture->outputValueNorms(l);
        ASSERT_TRUE(norms.defined());
        ASSERT_EQ(norms.sizes().vec(), (std::vector<int64_t>{H, T}));
        for (int64_t h = 0; h < H; ++h) {
            const at::Tensor slice = o[size_t(l)].narrow(1, h * D, D).to(at::kDouble);  // [E, D]
            const at::Tensor direct = v[size_t(l)][h / (H / KV)].to(at::kDouble).matmul(slice.t()).abs().sum(1);
            EXPECT_TRUE(at::allclose(norms[h].to(at::kDouble), direct, 1e-5, 1e-5)) << "layer " << l << " head " << h;
        }
    }
    EXPECT_THROW(Capture::fromTensors(q, k, v, {o[0]}), Error);
    EXPECT_THROW(Capture::fromTensors(q, k, v, {o[0], at::randn({E, H * D + 1})}), Error);
    // Under kvpress's convention every KV head keeps int(T x (1 - r)), window or not.
    PressParams p = kvpress("criticalkv", 0.5);
    p.window = W;
    for (const char* m : {"criticalkv", "criticaladakv"}) {
        p.method = m;
        const Selection s = Press::create(p.method)->select(*capture, p);
        int64_t total = 0;
        for (const auto& layer : s.kept)
            for (const auto& head : layer) {
                if (p.method == "criticalkv") {
                    EXPECT_EQ(head.size(), 30u);
                }
                total += int64_t(head.size());
            }
        EXPECT_EQ(total, L * KV * 30) << m;
        p.convention = Convention::Paper;
        EXPECT_NE(Press::create(p.method)->select(*capture, p).kept, s.kept) << m << ": kvpress's form is not the paper's";
        p.convention = Convention::Kvpress;
    }
}

TEST(KvpressConvention, TheConventionReadsBackFromADescription) {
    PressParams p = kvpress("pyramidkv", 0.3);
    const std::string line = p.describe();
    EXPECT_NE(line.find(" kvpress"), std::string::npos) << line;
    const PressParams back = PressParams::fromDescription(line);
    EXPECT_EQ(back.convention, Convention::Kvpress);
    EXPECT_EQ(back.budgetRatio, p.budgetRatio);
    // The paper's convention leaves the line as it was before conventions existed.
    p.convention = Convention::Paper;
    EXPECT_EQ(p.describe().find("paper"), std::string::npos) << p.describe();
    EXPECT_EQ(PressParams::fromDescription("snapkv B=64 paper").convention, Convention::Paper);
    EXPECT_THROW(parseConvention("kvpres"), Error);
}

}  // namespace
}  // namespace kvlens
