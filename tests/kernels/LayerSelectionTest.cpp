// kernels::layerSelection's CPU body and its steps against definitions written
// out here in double precision: votes, group mean, pooling, top-k with its tie
// rule, and the whole layer.
#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <stdexcept>

#include "kernels/LayerSelection.h"

namespace kvlens::kernels {

// Test names CTest can match (GoogleTest would print the enum's bytes).
void PrintTo(VotePooling pooling, std::ostream* os) {
    *os << (pooling == VotePooling::Max ? "max" : "avg");
}

namespace {

at::Tensor randn(std::vector<int64_t> shape, uint64_t seed) {
    at::Generator gen = at::detail::createCPUGenerator(seed);
    return at::randn(shape, gen);
}

// votes[h][j] = sum over window query i of softmax_i(q_i . k_j / sqrt(D)) over keys
// j' <= T - W + i, for j < T - W; query head h reads KV head h / (H / KV).
std::vector<std::vector<double>> votesByDefinition(const at::Tensor& q, const at::Tensor& k,
                                                   int64_t W) {
    const int64_t H = q.size(0), Wc = q.size(1), D = q.size(2), KV = k.size(0), T = k.size(1);
    const at::Tensor qd = q.to(at::kDouble), kd = k.to(at::kDouble);
    std::vector<std::vector<double>> votes(H, std::vector<double>(T - W, 0.0));
    for (int64_t h = 0; h < H; ++h) {
        const at::Tensor keys = kd[h / (H / KV)];
        for (int64_t i = 0; i < W; ++i) {
            const int64_t seen = T - W + i + 1;
            const at::Tensor logits =
                at::matmul(keys.narrow(0, 0, seen), qd[h][Wc - W + i]) / std::sqrt(double(D));
            const at::Tensor p = at::softmax(logits, 0);
            const double* pp = p.data_ptr<double>();
            for (int64_t j = 0; j < T - W; ++j) votes[h][j] += pp[j];
        }
    }
    return votes;
}

TEST(LayerSelection, WindowVotesMatchTheDefinition) {
    const int64_t H = 6, KV = 2, D = 8, T = 40, W = 5;
    const at::Tensor q = randn({H, 7, D}, 1), k = randn({KV, T, D}, 2);
    const at::Tensor votes = windowVotes(q, k, W);
    ASSERT_EQ(votes.sizes(), (at::IntArrayRef{H, T - W}));
    const auto want = votesByDefinition(q, k, W);
    for (int64_t h = 0; h < H; ++h)
        for (int64_t j = 0; j < T - W; ++j)
            EXPECT_NEAR(votes[h][j].item<double>(), want[h][j], 1e-5 * (1 + want[h][j]))
                << h << " " << j;
    // bf16 keys are read as their fp32 values.
    const at::Tensor kb = k.to(at::kBFloat16);
    EXPECT_TRUE(at::allclose(windowVotes(q, kb, W), windowVotes(q, kb.to(at::kFloat), W)));
}

TEST(LayerSelection, GroupVotesAverageEachKvHeadsQueryHeads) {
    const at::Tensor votes =
        at::tensor({1.0f, 2.0f, 3.0f, 5.0f, 10.0f, 20.0f, 30.0f, 50.0f}).view({4, 2});
    const at::Tensor g = groupVotes(votes, 2, false);
    EXPECT_TRUE(at::equal(g, at::tensor({2.0f, 3.5f, 20.0f, 35.0f}).view({2, 2})));
    EXPECT_TRUE(at::equal(groupVotes(votes, 2, true), votes));
}

TEST(LayerSelection, PoolingPadsAsTorchDoes) {
    const std::vector<float> x = {1, 5, 2, 0, 0, 7, 3};
    // max, kernel 3: padding never wins.
    EXPECT_EQ(pool1d(x.data(), 7, 3, VotePooling::Max), (std::vector<float>{5, 5, 5, 2, 7, 7, 7}));
    // avg, kernel 3, count_include_pad: the edges divide by 3 too.
    const std::vector<float> avg = pool1d(x.data(), 7, 3, VotePooling::Avg);
    const std::vector<double> want = {6 / 3.0, 8 / 3.0,  7 / 3.0, 2 / 3.0,
                                      7 / 3.0, 10 / 3.0, 10 / 3.0};
    for (size_t i = 0; i < want.size(); ++i) EXPECT_FLOAT_EQ(avg[i], float(want[i])) << i;
    // A kernel wider than the row.
    const std::vector<float> two = {1, 3};
    EXPECT_EQ(pool1d(two.data(), 2, 7, VotePooling::Max), (std::vector<float>{3, 3}));
    const std::vector<float> twoAvg = pool1d(two.data(), 2, 7, VotePooling::Avg);
    EXPECT_FLOAT_EQ(twoAvg[0], 4.0f / 7.0f);
    EXPECT_FLOAT_EQ(twoAvg[1], 4.0f / 7.0f);
}

// Votes whose avg pool a running double sum got wrong: after the nonzero
// values leave the window, it carried -1.85e-17 into the windows of zeros, so
// those tied zeros no longer compared equal and "lower position wins" failed.
TEST(LayerSelection, AvgPoolKeepsWindowsOfZerosExactlyZeroSoTiesGoToTheLowerPosition) {
    const std::vector<float> x = {0x1.4d305cp-1f, 0x1.72d8cap-31f, 0x1.12d33ep-11f, 0x1.05b73p-10f,
                                  0x1.feb12cp-25f, 0, 0, 0, 0, 0, 0};
    const std::vector<float> avg = pool1d(x.data(), int64_t(x.size()), 3, VotePooling::Avg);
    for (size_t i = 6; i < x.size(); ++i) EXPECT_EQ(avg[i], 0.0f) << "position " << i;
    // Every nonzero window, then the tied zeros from the lowest position up.
    EXPECT_EQ(topPositions(avg.data(), int64_t(avg.size()), 8),
              (std::vector<int32_t>{0, 1, 2, 3, 4, 5, 6, 7}));
    // Windows holding the same values in any order pool to bit-identical scores,
    // so the lowest of them wins.
    const std::vector<float> periodic = {0.1f, 0.2f, 0.7f, 0.1f, 0.2f, 0.7f, 0.1f, 0.2f, 0.7f};
    const std::vector<float> p = pool1d(periodic.data(), 9, 3, VotePooling::Avg);
    for (int i = 2; i <= 7; ++i) EXPECT_EQ(p[size_t(i)], p[1]) << "position " << i;
    EXPECT_EQ(topPositions(p.data(), 9, 3), (std::vector<int32_t>{1, 2, 3}));
}

TEST(LayerSelection, TopPositionsBreakTiesTowardsTheLowerPosition) {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const std::vector<float> s = {0.5f, 0.9f, 0.5f, nan, 0.9f, 0.5f, -1.0f, 0.5f};
    EXPECT_EQ(topPositions(s.data(), 8, 1), (std::vector<int32_t>{1}));
    EXPECT_EQ(topPositions(s.data(), 8, 3), (std::vector<int32_t>{0, 1, 4}));
    EXPECT_EQ(topPositions(s.data(), 8, 5), (std::vector<int32_t>{0, 1, 2, 4, 5}));
    EXPECT_EQ(topPositions(s.data(), 8, 7),
              (std::vector<int32_t>{0, 1, 2, 4, 5, 6, 7}));  // NaN last
    EXPECT_EQ(topPositions(s.data(), 8, 0), (std::vector<int32_t>{}));
    EXPECT_EQ(topPositions(s.data(), 8, 99).size(), 8u);
}

TEST(LayerSelection, KeptPositionsAppendTheWindowToEachRowsTopK) {
    const at::Tensor scores =
        at::tensor({3.0f, 1.0f, 2.0f, 2.0f, 0.0f, 0.0f, 5.0f, 0.0f}).view({2, 4});
    const at::Tensor kept = keptPositions(scores, 2, 3);
    ASSERT_EQ(kept.sizes(), (at::IntArrayRef{2, 5}));
    EXPECT_TRUE(at::equal(kept, at::tensor({0, 2, 4, 5, 6, 0, 2, 4, 5, 6}, at::kInt).view({2, 5})));
    // k beyond the row keeps all of it; k = 0 keeps only the window.
    EXPECT_TRUE(at::equal(keptPositions(scores, 9, 1)[0], at::tensor({0, 1, 2, 3, 4}, at::kInt)));
    EXPECT_TRUE(at::equal(keptPositions(scores, 0, 2)[1], at::tensor({4, 5}, at::kInt)));
}

class LayerSelectionShapes : public testing::TestWithParam<std::tuple<bool, VotePooling, int64_t>> {
};

TEST_P(LayerSelectionShapes, WholeLayerIsTheStepsInOneCall) {
    const auto [perQueryHead, pooling, kernel] = GetParam();
    const int64_t H = 8, KV = 2, D = 16, T = 120, W = 9, k = 30;
    const at::Tensor q = randn({H, 12, D}, 3), keys = randn({KV, T, D}, 4).to(at::kBFloat16);
    VoteSpec spec;
    spec.window = W;
    spec.kernel = kernel;
    spec.pooling = pooling;
    spec.perQueryHead = perQueryHead;
    const at::Tensor scores = layerScores(q, keys, spec);
    const int64_t heads = perQueryHead ? H : KV;
    ASSERT_EQ(scores.sizes(), (at::IntArrayRef{heads, T - W}));
    // Scores: pooled group means of the definition's votes.
    const auto votes = votesByDefinition(q, keys.to(at::kFloat), W);
    for (int64_t r = 0; r < heads; ++r) {
        std::vector<float> row(T - W, 0.0f);
        const int64_t group = perQueryHead ? 1 : H / KV;
        for (int64_t j = 0; j < T - W; ++j) {
            double sum = 0.0;
            for (int64_t g = 0; g < group; ++g) sum += votes[r * group + g][j];
            row[j] = float(sum / double(group));
        }
        const std::vector<float> pooled = pool1d(row.data(), T - W, kernel, pooling);
        for (int64_t j = 0; j < T - W; ++j)
            EXPECT_NEAR(scores[r][j].item<float>(), pooled[j], 1e-5 * (1 + pooled[j]))
                << r << " " << j;
    }
    // Each row: the top k of its scores (by rule), then the window.
    const at::Tensor fromScores = keptPositions(scores, k, W);
    ASSERT_EQ(fromScores.sizes(), (at::IntArrayRef{heads, k + W}));
    const at::Tensor s = scores.contiguous();
    for (int64_t r = 0; r < heads; ++r) {
        const std::vector<int32_t> top = topPositions(s.data_ptr<float>() + r * (T - W), T - W, k);
        for (int64_t i = 0; i < k; ++i) EXPECT_EQ(fromScores[r][i].item<int32_t>(), top[i]);
        for (int64_t w = 0; w < W; ++w) EXPECT_EQ(fromScores[r][k + w].item<int32_t>(), T - W + w);
    }
    // The one call, and the steps after votes computed elsewhere (the capture's
    // cache), give those rows. Votes are recomputed each time, and LibTorch's
    // multi-threaded bmm (OpenBLAS) may differ in the last bit between calls, so
    // a position may swap only with one whose score ties the cut to within rounding.
    const at::Tensor grouped = groupVotes(windowVotes(q, keys, W), KV, perQueryHead);
    for (const at::Tensor& kept :
         {layerSelection(q, keys, spec, k), selectFromVotes(grouped, spec, k)}) {
        ASSERT_EQ(kept.sizes(), fromScores.sizes());
        for (int64_t r = 0; r < heads; ++r) {
            std::vector<float> row(s.data_ptr<float>() + r * (T - W),
                                   s.data_ptr<float>() + (r + 1) * (T - W));
            std::vector<float> sorted = row;
            std::sort(sorted.begin(), sorted.end(), std::greater<float>());
            const float cut = sorted[k - 1];
            const at::Tensor got = kept[r].contiguous(), want = fromScores[r].contiguous();
            const std::set<int32_t> a(got.data_ptr<int32_t>(),
                                      got.data_ptr<int32_t>() + got.numel());
            const std::set<int32_t> b(want.data_ptr<int32_t>(),
                                      want.data_ptr<int32_t>() + want.numel());
            ASSERT_EQ(a.size(), b.size());
            for (int32_t pos : a) {
                if (!b.count(pos)) {
                    EXPECT_NEAR(row[pos], cut, 1e-5 * cut) << "row " << r << " also keeps " << pos;
                }
            }
            for (int32_t pos : b) {
                if (!a.count(pos)) {
                    EXPECT_NEAR(row[pos], cut, 1e-5 * cut) << "row " << r << " also drops " << pos;
                }
            }
            EXPECT_TRUE(
                std::is_sorted(got.data_ptr<int32_t>(), got.data_ptr<int32_t>() + got.numel()));
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Modes, LayerSelectionShapes,
                         testing::Combine(testing::Bool(),
                                          testing::Values(VotePooling::Max, VotePooling::Avg),
                                          testing::Values(int64_t(1), int64_t(7))));

TEST(LayerSelection, BadShapesAreRefusedWithTheReason) {
    const at::Tensor q = randn({4, 8, 16}, 5), k = randn({2, 50, 16}, 6);
    try {
        layerSelection(q, randn({3, 50, 16}, 7), VoteSpec(), 4);
        FAIL() << "3 KV heads for 4 query heads were accepted";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("H a multiple of KV"), std::string::npos) << e.what();
    }
    VoteSpec wide;
    wide.window = 9;  // only 8 window queries
    try {
        layerScores(q, k, wide);
        FAIL() << "a window wider than the window queries was accepted";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("window 9 needs 1 .. 8 window queries"),
                  std::string::npos)
            << e.what();
    }
    EXPECT_THROW(keptPositions(at::zeros({5}), 1, 0), std::invalid_argument);
}

}  // namespace
}  // namespace kvlens::kernels
