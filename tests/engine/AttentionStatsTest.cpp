// Attention statistics against their closed forms on hand-made attention rows,
// the 90%-mass count against sorting, and the capture path against a
// brute-force softmax in double.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "engine/compress/Capture.h"
#include "engine/model/LlamaModel.h"
#include "engine/model/ModelLoader.h"
#include "engine/analysis/AttentionStats.h"

namespace kvlens {
namespace {

constexpr int64_t kCols = 200;

// One row over kCols keys (the query is the last position, so it sees them all).
HeadAttentionSummary ofRow(const std::vector<float>& row) {
    return AttentionStats::ofRows(row.data(), 1, static_cast<int64_t>(row.size()),
                                  static_cast<int64_t>(row.size()) - 1);
}

std::vector<float> uniformOn(int64_t first, int64_t count) {
    std::vector<float> row(kCols, 0.0f);
    for (int64_t j = first; j < first + count; ++j) row[j] = 1.0f / float(count);
    return row;
}

TEST(AttentionStats, UniformRowMatchesClosedForm) {
    const HeadAttentionSummary s = ofRow(uniformOn(0, kCols));
    EXPECT_NEAR(s.entropy, std::log(double(kCols)), 1e-6);
    EXPECT_NEAR(s.effectivePositions, double(kCols), 1e-3);
    EXPECT_NEAR(s.sinkMass, 4.0 / kCols, 1e-6);
    EXPECT_NEAR(s.localMass, 64.0 / kCols, 1e-6);
    EXPECT_EQ(s.positions90, 180.0);  // ceil(0.9 * 200)
}

TEST(AttentionStats, OneHotRowMatchesClosedForm) {
    std::vector<float> row(kCols, 0.0f);
    row[70] = 1.0f;
    const HeadAttentionSummary s = ofRow(row);
    EXPECT_EQ(s.entropy, 0.0);
    EXPECT_EQ(s.effectivePositions, 1.0);
    EXPECT_EQ(s.sinkMass, 0.0);
    EXPECT_EQ(s.localMass, 0.0);  // 70 is before the last 64 positions (136..199)
    EXPECT_EQ(s.positions90, 1.0);
}

TEST(AttentionStats, SinkOnlyRowMatchesClosedForm) {
    const HeadAttentionSummary s = ofRow(uniformOn(0, 4));
    EXPECT_NEAR(s.entropy, std::log(4.0), 1e-6);
    EXPECT_NEAR(s.effectivePositions, 4.0, 1e-5);
    EXPECT_NEAR(s.sinkMass, 1.0, 1e-6);
    EXPECT_EQ(s.localMass, 0.0);
    EXPECT_EQ(s.positions90, 4.0);  // ceil(3.6)
}

TEST(AttentionStats, LocalOnlyRowMatchesClosedForm) {
    const HeadAttentionSummary s = ofRow(uniformOn(kCols - 64, 64));
    EXPECT_NEAR(s.entropy, std::log(64.0), 1e-6);
    EXPECT_NEAR(s.effectivePositions, 64.0, 1e-4);
    EXPECT_EQ(s.sinkMass, 0.0);
    EXPECT_NEAR(s.localMass, 1.0, 1e-6);
    EXPECT_EQ(s.positions90, 58.0);  // ceil(57.6)
}

TEST(AttentionStats, RowsSeeOnlyKeysUpToTheirQueryAndAreAveraged) {
    // Two queries at positions 8 and 9 over 10 keys; the first one's entry for
    // key 9 is in the future and must be ignored even though it is not zero.
    std::vector<float> rows(20, 0.0f);
    for (int j = 0; j < 9; ++j) rows[j] = 1.0f / 9.0f;
    rows[9] = 0.5f;
    for (int j = 10; j < 20; ++j) rows[j] = 0.1f;
    const HeadAttentionSummary s = AttentionStats::ofRows(rows.data(), 2, 10, 8);
    EXPECT_NEAR(s.entropy, (std::log(9.0) + std::log(10.0)) / 2, 1e-6);
    EXPECT_NEAR(s.effectivePositions, std::exp((std::log(9.0) + std::log(10.0)) / 2), 1e-5);
    EXPECT_NEAR(s.sinkMass, (4.0 / 9 + 0.4) / 2, 1e-6);
    EXPECT_NEAR(s.localMass, 1.0, 1e-6);  // both rows are shorter than 64
    EXPECT_EQ(s.positions90, (9.0 + 9.0) / 2);  // ceil(8.1) and ceil(9.0)
}

TEST(AttentionStats, FewestReachingMatchesSorting) {
    std::mt19937 rng(7);
    for (int trial = 0; trial < 200; ++trial) {
        const int n = 1 + trial * 7 % 500;
        std::vector<float> v(n);
        std::uniform_int_distribution<int> level(0, 9);
        std::exponential_distribution<float> spread(1.0f);
        for (float& x : v) x = trial % 3 == 0 ? float(level(rng)) / 10.0f : spread(rng);  // ties, then not
        std::vector<float> sorted = v;
        std::sort(sorted.begin(), sorted.end(), std::greater<float>());
        double total = 0.0;
        for (float x : v) total += x;
        const double target = 0.9 * total;
        int64_t expected = 0;
        double sum = 0.0;
        while (expected < n && sum < target * (1.0 - 1e-9)) sum += sorted[expected++];
        std::vector<float> work = v;
        EXPECT_EQ(AttentionStats::fewestReaching(work, target), expected) << "trial " << trial;
    }
}

TEST(AttentionStats, CaptureStatisticsMatchBruteForce) {
    LoadedModel loaded = loadModel("random:tiny:layers=2", c10::Device(c10::kCPU), c10::kFloat);
    std::vector<int32_t> prompt;
    for (int i = 0; i < 150; ++i) prompt.push_back(3 + (i * 37) % 200);
    auto capture = Capture::fromPrefill(*loaded.model, prompt);
    const std::vector<LayerAttentionSummary> stats = AttentionStats::fromCapture(*capture);
    ASSERT_EQ(stats.size(), 2u);
    const int64_t T = 150, W = 64, D = capture->headDim(), G = capture->queryHeads() / capture->kvHeads();
    for (int64_t l = 0; l < 2; ++l) {
        ASSERT_EQ(stats[l].heads.size(), size_t(capture->queryHeads()));
        double meanEffective = 0.0;
        for (int64_t h = 0; h < capture->queryHeads(); ++h) {
            // Softmax in double of the window queries over the causal keys.
            at::Tensor q = capture->windowQueries(l)[h].to(at::kDouble);         // [W, D]
            at::Tensor k = capture->keys(l)[h / G].to(at::kDouble);              // [T, D]
            at::Tensor scores = at::mm(q, k.t()) / std::sqrt(double(D));
            std::vector<float> probs(W * T, 0.0f);
            for (int64_t r = 0; r < W; ++r) {
                const int64_t seen = T - W + r + 1;
                at::Tensor p = at::softmax(scores[r].narrow(0, 0, seen), 0);
                for (int64_t j = 0; j < seen; ++j) probs[r * T + j] = float(p[j].item<double>());
            }
            const HeadAttentionSummary want = AttentionStats::ofRows(probs.data(), W, T, T - W);
            const HeadAttentionSummary& got = stats[l].heads[h];
            EXPECT_NEAR(got.entropy, want.entropy, 1e-4);
            EXPECT_NEAR(got.sinkMass, want.sinkMass, 1e-5);
            EXPECT_NEAR(got.localMass, want.localMass, 1e-5);
            EXPECT_NEAR(got.positions90, want.positions90, 0.1);
            EXPECT_GE(got.effectivePositions, 1.0);
            EXPECT_LE(got.effectivePositions, double(T));
            meanEffective += got.effectivePositions / double(capture->queryHeads());
        }
        EXPECT_NEAR(stats[l].mean.effectivePositions, meanEffective, 1e-9);
    }
}

}  // namespace
}  // namespace kvlens
