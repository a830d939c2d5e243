// The scoring methods that read the capture's keys and last query (KNorm, KeyDiff, TOVA)
// against references written here in double precision from the papers' definitions, not
// from the presses' code: on GQA and MHA captures, with ties going to the lower position.
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

using Rows = std::vector<std::vector<double>>;  // [head][position]

using Shape = test::CaptureShape;
using test::randomCapture;

Rows keysOf(const Capture& c, int64_t layer, int64_t head) {
    const at::Tensor k = c.keys(layer).to(at::kDouble).contiguous();
    const auto a = k.accessor<double, 3>();
    Rows out(c.promptLength(), std::vector<double>(c.headDim()));
    for (int64_t t = 0; t < c.promptLength(); ++t)
        for (int64_t d = 0; d < c.headDim(); ++d) out[t][d] = a[head][t][d];
    return out;
}

double dot(const std::vector<double>& a, const std::vector<double>& b) {
    double s = 0.0;
    for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
    return s;
}

// KNorm: minus ||k_t||_2.
std::vector<double> knormReference(const Capture& c, int64_t layer, int64_t head) {
    std::vector<double> s;
    for (const auto& k : keysOf(c, layer, head)) s.push_back(-std::sqrt(dot(k, k)));
    return s;
}

// KeyDiff: anchor = mean over t of k_t / ||k_t||; score = -cos(k_t, anchor).
std::vector<double> keydiffReference(const Capture& c, int64_t layer, int64_t head) {
    const Rows keys = keysOf(c, layer, head);
    std::vector<double> anchor(c.headDim(), 0.0);
    for (const auto& k : keys) {
        const double n = std::sqrt(dot(k, k));
        for (size_t d = 0; d < k.size(); ++d) anchor[d] += k[d] / n / double(keys.size());
    }
    std::vector<double> s;
    for (const auto& k : keys) s.push_back(-dot(k, anchor) / (std::sqrt(dot(k, k)) * std::sqrt(dot(anchor, anchor))));
    return s;
}

// TOVA: the last query's softmax over all T keys, per query head (head h reads KV head
// h / (H / KV)), averaged over the layer's query heads.
std::vector<double> tovaReference(const Capture& c, int64_t layer) {
    const int64_t H = c.queryHeads(), G = H / c.kvHeads(), T = c.promptLength(), D = c.headDim();
    const at::Tensor q = c.windowQueries(layer).to(at::kDouble).contiguous();
    const auto qa = q.accessor<double, 3>();
    std::vector<double> mean(T, 0.0);
    for (int64_t h = 0; h < H; ++h) {
        const Rows keys = keysOf(c, layer, h / G);
        std::vector<double> last(D);
        for (int64_t d = 0; d < D; ++d) last[d] = qa[h][q.size(1) - 1][d];
        std::vector<double> logit(T);
        double top = -INFINITY, z = 0.0;
        for (int64_t t = 0; t < T; ++t) top = std::max(top, logit[t] = dot(last, keys[t]) / std::sqrt(double(D)));
        for (double& x : logit) z += (x = std::exp(x - top));
        for (int64_t t = 0; t < T; ++t) mean[t] += logit[t] / z / double(H);
    }
    return mean;
}

// The B highest scores' positions, ascending; equal scores prefer the lower position.
std::vector<int32_t> topB(const std::vector<double>& scores, int64_t B) {
    std::vector<int32_t> order(scores.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return scores[a] > scores[b]; });
    order.resize(static_cast<size_t>(B));
    std::sort(order.begin(), order.end());
    return order;
}

Selection select(const Capture& c, const std::string& method, int64_t budget) {
    PressParams p;
    p.method = method;
    p.budget = budget;
    return Press::create(method)->select(c, p);
}

class ScoringPress : public ::testing::TestWithParam<Shape> {};

TEST_P(ScoringPress, KeptSetsEqualTheDefinitionsInDouble) {
    const Shape shape = GetParam();
    const auto capture = randomCapture(shape, 17 + shape.heads);
    for (int64_t B : {int64_t(1), int64_t(9), int64_t(40), shape.promptLength - 1}) {
        const Selection kn = select(*capture, "knorm", B), kd = select(*capture, "keydiff", B),
                        tv = select(*capture, "tova", B);
        for (const Selection* s : {&kn, &kd, &tv}) {
            EXPECT_EQ(s->gqa, GqaMode::KvHead);
            EXPECT_EQ(s->headsPerLayer(), shape.kvHeads);
            EXPECT_EQ(s->layerBudgets, std::vector<int64_t>(shape.layers, B));
        }
        for (int64_t l = 0; l < shape.layers; ++l) {
            const std::vector<int32_t> tova = topB(tovaReference(*capture, l), B);
            for (int64_t h = 0; h < shape.kvHeads; ++h) {
                const std::string where = "B " + std::to_string(B) + " layer " + std::to_string(l) + " head " +
                                          std::to_string(h);
                EXPECT_EQ(kn.kept[l][h], topB(knormReference(*capture, l, h), B)) << "knorm " << where;
                EXPECT_EQ(kd.kept[l][h], topB(keydiffReference(*capture, l, h), B)) << "keydiff " << where;
                EXPECT_EQ(tv.kept[l][h], tova) << "tova " << where;  // one set for the whole layer
            }
        }
    }
    // A budget that holds the prompt keeps it all.
    EXPECT_EQ(select(*capture, "knorm", shape.promptLength).entries(),
              shape.layers * shape.kvHeads * shape.promptLength);
}

INSTANTIATE_TEST_SUITE_P(Shapes, ScoringPress,
                         ::testing::Values(Shape{2, 4, 2, 150, 16},   // GQA, 2 query heads per KV head
                                           Shape{2, 3, 3, 97, 8},     // MHA
                                           Shape{1, 8, 1, 70, 32}));  // MQA

// Their scores depend on the capture alone: made on first use, kept, and counted.
TEST(ScoringPress, ScoresAreKeptInTheCaptureAndCounted) {
    const Shape shape{2, 4, 2, 150, 16};
    const auto capture = randomCapture(shape, 5);
    const int64_t before = capture->bytes();
    const Selection a = select(*capture, "knorm", 20);
    EXPECT_EQ(capture->bytes(), before + shape.layers * shape.kvHeads * shape.promptLength * 4);
    select(*capture, "keydiff", 20);
    select(*capture, "tova", 20);
    EXPECT_EQ(capture->bytes(), before + shape.layers * (2 * shape.kvHeads + 1) * shape.promptLength * 4);
    EXPECT_EQ(select(*capture, "knorm", 20).kept, a.kept);  // from the kept scores, the same
    EXPECT_EQ(capture->bytes(), before + shape.layers * (2 * shape.kvHeads + 1) * shape.promptLength * 4);
}

TEST(ScoringPress, TiesGoToTheLowerPosition) {
    // Every key the same: every score equal, for each method. The queries are small
    // integers, so that every q.k is exact in whatever order a BLAS kernel sums it
    // (random queries gave TOVA unequal last bits on an AVX512-FP16 machine).
    const int64_t T = 30, D = 8;
    std::vector<at::Tensor> q = {at::randint(-4, 5, {4, T, D}).to(at::kFloat)}, k = {at::ones({2, T, D}) * 0.5},
                            v = {at::randn({2, T, D})};
    const auto capture = Capture::fromTensors(q, k, v);
    std::vector<int32_t> first(12);
    std::iota(first.begin(), first.end(), 0);
    for (const char* method : {"knorm", "keydiff", "tova"}) {
        const Selection s = select(*capture, method, 12);
        for (const auto& head : s.kept[0]) EXPECT_EQ(head, first) << method;
    }
}

TEST(ScoringPress, ABadBudgetIsOneLineNamingTheFlag) {
    const auto capture = randomCapture(Shape{1, 2, 2, 40, 8}, 3);
    for (const char* method : {"knorm", "keydiff", "tova"}) {
        PressParams p;
        p.method = method;
        p.budget = -4;
        try {
            Press::create(method)->select(*capture, p);
            ADD_FAILURE() << method << " took a negative budget";
        } catch (const Error& e) {
            EXPECT_STREQ(e.what(), "--budget must be positive") << method;
        }
        p.budget = 0;
        p.budgetRatio = 1.5;
        try {
            Press::create(method)->select(*capture, p);
            ADD_FAILURE() << method << " took a ratio over 100%";
        } catch (const Error& e) {
            EXPECT_STREQ(e.what(), "--budget as a ratio must be in (0, 100%]") << method;
        }
    }
}

}  // namespace
}  // namespace kvlens
