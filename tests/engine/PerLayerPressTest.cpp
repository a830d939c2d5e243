// Per-layer budgets over a scorer against references written here: the layers' shares of
// L x (B - W - sinks) in proportion to the weights (worked out by hand below), each layer
// keeping per head its window, the scorer's sinks and its best by the scorer (KNorm:
// minus the key's L2 norm, in double; ties to the lower position); equal weights are the
// scorer itself at the same budget everywhere (SnapKV's own selection); bad weights in
// one line.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "core/Error.h"
#include "engine/compress/Capture.h"
#include "engine/compress/presses/Press.h"
#include "LagReference.h"
#include "RandomCapture.h"

namespace kvlens {
namespace {

using Shape = test::CaptureShape;

std::vector<int32_t> byNorm(const Capture& c, int64_t layer, int64_t head, int64_t b, int64_t W) {
    const int64_t T = c.promptLength();
    const at::Tensor k = c.keys(layer).to(at::kDouble);
    std::vector<double> score(T - W);
    for (int64_t j = 0; j < T - W; ++j) score[j] = -k[head][j].norm().item<double>();
    std::vector<int32_t> order(T - W);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int32_t x, int32_t y) { return score[x] > score[y]; });
    order.resize(size_t(b));
    for (int64_t t = T - W; t < T; ++t) order.push_back(int32_t(t));
    std::sort(order.begin(), order.end());
    return order;
}

TEST(PerLayerPress, LayersKeepTheirWeightedShareByTheScorer) {
    const Shape shape{3, 4, 2, 120, 16};
    const auto capture = test::randomCapture(shape, 23);
    struct Case {
        std::vector<double> weights;
        int64_t budget;
        std::vector<int64_t> prefixBudgets;  // by hand
    };
    // B - W = 40, total 120: 3:2:1 gives 60/40/20; 1:1:1 at B - W = 33 (total 99) gives 33 each;
    // 1:1:2 at B - W = 25 (total 75): 18.75 -> 18, 18, 37.5 -> 37, the 2 left to the first two.
    for (const Case& k : {Case{{3, 2, 1}, 56, {60, 40, 20}}, Case{{1, 1, 1}, 49, {33, 33, 33}},
                          Case{{1, 1, 2}, 41, {19, 19, 37}}}) {
        PressParams p;
        p.method = "perlayer";
        p.scorer = "knorm";
        p.budget = k.budget;
        p.window = 16;
        p.layerWeights = k.weights;
        const Selection s = Press::create("perlayer")->select(*capture, p);
        for (int64_t l = 0; l < shape.layers; ++l) {
            EXPECT_EQ(s.layerBudgets[l], k.prefixBudgets[l] + 16) << "B " << k.budget << " layer " << l;
            for (int64_t h = 0; h < shape.kvHeads; ++h)
                EXPECT_EQ(s.kept[l][h], byNorm(*capture, l, h, k.prefixBudgets[l], 16))
                    << "B " << k.budget << " layer " << l << " head " << h;
        }
    }
}

// With --scorer lagkv the layers share L x (B - sinks - tail): LagKV's 4 sinks and its tail
// (the last full partition of 16 and the remainder: 100 .. 119 of 120, longer than the window
// of 8) are kept whole beside each layer's share, ranked by LagKV's scores (double reference).
TEST(PerLayerPress, ALagKvScorerKeepsItsTailBesideTheShares) {
    const Shape shape{3, 4, 2, 120, 16};
    const auto capture = test::randomCapture(shape, 29);
    PressParams p;
    p.method = "perlayer";
    p.scorer = "lagkv";
    p.budget = 64;  // 40 beside the 24 kept whole: 120 in all, 3:2:1 gives 60/40/20
    p.window = 8;
    p.lag = 16;
    p.layerWeights = {3, 2, 1};
    const Selection s = Press::create("perlayer")->select(*capture, p);
    const std::vector<int64_t> share = {60, 40, 20};
    for (int64_t l = 0; l < shape.layers; ++l) {
        EXPECT_EQ(s.layerBudgets[l], share[l] + 24) << "layer " << l;
        for (int64_t h = 0; h < shape.kvHeads; ++h) {
            const std::vector<double> score = test::lagScores(capture->keys(l), capture->values(l), h, 120, 4, 16);
            std::vector<int32_t> order(96);
            std::iota(order.begin(), order.end(), 4);
            std::stable_sort(order.begin(), order.end(), [&](int32_t x, int32_t y) { return score[x] > score[y]; });
            order.resize(size_t(share[l]));
            for (int32_t t : {0, 1, 2, 3}) order.push_back(t);
            for (int32_t t = 100; t < 120; ++t) order.push_back(t);
            std::sort(order.begin(), order.end());
            EXPECT_EQ(s.kept[l][h], order) << "layer " << l << " head " << h;
        }
    }
}

TEST(PerLayerPress, EqualWeightsAreTheScorerItself) {
    const auto capture = test::randomCapture(Shape{2, 4, 2, 150, 16}, 31);
    for (GqaMode mode : {GqaMode::KvHead, GqaMode::QueryHead}) {
        PressParams p;
        p.method = "perlayer";
        p.budget = 48;
        p.window = 8;
        p.gqa = mode;
        PressParams snap = p;
        snap.method = "snapkv";
        const Selection a = Press::create("perlayer")->select(*capture, p);
        EXPECT_EQ(a.kept, Press::create("snapkv")->select(*capture, snap).kept) << gqaModeName(mode);
        EXPECT_EQ(a.gqa, mode);
        p.layerWeights = {2.5, 2.5};
        EXPECT_EQ(Press::create("perlayer")->select(*capture, p).kept, a.kept) << gqaModeName(mode);
    }
}

TEST(PerLayerPress, BadWeightsAreOneLine) {
    const auto capture = test::randomCapture(Shape{2, 4, 2, 150, 16}, 31);
    auto errorOf = [&](const PressParams& p) {
        try {
            Press::create(p.method)->select(*capture, p);
        } catch (const Error& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    PressParams p;
    p.method = "perlayer";
    p.budget = 48;
    p.layerWeights = {1, 2, 3};
    EXPECT_EQ(errorOf(p), "--layer-weights has 3 weights; the model has 2 layers, one weight each");
    p.layerWeights = {1, 0};
    EXPECT_EQ(errorOf(p), "--layer-weights: 0 is not a positive weight");
    p.layerWeights = {1, 1};
    p.method = "adakv";
    EXPECT_EQ(errorOf(p), "--layer-weights is for --method perlayer, not adakv");
}

}  // namespace
}  // namespace kvlens
