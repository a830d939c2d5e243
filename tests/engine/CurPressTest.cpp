// CUR (CurDKV as kvpress's CURPress scores by default) against a reference written
// here in double precision from that definition, not from the press's code: per KV
// head, k2 = ||k_t||^2 and v2 = ||v_t||^2, each divided by its sum over the aligned
// window of 16 positions holding t (the last window as long as the prompt leaves it),
// score = k2 * v2 divided by the head's sum of k2 * v2 over the prompt (kvpress's
// `scores /= scores.sum(-1)`: heads compare as shares); the sinks always kept, then the B - sinks highest scores, ties to
// the lower position. On GQA, MHA and MQA captures, prompts that do and do not end on
// a window boundary, several sink counts.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "core/Error.h"
#include "engine/compress/Capture.h"
#include "engine/compress/presses/Press.h"
#include "engine/compress/presses/PressScores.h"
#include "NormReference.h"
#include "RandomCapture.h"

namespace kvlens {
namespace {

using Shape = test::CaptureShape;

using test::squaredNorms;
using test::windowShares;

std::vector<int32_t> reference(const Capture& c, int64_t layer, int64_t head, int64_t sinks, int64_t B) {
    const int64_t T = c.promptLength();
    const std::vector<double> k = windowShares(squaredNorms(c.keys(layer), head, T));
    const std::vector<double> v = windowShares(squaredNorms(c.values(layer), head, T));
    std::vector<int32_t> kept;
    for (int64_t t = 0; t < sinks; ++t) kept.push_back(int32_t(t));
    std::vector<int32_t> order;
    for (int64_t t = sinks; t < T; ++t) order.push_back(int32_t(t));
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return k[a] * v[a] > k[b] * v[b]; });
    order.resize(static_cast<size_t>(B - sinks));
    kept.insert(kept.end(), order.begin(), order.end());
    std::sort(kept.begin(), kept.end());
    return kept;
}

class CurPressShapes : public ::testing::TestWithParam<Shape> {};

TEST_P(CurPressShapes, KeptSetsEqualTheDefinitionInDouble) {
    const Shape shape = GetParam();
    const auto capture = test::randomCapture(shape, 29 + shape.heads);
    for (int64_t sinks : {int64_t(0), int64_t(4), int64_t(7)}) {
        for (int64_t B : {sinks + 1, int64_t(20), int64_t(41), shape.promptLength - 1}) {
            PressParams p;
            p.method = "cur";
            p.budget = B;
            p.sinks = sinks;
            const Selection s = Press::create("cur")->select(*capture, p);
            EXPECT_EQ(s.headsPerLayer(), shape.kvHeads);
            EXPECT_EQ(s.layerBudgets, std::vector<int64_t>(shape.layers, B));
            for (int64_t l = 0; l < shape.layers; ++l)
                for (int64_t h = 0; h < shape.kvHeads; ++h)
                    EXPECT_EQ(s.kept[l][h], reference(*capture, l, h, sinks, B))
                        << "sinks " << sinks << " B " << B << " layer " << l << " head " << h;
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Shapes, CurPressShapes,
                         ::testing::Values(Shape{2, 4, 2, 150, 16},   // GQA; 150 = 9 windows + 6
                                           Shape{2, 3, 3, 96, 8},     // MHA; whole windows only
                                           Shape{1, 8, 1, 70, 32}));  // MQA

TEST(CurPress, ScoresAreNaNAtTheSinksAndTheWindowSharesElsewhere) {
    const Shape shape{1, 2, 2, 40, 8};
    const auto capture = test::randomCapture(shape, 3);
    PressParams p;
    p.method = "cur";
    p.sinks = 3;
    const presses::HeadScores s = presses::curScores(*capture, 0, p);
    ASSERT_EQ(s.size(), 2u);
    for (int64_t t = 0; t < 3; ++t) EXPECT_TRUE(std::isnan(s[1][t]));
    const std::vector<double> k = windowShares(squaredNorms(capture->keys(0), 1, 40));
    const std::vector<double> v = windowShares(squaredNorms(capture->values(0), 1, 40));
    double total = 0.0;
    for (int64_t t = 0; t < 40; ++t) total += k[t] * v[t];
    for (int64_t t = 3; t < 40; ++t)
        EXPECT_NEAR(s[1][t], k[t] * v[t] / total, 1e-6 * k[t] * v[t] / total + 1e-12) << t;
}

// Each head's scores are shares of one total (as kvpress's CURPress returns them), so a
// wrapper comparing heads (AdaKV, CriticalAdaKV, kvpress's ChunkKV) compares like with like.
TEST(CurPress, EachHeadsScoresSumToOne) {
    const auto capture = test::randomCapture(Shape{1, 2, 2, 53, 8}, 11);
    const at::Tensor scores =
        presses::curLocalScores(capture->keys(0).narrow(1, 0, 53), capture->values(0).narrow(1, 0, 53));
    for (int64_t h = 0; h < 2; ++h) EXPECT_NEAR(scores[h].sum().item<double>(), 1.0, 1e-5) << h;
}

TEST(CurPress, ABudgetThatCannotHoldTheSinksIsOneLine) {
    const auto capture = test::randomCapture(Shape{1, 2, 2, 40, 8}, 5);
    PressParams p;
    p.method = "cur";
    p.budget = 4;
    try {
        Press::create("cur")->select(*capture, p);
        ADD_FAILURE() << "cur took a budget of 4 with 4 sinks";
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "--budget 4 must exceed --sinks 4 (the budget includes the sinks)");
    }
    p.budget = 40;  // the whole prompt: kept whatever the sinks
    EXPECT_EQ(Press::create("cur")->select(*capture, p).entries(), 2 * 40);
}

}  // namespace
}  // namespace kvlens
