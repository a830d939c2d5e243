// CAKE against a reference written here in double precision from its definition (the
// paper's layer preference and eviction indicator, measured as the authors' code
// does), not from the press's code: per layer, the attention of the last W prompt
// queries over every key up to themselves; over the prefix columns its entropy
// -sum a log(a + 1e-10) and the sum of its variances over the rows (n - 1);
// preference = entropy^(1/tau1) x variance^(1/tau2); the layers' budgets
// L x (B - W) shared in proportion, truncated, held to T - W with the excess spread
// over the others, the rounding's remainder given one by one from the first layer;
// each KV head keeps its window and its best by the indicator mean + gamma x variance,
// average-pooled over 5 (zeros padding counted), averaged over the query heads. On
// GQA, MHA and MQA captures; with another scorer (KNorm) the budgets stay and the
// ranking changes.
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
#include "LagReference.h"
#include "RandomCapture.h"

namespace kvlens {
namespace {

using Shape = test::CaptureShape;

// a[h][i][j]: query head h, window row i, prefix column j.
using WindowAttention = std::vector<std::vector<std::vector<double>>>;

WindowAttention windowAttention(const Capture& c, int64_t layer, int64_t W) {
    const int64_t T = c.promptLength(), H = c.queryHeads(), G = H / c.kvHeads(), D = c.headDim();
    const at::Tensor q = c.windowQueries(layer).to(at::kDouble).contiguous();
    const at::Tensor k = c.keys(layer).to(at::kDouble).contiguous();
    const auto qa = q.accessor<double, 3>();
    const auto ka = k.accessor<double, 3>();
    const int64_t Wc = q.size(1);
    WindowAttention a(H, std::vector<std::vector<double>>(W, std::vector<double>(T - W, 0.0)));
    for (int64_t h = 0; h < H; ++h) {
        for (int64_t i = 0; i < W; ++i) {
            const int64_t pos = T - W + i;
            std::vector<double> logits(pos + 1);
            for (int64_t j = 0; j <= pos; ++j) {
                double dot = 0.0;
                for (int64_t d = 0; d < D; ++d) dot += qa[h][Wc - W + i][d] * ka[h / G][j][d];
                logits[j] = dot / std::sqrt(double(D));
            }
            const double top = *std::max_element(logits.begin(), logits.end());
            double sum = 0.0;
            for (double& v : logits) sum += (v = std::exp(v - top));
            for (int64_t j = 0; j < T - W; ++j) a[h][i][j] = logits[j] / sum;
        }
    }
    return a;
}

double mean(const WindowAttention& a, int64_t h, int64_t j) {
    double s = 0.0;
    for (const auto& row : a[h]) s += row[j];
    return s / double(a[h].size());
}

double variance(const WindowAttention& a, int64_t h, int64_t j) {
    const double m = mean(a, h, j);
    double s = 0.0;
    for (const auto& row : a[h]) s += (row[j] - m) * (row[j] - m);
    return s / double(a[h].size() - 1);
}

double preference(const WindowAttention& a, double tau1, double tau2) {
    double entropy = 0.0, var = 0.0;
    for (size_t h = 0; h < a.size(); ++h) {
        for (const auto& row : a[h])
            for (double v : row) entropy -= v * std::log(v + 1e-10);
        for (size_t j = 0; j < a[h][0].size(); ++j) var += variance(a, int64_t(h), int64_t(j));
    }
    return std::pow(entropy, 1.0 / tau1) * std::pow(var, 1.0 / tau2);
}

std::vector<int64_t> layerBudgets(const std::vector<double>& pref, int64_t total, int64_t cap) {
    const size_t L = pref.size();
    const double sum = std::accumulate(pref.begin(), pref.end(), 0.0);
    std::vector<int64_t> b(L);
    for (size_t l = 0; l < L; ++l) b[l] = int64_t(pref[l] / sum * double(total));
    int64_t excess = 0;
    for (auto& v : b)
        if (v > cap) excess += v - cap, v = cap;
    auto give = [&](int64_t amount, int64_t step, bool (*ok)(int64_t, int64_t)) {
        std::vector<size_t> to;
        for (size_t l = 0; l < L; ++l)
            if (ok(b[l], cap)) to.push_back(l);
        for (size_t i = 0; i < to.size(); ++i)
            b[to[i]] += step * (amount / int64_t(to.size()) + (int64_t(i) < amount % int64_t(to.size()) ? 1 : 0));
    };
    if (excess > 0) give(excess, 1, [](int64_t v, int64_t c) { return v < c; });
    const int64_t diff = total - std::accumulate(b.begin(), b.end(), int64_t(0));
    if (diff > 0) give(diff, 1, [](int64_t v, int64_t c) { return v < c; });
    if (diff < 0) give(-diff, -1, [](int64_t v, int64_t) { return v > 1; });
    return b;
}

// The indicator per KV head over the prefix.
std::vector<std::vector<double>> indicator(const WindowAttention& a, int64_t kvHeads, double gamma) {
    const int64_t H = int64_t(a.size()), G = H / kvHeads, n = int64_t(a[0][0].size());
    std::vector<std::vector<double>> out(kvHeads, std::vector<double>(n, 0.0));
    for (int64_t h = 0; h < H; ++h) {
        std::vector<double> s(n);
        for (int64_t j = 0; j < n; ++j) s[j] = mean(a, h, j) + gamma * variance(a, h, j);
        for (int64_t j = 0; j < n; ++j) {
            double pooled = 0.0;
            for (int64_t d = -2; d <= 2; ++d)
                if (j + d >= 0 && j + d < n) pooled += s[j + d];
            out[h / G][j] += pooled / 5.0 / double(G);
        }
    }
    return out;
}

// The window and the b best of `scores` (over the prefix), ties to the lower position.
std::vector<int32_t> keep(const std::vector<double>& scores, int64_t b, int64_t T, int64_t W) {
    std::vector<int32_t> order(scores.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int32_t x, int32_t y) { return scores[x] > scores[y]; });
    order.resize(size_t(b));
    for (int64_t t = T - W; t < T; ++t) order.push_back(int32_t(t));
    std::sort(order.begin(), order.end());
    return order;
}

class CakePressShapes : public ::testing::TestWithParam<Shape> {};

TEST_P(CakePressShapes, BudgetsAndKeptSetsEqualTheDefinitionInDouble) {
    const Shape shape = GetParam();
    const auto capture = test::randomCapture(shape, 41 + shape.heads);
    const int64_t T = shape.promptLength, L = shape.layers;
    struct Case {
        int64_t budget, window;
        double tau1, tau2, gamma;
    };
    bool budgetsDiffer = false;
    for (const Case& k : {Case{40, 8, 1.0, 1.0, 200.0}, Case{24, 4, 1.6, 0.4, 0.0}, Case{T - 20, 16, 0.5, 2.0, 50.0}}) {
        PressParams p;
        p.method = "cake";
        p.budget = k.budget;
        p.window = k.window;
        p.tau1 = k.tau1;
        p.tau2 = k.tau2;
        p.gamma = k.gamma;
        std::vector<WindowAttention> a;
        std::vector<double> pref;
        for (int64_t l = 0; l < L; ++l) {
            a.push_back(windowAttention(*capture, l, k.window));
            pref.push_back(preference(a.back(), k.tau1, k.tau2));
        }
        const std::vector<int64_t> budgets = layerBudgets(pref, (k.budget - k.window) * L, T - k.window);
        const std::string what = "B " + std::to_string(k.budget) + " W " + std::to_string(k.window);
        const Selection s = Press::create("cake")->select(*capture, p);
        ASSERT_EQ(s.headsPerLayer(), shape.kvHeads);
        int64_t total = 0;
        for (int64_t l = 0; l < L; ++l) {
            const int64_t b = std::min(budgets[l], T - k.window);
            EXPECT_EQ(s.layerBudgets[l], b + k.window) << what << " layer " << l;
            total += b;
            budgetsDiffer |= b != budgets[0];
            const auto scores = indicator(a[l], shape.kvHeads, k.gamma);
            for (int64_t h = 0; h < shape.kvHeads; ++h)
                EXPECT_EQ(s.kept[l][h], keep(scores[h], b, T, k.window)) << what << " layer " << l << " head " << h;
        }
        // The layers share exactly L x (B - W) unless one was held to the prompt after the spread.
        if (std::all_of(budgets.begin(), budgets.end(), [&](int64_t v) { return v <= T - k.window; })) {
            EXPECT_EQ(total, (k.budget - k.window) * L) << what;
        }
        // Another scorer keeps the allocation and ranks by its own scores.
        p.scorer = "knorm";
        const Selection byNorm = Press::create("cake")->select(*capture, p);
        EXPECT_EQ(byNorm.layerBudgets, s.layerBudgets) << what;
        for (int64_t l = 0; l < L; ++l) {
            const at::Tensor keys = capture->keys(l).to(at::kDouble);
            for (int64_t h = 0; h < shape.kvHeads; ++h) {
                std::vector<double> negNorm(T - k.window);
                for (int64_t j = 0; j < T - k.window; ++j) negNorm[j] = -keys[h][j].norm().item<double>();
                EXPECT_EQ(byNorm.kept[l][h], keep(negNorm, s.layerBudgets[l] - k.window, T, k.window))
                    << what << " knorm layer " << l << " head " << h;
            }
        }
        // LagKV as the scorer: its 4 sinks and its tail (the last full partition of 16 with the
        // remainder, or the window when longer) kept whole, the layers sharing L x (B - sinks -
        // tail) by the same preferences, each ranking by LagKV's scores between them.
        const int64_t partitions = (T - 4) / 16, tail = std::max(k.window, T - (4 + (partitions - 1) * 16));
        if (k.budget > 4 + tail) {
            p.scorer = "lagkv";
            p.lag = 16;
            p.sinks = 4;
            const Selection byLag = Press::create("cake")->select(*capture, p);
            const std::vector<int64_t> lagBudgets = layerBudgets(pref, (k.budget - tail - 4) * L, T - tail - 4);
            for (int64_t l = 0; l < L; ++l) {
                const int64_t b = std::min(lagBudgets[l], T - tail - 4);
                EXPECT_EQ(byLag.layerBudgets[l], b + tail + 4) << what << " lagkv layer " << l;
                for (int64_t h = 0; h < shape.kvHeads; ++h) {
                    const std::vector<double> lag = test::lagScores(capture->keys(l), capture->values(l), h, T, 4, 16);
                    std::vector<double> ranked(lag.begin() + 4, lag.begin() + (T - tail));
                    std::vector<int32_t> want = keep(ranked, b, 0, 0);
                    for (int32_t& t : want) t += 4;
                    for (int32_t t = 0; t < 4; ++t) want.push_back(t);
                    for (int64_t t = T - tail; t < T; ++t) want.push_back(int32_t(t));
                    std::sort(want.begin(), want.end());
                    EXPECT_EQ(byLag.kept[l][h], want) << what << " lagkv layer " << l << " head " << h;
                }
            }
        }
    }
    if (L > 1) {
        EXPECT_TRUE(budgetsDiffer) << "every layer got the same budget: the allocation went untested";
    }
}

INSTANTIATE_TEST_SUITE_P(Shapes, CakePressShapes,
                         ::testing::Values(Shape{3, 4, 2, 150, 16},   // GQA
                                           Shape{2, 3, 3, 96, 8},     // MHA
                                           Shape{3, 8, 1, 70, 32}));  // MQA

// The authors' budget adjustment: a layer's share above what it can hold goes to the
// others, the truncation's remainder one by one from the first layer, and equal shares
// when no layer has any preference.
TEST(CakePress, LayerBudgetsHoldTheTotalAndTheCap) {
    EXPECT_EQ(presses::cakeLayerBudgets({1.0, 1.0, 1.0}, 100, 50), (std::vector<int64_t>{34, 33, 33}));
    EXPECT_EQ(presses::cakeLayerBudgets({8.0, 1.0, 1.0}, 90, 40), (std::vector<int64_t>{40, 25, 25}));
    EXPECT_EQ(presses::cakeLayerBudgets({0.0, 0.0}, 10, 40), (std::vector<int64_t>{5, 5}));
    EXPECT_EQ(presses::cakeLayerBudgets({3.0, 1.0}, 10, 40), (std::vector<int64_t>{8, 2}));  // 7.5 -> 7, +1 to the first
}

TEST(CakePress, ScoresAreTheIndicatorWithTheWindowNaN) {
    const Shape shape{1, 4, 2, 60, 8};
    const auto capture = test::randomCapture(shape, 7);
    PressParams p;
    p.method = "cake";
    p.window = 8;
    p.gamma = 100;
    const presses::HeadScores s = presses::scorerScores(*capture, 0, p);
    ASSERT_EQ(s.size(), 2u);
    const auto ref = indicator(windowAttention(*capture, 0, 8), 2, 100);
    for (int64_t h = 0; h < 2; ++h) {
        for (int64_t j = 0; j < 52; ++j) EXPECT_NEAR(s[h][j], ref[h][j], 1e-5 * std::abs(ref[h][j]) + 1e-7) << h << " " << j;
        for (int64_t j = 52; j < 60; ++j) EXPECT_TRUE(std::isnan(s[h][j]));
    }
}

}  // namespace
}  // namespace kvlens
