// PyramidKV's per-layer budgets (factory and exact schedules) against the
// reference schedules in testdata/kv-oracle, plus StreamingLLM's kept indices.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>

#include "engine/compress/Capture.h"
#include "engine/compress/presses/Press.h"
#include "engine/compress/presses/PyramidKvPress.h"

namespace kvlens {
namespace {

using nlohmann::json;

const std::string kSchedules =
    std::string(KVLENS_SHARED_DIR) + "/testdata/kv-oracle/pyramid_schedules.json";

// Null json when the file is absent.
const json& schedules() {
    static const json j = [] {
        std::ifstream in(kSchedules);
        return in ? json::parse(in) : json();
    }();
    return j;
}

#define REQUIRE_SCHEDULES()        \
    const json& all = schedules(); \
    if (all.is_null()) GTEST_SKIP() << "test vectors not found: " << kSchedules

int64_t sum(const std::vector<int64_t>& v) {
    return std::accumulate(v.begin(), v.end(), int64_t(0));
}

TEST(PyramidSchedule, FactoryReproducesReferenceSchedules) {
    REQUIRE_SCHEDULES();
    ASSERT_FALSE(all.at("factory").empty());
    for (const json& f : all.at("factory")) {
        const int64_t L = f.at("n_layers"), W = f.at("window"), B = f.at("max_capacity_prompt"),
                      T = f.at("q_len");
        const double beta = f.at("beta");
        SCOPED_TRACE("L=" + std::to_string(L) + " W=" + std::to_string(W) +
                     " B=" + std::to_string(B) + " T=" + std::to_string(T) + " branch " +
                     f.at("branch").get<std::string>());
        const std::vector<int64_t> got =
            PyramidKvPress::prefixBudgets(L, T, W, B, beta, PyramidSchedule::Factory);
        EXPECT_EQ(got, f.at("per_layer_prefix_budget").get<std::vector<int64_t>>());
        const std::vector<int64_t> total = f.at("per_layer_total");
        ASSERT_EQ(total.size(), got.size());
        for (size_t l = 0; l < got.size(); ++l) EXPECT_EQ(got[l] + W, total[l]) << "layer " << l;
    }
}

// The paper's line in real numbers (k_top = P/beta, k_0 = 2P - k_top) is the one the exact
// schedule rounds: each layer within 1 of it, and the sum exactly L * P.
TEST(PyramidSchedule, ExactRoundsThePaperLine) {
    REQUIRE_SCHEDULES();
    ASSERT_FALSE(all.at("paper").empty());
    for (const json& p : all.at("paper")) {
        const int64_t L = p.at("n_layers"), P = p.at("avg_prefix_budget"), W = 32, T = 8192;
        SCOPED_TRACE("L=" + std::to_string(L) + " P=" + std::to_string(P));
        const std::vector<double> line = p.at("per_layer_prefix_budget");
        const std::vector<int64_t> got =
            PyramidKvPress::prefixBudgets(L, T, W, P + W, p.at("beta"), PyramidSchedule::Exact);
        ASSERT_EQ(got.size(), line.size());
        EXPECT_EQ(sum(got), L * P);
        for (size_t l = 0; l < got.size(); ++l) {
            // The paper's values are rounded to 4 decimals.
            EXPECT_LT(std::abs(double(got[l]) - line[l]), 1.0 + 1e-4) << "layer " << l;
        }
    }
}

// The exact schedule is the largest-remainder rounding of the real line. At L=7, P=28,
// beta=20 the line is 273/5, 686/15, 553/15, 28, 287/15, 154/15, 7/5: layer 3 is exactly 28
// (in doubles 27.999999999999996) and keeps 28; the two extra entries go to the largest
// fractions, 3/5 (layer 0) and 2/5 (layer 6), as exact rationals give them. Taking the
// fraction of the unrounded double made layer 3 rank first (0.99999...) and end at 29.
TEST(PyramidSchedule, ExactRoundsByTheTrueRemainder) {
    EXPECT_EQ(PyramidKvPress::prefixBudgets(7, 4096, 32, 60, 20.0, PyramidSchedule::Exact),
              (std::vector<int64_t>{55, 46, 37, 28, 19, 10, 1}));
    // The same line from another budget and window: 54.6 .. 1.4 again with W=16, B=44.
    EXPECT_EQ(PyramidKvPress::prefixBudgets(7, 4096, 16, 44, 20.0, PyramidSchedule::Exact),
              (std::vector<int64_t>{55, 46, 37, 28, 19, 10, 1}));
}

// kvpress puts beta on the total including the window, rounds each layer on its own and
// falls back to uniform SnapKV when the smallest layer would not hold the window, so its
// per-layer counts are not ours. What both share is the mean: a ratio budget resolves to
// (1 - compression_ratio) * k_len entries and the layers average exactly that.
TEST(PyramidSchedule, ExactMeanMatchesKvpressMean) {
    REQUIRE_SCHEDULES();
    ASSERT_FALSE(all.at("kvpress").empty());
    for (const json& k : all.at("kvpress")) {
        const int64_t L = k.at("n_layers"), W = k.at("window"), T = k.at("k_len");
        PressParams p;
        p.method = "pyramidkv";
        p.window = W;
        p.budget = 0;
        p.budgetRatio = 1.0 - k.at("compression_ratio").get<double>();
        const int64_t B = p.resolveBudget(T);
        SCOPED_TRACE("L=" + std::to_string(L) + " W=" + std::to_string(W) +
                     " B=" + std::to_string(B));
        const std::vector<int64_t> got =
            PyramidKvPress::prefixBudgets(L, T, W, B, k.at("beta"), PyramidSchedule::Exact);
        EXPECT_DOUBLE_EQ(double(sum(got) + L * W) / double(L), k.at("mean_total").get<double>());
    }
}

struct Grid {
    int64_t L, T, W, B;
    double beta;
};

std::string describe(const Grid& g) {
    return "L=" + std::to_string(g.L) + " T=" + std::to_string(g.T) + " W=" + std::to_string(g.W) +
           " B=" + std::to_string(g.B) + " beta=" + std::to_string(g.beta);
}

// Prompt lengths around every branch: no compression, clamped at T - W, and the free line.
std::vector<Grid> grid() {
    std::vector<Grid> out;
    for (int64_t L : {1, 2, 3, 4, 5, 7, 22, 32, 80})
        for (int64_t W : {1, 8, 32, 64})
            for (int64_t B : {W + 1, W + 3, W + 17, int64_t(128), int64_t(2048)})
                for (double beta : {1.0, 1.5, 2.0, 3.0, 7.0, 20.0, 100.0}) {
                    if (B <= W) continue;
                    const int64_t P = B - W;
                    for (int64_t T : {B - 1, B, B + 1, B + P / 2, W + 2 * P - 1, W + 2 * P,
                                      W + 2 * P + 1, int64_t(8192)}) {
                        if (T > W) out.push_back({L, T, W, B, beta});
                    }
                }
    return out;
}

TEST(PyramidSchedule, ExactSumsToTheMeanBudgetAndFallsWithinBounds) {
    for (const Grid& g : grid()) {
        const std::vector<int64_t> got =
            PyramidKvPress::prefixBudgets(g.L, g.T, g.W, g.B, g.beta, PyramidSchedule::Exact);
        ASSERT_EQ(int64_t(got.size()), g.L) << describe(g);
        if (g.T <= g.B) {
            EXPECT_EQ(got, std::vector<int64_t>(g.L, g.T - g.W)) << describe(g);
            continue;
        }
        EXPECT_EQ(sum(got), g.L * (g.B - g.W)) << describe(g);
        for (int64_t l = 0; l < g.L; ++l) {
            EXPECT_GE(got[l], 0) << describe(g) << " layer " << l;
            EXPECT_LE(got[l], g.T - g.W) << describe(g) << " layer " << l;
            if (l > 0) {
                EXPECT_LE(got[l], got[l - 1]) << describe(g) << " layer " << l;
            }
        }
    }
}

TEST(PyramidSchedule, FactoryOvershootsButStaysWithinBounds) {
    for (const Grid& g : grid()) {
        const std::vector<int64_t> got =
            PyramidKvPress::prefixBudgets(g.L, g.T, g.W, g.B, g.beta, PyramidSchedule::Factory);
        ASSERT_EQ(int64_t(got.size()), g.L) << describe(g);
        if (g.T <= g.B) {
            EXPECT_EQ(got, std::vector<int64_t>(g.L, g.T - g.W)) << describe(g);
            continue;
        }
        // Integer steps round the fall down, so the layers hold at least the mean budget.
        EXPECT_GE(sum(got), g.L * (g.B - g.W)) << describe(g);
        for (int64_t l = 0; l < g.L; ++l) {
            EXPECT_GE(got[l], 0) << describe(g) << " layer " << l;
            EXPECT_LE(got[l], g.T - g.W) << describe(g) << " layer " << l;
            if (l > 0) {
                EXPECT_LE(got[l], got[l - 1]) << describe(g) << " layer " << l;
            }
        }
    }
}

TEST(PyramidSchedule, PressUsesTheScheduleItNames) {
    const int64_t L = 5, H = 2, T = 120, D = 8, W = 16;
    at::manual_seed(11);
    std::vector<at::Tensor> q, k, v;
    for (int64_t l = 0; l < L; ++l) {
        q.push_back(at::randn({H, 64, D}));
        k.push_back(at::randn({H, T, D}));
        v.push_back(at::randn({H, T, D}));
    }
    const auto capture = Capture::fromTensors(q, k, v);
    for (PyramidSchedule schedule : {PyramidSchedule::Exact, PyramidSchedule::Factory}) {
        PressParams p;
        p.method = "pyramidkv";
        p.budget = 40;
        p.window = W;
        p.schedule = schedule;
        const Selection s = Press::create("pyramidkv")->select(*capture, p);
        const std::vector<int64_t> prefix =
            PyramidKvPress::prefixBudgets(L, T, W, p.budget, p.beta, schedule);
        for (int64_t l = 0; l < L; ++l) {
            EXPECT_EQ(s.layerBudgets[l], prefix[l] + W) << scheduleName(schedule) << " layer " << l;
            for (const auto& head : s.kept[l]) {
                EXPECT_EQ(int64_t(head.size()), prefix[l] + W)
                    << scheduleName(schedule) << " layer " << l;
            }
        }
    }
}

// Both StreamingLLM references keep 4 sinks and the most recent tokens: KVCache-Factory
// with a budget of max_capacity_prompt, kvpress with compression_ratio, i.e. our ratio
// budget of 1 - compression_ratio.
TEST(PyramidSchedule, StreamingLlmKeepsTheReferenceIndices) {
    REQUIRE_SCHEDULES();
    const json& refs = all.at("streamingllm");
    ASSERT_EQ(refs.size(), 2u);
    for (const json& r : refs) {
        const std::string impl = r.at("impl");
        SCOPED_TRACE(impl);
        const int64_t T = r.at("q_len");
        const auto capture = Capture::fromTensors({at::zeros({2, 64, 4})}, {at::zeros({2, T, 4})},
                                                  {at::zeros({2, T, 4})});
        PressParams p;
        p.method = "streamingllm";
        p.sinks = 4;
        if (r.contains("max_capacity_prompt")) {
            p.budget = r.at("max_capacity_prompt");
        } else {
            ASSERT_NE(impl.find("compression_ratio=0.75"), std::string::npos);
            p.budget = 0;
            p.budgetRatio = 0.25;
        }
        const Selection s = Press::create("streamingllm")->select(*capture, p);
        const std::vector<int32_t> want = r.at("kept");
        for (const auto& head : s.kept[0]) EXPECT_EQ(head, want);
    }
}

}  // namespace
}  // namespace kvlens
