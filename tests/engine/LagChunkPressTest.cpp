// LagKV and ChunkKV against references written here in double precision from their
// definitions (LagKV: partitions scored against the next one's per-channel range;
// ChunkKV: SnapKV's window votes summed over chunks, whole chunks kept per head), not
// from the presses' code: on GQA and MHA captures, ties going to the lower position.
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
#include "VoteReference.h"
#include "RandomCapture.h"

namespace kvlens {
namespace {

using test::Rows;
using test::lagStateReference;
using test::rowsOf;
using test::votesReference;

using Shape = test::CaptureShape;
using test::randomCapture;

// The `take` highest of scores[from, from + n), as positions offset by `from`, ascending;
// equal scores prefer the lower position.
std::vector<int32_t> topOf(const std::vector<double>& scores, int64_t from, int64_t n,
                           int64_t take) {
    std::vector<int32_t> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](int32_t a, int32_t b) { return scores[from + a] > scores[from + b]; });
    order.resize(take);
    std::sort(order.begin(), order.end());
    for (int32_t& i : order) i += int32_t(from);
    return order;
}

std::vector<int32_t> lagReference(const Capture& c, int64_t layer, int64_t head, int64_t sinks,
                                  int64_t lag, int64_t budget) {
    const int64_t T = c.promptLength();
    const Rows k = rowsOf(c.keys(layer), head), v = rowsOf(c.values(layer), head);
    const int64_t partitions = (T - sinks) / lag - 1, tailStart = sinks + partitions * lag;
    const int64_t spare = budget - sinks - (T - tailStart);
    std::vector<double> score(T, 0.0);
    for (int64_t p = 0; p < partitions; ++p) {
        const int64_t from = sinks + p * lag;
        const std::vector<double> sk = lagStateReference(k, from, lag),
                                  sv = lagStateReference(v, from, lag);
        for (int64_t t = 0; t < lag; ++t) score[from + t] = sk[t] + sv[t];
    }
    std::vector<int32_t> kept(sinks);
    std::iota(kept.begin(), kept.end(), 0);
    for (int64_t p = 0; p < partitions; ++p) {
        const int64_t take = spare / partitions + (p < spare % partitions ? 1 : 0);
        for (int32_t i : topOf(score, sinks + p * lag, lag, take)) kept.push_back(i);
    }
    for (int64_t i = tailStart; i < T; ++i) kept.push_back(int32_t(i));
    return kept;
}

std::vector<int32_t> chunkReference(const Capture& c, int64_t layer, int64_t head, int64_t W,
                                    int64_t chunk, int64_t budget, bool perQueryHead) {
    const int64_t T = c.promptLength(), prefix = T - W, chunks = (prefix + chunk - 1) / chunk;
    const std::vector<double> votes = votesReference(c, layer, head, W, perQueryHead);
    std::vector<double> sums(chunks, 0.0);
    for (int64_t i = 0; i < prefix; ++i) sums[i / chunk] += votes[i];
    std::vector<int32_t> kept;
    for (int32_t ch : topOf(sums, 0, chunks, std::min((budget - W) / chunk, chunks)))
        for (int64_t i = ch * chunk; i < std::min(prefix, (ch + 1) * chunk); ++i)
            kept.push_back(int32_t(i));
    for (int64_t i = prefix; i < T; ++i) kept.push_back(int32_t(i));
    return kept;
}

PressParams params(const std::string& method, int64_t budget) {
    PressParams p;
    p.method = method;
    p.budget = budget;
    return p;
}

class LagChunkPress : public ::testing::TestWithParam<Shape> {};

TEST_P(LagChunkPress, LagKvKeepsWhatTheDefinitionKeeps) {
    const Shape shape = GetParam();
    const auto capture = randomCapture(shape, 23 + shape.heads);
    const int64_t T = shape.promptLength;
    for (const auto& [sinks, lag] :
         std::vector<std::pair<int64_t, int64_t>>{{4, 16}, {0, 20}, {7, 11}}) {
        PressParams p = params("lagkv", 0);
        p.sinks = sinks;
        p.lag = lag;
        const int64_t tail = T - p.lagTailStart(T);
        for (int64_t B : {sinks + tail, sinks + tail + 1, sinks + tail + 29, T - 1}) {
            p.budget = B;
            const Selection s = Press::create("lagkv")->select(*capture, p);
            EXPECT_EQ(s.headsPerLayer(), shape.kvHeads);
            for (int64_t l = 0; l < shape.layers; ++l)
                for (int64_t h = 0; h < shape.kvHeads; ++h) {
                    EXPECT_EQ(s.kept[l][h], lagReference(*capture, l, h, sinks, lag, B))
                        << "sinks " << sinks << " lag " << lag << " B " << B << " layer " << l
                        << " head " << h;
                    EXPECT_EQ(int64_t(s.kept[l][h].size()), B);
                }
        }
    }
}

TEST_P(LagChunkPress, ChunkKvKeepsWholeChunksByTheirSummedVotes) {
    const Shape shape = GetParam();
    const auto capture = randomCapture(shape, 31 + shape.heads);
    const int64_t T = shape.promptLength;
    for (const GqaMode mode : {GqaMode::KvHead, GqaMode::QueryHead}) {
        for (const auto& [W, chunk] :
             std::vector<std::pair<int64_t, int64_t>>{{8, 5}, {32, 10}, {3, 7}}) {
            for (int64_t B : {W + chunk, W + 2 * chunk + 3, W + 41, T - 1}) {
                PressParams p = params("chunkkv", B);
                p.window = W;
                p.chunk = chunk;
                p.gqa = mode;
                const Selection s = Press::create("chunkkv")->select(*capture, p);
                const bool perQuery = mode == GqaMode::QueryHead;
                EXPECT_EQ(s.headsPerLayer(), perQuery ? shape.heads : shape.kvHeads);
                for (int64_t l = 0; l < shape.layers; ++l)
                    for (int64_t h = 0; h < s.headsPerLayer(); ++h) {
                        const std::vector<int32_t> want =
                            chunkReference(*capture, l, h, W, chunk, B, perQuery);
                        EXPECT_EQ(s.kept[l][h], want)
                            << "W " << W << " chunk " << chunk << " B " << B << " layer " << l
                            << " head " << h << " " << gqaModeName(mode);
                        EXPECT_LE(int64_t(s.kept[l][h].size()), B);
                    }
                // The funnel's figure is what a layer holds (whole chunks under B), not B.
                for (int64_t l = 0; l < shape.layers; ++l) {
                    const int64_t heads = s.headsPerLayer();
                    EXPECT_EQ(s.layerBudgets[l], (s.entries(l) + heads / 2) / heads) << "B " << B << " layer " << l;
                    if (B == W + 2 * chunk + 3) {
                        EXPECT_LT(s.layerBudgets[l], B) << "B " << B << " layer " << l;
                    }
                }
            }
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Shapes, LagChunkPress,
                         ::testing::Values(Shape{2, 4, 2, 150, 16},  // GQA
                                           Shape{2, 3, 3, 97, 8}));  // MHA

TEST(LagChunkPress, EqualLagScoresKeepTheLowerPositions) {
    // Every key and value the same: no channel has a range, every LagKV score is equal.
    const int64_t T = 60, D = 8;
    std::vector<at::Tensor> q = {at::randn({4, T, D})}, k = {at::ones({2, T, D}) * 0.5},
                            v = {at::ones({2, T, D})};
    const auto capture = Capture::fromTensors(q, k, v);
    PressParams p = params("lagkv", 30);
    p.lag = 10;  // sinks 0-3, partitions 4-13 .. 34-43 scored, tail 44-59
    const Selection s = Press::create("lagkv")->select(*capture, p);
    // 30 - 4 sinks - 16 tail = 10 entries over 4 scored partitions: 3, 3, 2, 2, lowest first.
    const std::vector<int32_t> want = {0,  1,  2,  3,  4,  5,  6,  14, 15, 16, 24, 25, 34, 35, 44,
                                       45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59};
    for (const auto& head : s.kept[0]) EXPECT_EQ(head, want);
}

TEST(LagChunkPress, BadSettingsAreOneLineNamingTheFlag) {
    const auto capture = randomCapture(Shape{1, 2, 2, 200, 8}, 3);
    auto expectError = [&](PressParams p, const std::string& message) {
        try {
            Press::create(p.method)->select(*capture, p);
            ADD_FAILURE() << p.describe() << " was accepted";
        } catch (const Error& e) {
            EXPECT_EQ(std::string(e.what()), message);
        }
    };
    PressParams lag = params("lagkv", 64);  // lag 128 on 200 tokens: nothing scored, tail 196
    expectError(
        lag,
        "--budget 64 must hold LagKV's 4 sinks and its last partition with the remainder (196 "
        "positions at --lag 128 on a 200-token prompt): raise the budget or lower --lag");
    lag.lag = 0;
    expectError(lag, "--lag 0 must be at least 1");
    lag.lag = 16;
    lag.sinks = -1;
    expectError(lag, "--sinks must be >= 0");
    PressParams chunk = params("chunkkv", 40);
    expectError(chunk,
                "--budget 40 leaves 8 entries beside --window 32, less than one --chunk of 10");
    chunk.chunk = 0;
    expectError(chunk, "--chunk 0 must be at least 1");
    // As a wrapper's scorer: its tail (here 196 positions) is kept whole beside the window.
    PressParams wrapped = params("adakv", 150);
    wrapped.scorer = "lagkv";
    expectError(wrapped, "--budget 150 must exceed --sinks + LagKV's tail 200 (LagKV keeps its sinks and its last full "
                         "partition with the remainder whole: 196 positions at --lag 128 on a 200-token prompt; raise "
                         "the budget or lower --lag)");
    wrapped.budget = 0;
    wrapped.budgetRatio = 0.5;
    expectError(wrapped, "--budget 50% of the 200-token prompt rounds to 100, which must exceed --sinks + LagKV's tail 200 "
                         "(LagKV keeps its sinks and its last full partition with the remainder whole: 196 positions at "
                         "--lag 128 on a 200-token prompt; raise the budget or lower --lag)");
    wrapped.budget = 150;
    wrapped.lag = 0;
    expectError(wrapped, "--lag 0 must be at least 1");
    wrapped.method = "chunkkv";
    wrapped.lag = 16;  // the last full partition of 16 from 180, with the remainder: 20, under the window
    wrapped.budget = 45;
    expectError(wrapped, "--budget 45 leaves 9 entries beside --window 32 and --sinks 4, less than one --chunk of 10");
    wrapped.lag = 40;  // the last full partition of 40 from 124, with the remainder: 76 positions
    wrapped.budget = 88;
    expectError(wrapped, "--budget 88 leaves 8 entries beside LagKV's last 76 positions and --sinks 4, less than one "
                         "--chunk of 10");
    // A budget that holds the prompt keeps it, whatever the lag or chunk.
    lag = params("lagkv", 200);
    EXPECT_EQ(Press::create("lagkv")->select(*capture, lag).entries(), 2 * 200);
}

}  // namespace
}  // namespace kvlens
