// SimLayerKV against a reference written here in double precision from its definition:
// per layer, the last prompt query's softmax attention over every key, averaged over
// the query heads; the layer is lazy when the share on the first `sinks` and the last
// B - sinks positions is above the threshold; a lazy layer keeps exactly those
// positions on every head, the others the whole prompt. The thresholds are put
// between the layers' measured shares, so that both kinds of layer occur.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "core/Error.h"
#include "engine/compress/Capture.h"
#include "engine/compress/presses/Press.h"
#include "RandomCapture.h"

namespace kvlens {
namespace {

using Shape = test::CaptureShape;

double lazyShare(const Capture& c, int64_t layer, int64_t sinks, int64_t budget) {
    const int64_t T = c.promptLength(), H = c.queryHeads(), G = H / c.kvHeads(), D = c.headDim();
    const at::Tensor q = c.windowQueries(layer).to(at::kDouble).contiguous();
    const at::Tensor k = c.keys(layer).to(at::kDouble).contiguous();
    const auto qa = q.accessor<double, 3>();
    const auto ka = k.accessor<double, 3>();
    std::vector<double> mean(T, 0.0);
    for (int64_t h = 0; h < H; ++h) {
        std::vector<double> logits(T);
        for (int64_t j = 0; j < T; ++j) {
            double dot = 0.0;
            for (int64_t d = 0; d < D; ++d) dot += qa[h][q.size(1) - 1][d] * ka[h / G][j][d];
            logits[j] = dot / std::sqrt(double(D));
        }
        const double top = *std::max_element(logits.begin(), logits.end());
        double sum = 0.0;
        for (double& v : logits) sum += (v = std::exp(v - top));
        for (int64_t j = 0; j < T; ++j) mean[j] += logits[j] / sum / double(H);
    }
    double share = 0.0;
    for (int64_t j = 0; j < T; ++j)
        if (j < sinks || j >= T - (budget - sinks)) share += mean[j];
    return share;
}

class SimLayerKvShapes : public ::testing::TestWithParam<Shape> {};

TEST_P(SimLayerKvShapes, LazyLayersKeepTheSinksAndTheRecentOnesByTheDefinition) {
    const Shape shape = GetParam();
    const auto capture = test::randomCapture(shape, 13 + shape.heads);
    const int64_t T = shape.promptLength;
    for (int64_t sinks : {int64_t(0), int64_t(4)}) {
        for (int64_t B : {int64_t(20), T / 2}) {
            std::vector<double> shares;
            for (int64_t l = 0; l < shape.layers; ++l) shares.push_back(lazyShare(*capture, l, sinks, B));
            std::vector<double> sorted = shares;
            std::sort(sorted.begin(), sorted.end());
            // Between the two lowest shares: one layer full, the others lazy; and 1: none lazy.
            for (double threshold : {(sorted[0] + sorted[1]) / 2, 1.0}) {
                PressParams p;
                p.method = "simlayerkv";
                p.budget = B;
                p.sinks = sinks;
                p.lazy = threshold;
                const Selection s = Press::create("simlayerkv")->select(*capture, p);
                ASSERT_EQ(s.headsPerLayer(), shape.kvHeads);
                int64_t lazyLayers = 0;
                for (int64_t l = 0; l < shape.layers; ++l) {
                    const bool lazy = shares[l] > threshold;
                    lazyLayers += lazy;
                    std::vector<int32_t> want;
                    for (int64_t j = 0; j < T; ++j)
                        if (!lazy || j < sinks || j >= T - (B - sinks)) want.push_back(int32_t(j));
                    EXPECT_EQ(s.layerBudgets[l], lazy ? B : T);
                    for (int64_t h = 0; h < shape.kvHeads; ++h)
                        EXPECT_EQ(s.kept[l][h], want) << "sinks " << sinks << " B " << B << " layer " << l;
                }
                EXPECT_EQ(lazyLayers, threshold == 1.0 ? 0 : shape.layers - 1) << "sinks " << sinks << " B " << B;
            }
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Shapes, SimLayerKvShapes,
                         ::testing::Values(Shape{3, 4, 2, 120, 16},   // GQA
                                           Shape{3, 3, 3, 80, 8},     // MHA
                                           Shape{4, 8, 1, 70, 32}));  // MQA

TEST(SimLayerKvPress, ABudgetThatCannotHoldTheSinksIsOneLine) {
    const auto capture = test::randomCapture(Shape{1, 2, 2, 40, 8}, 5);
    PressParams p;
    p.method = "simlayerkv";
    p.budget = 3;
    try {
        Press::create("simlayerkv")->select(*capture, p);
        ADD_FAILURE() << "simlayerkv took a budget of 3 with 4 sinks";
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "--budget 3 must exceed --sinks 4 (the budget includes the sinks)");
    }
}

}  // namespace
}  // namespace kvlens
