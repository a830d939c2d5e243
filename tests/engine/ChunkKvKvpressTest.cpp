// kvpress's ChunkKV (chunkkv-kvpress) against a reference written here in double precision
// from kvpress's ChunkKVPress and its scorer presses: the scorer's scores as kvpress's press
// gives them, summed over the layer's heads, averaged per chunk from position 0 (the last
// chunk over its own length); the best max(1, floor(chunks x B / T)) chunks (floor(chunks x
// (1 - (1 - R))) for a ratio budget) kept whole in every head, ties to the lower chunk.
// Scorers: KNorm (no window: kvpress's KnormPress has none), SnapKV (the window's mean vote,
// max-pooled here, the window padded with the layer's highest + 1), LagKV (kvpress's
// cross_scoring form, (key + value) / 2, its sinks and tail 1.0; on a prompt shorter than
// sinks + 2 lag, kvpress's ramp); GQA and MHA captures; budgets under the window too.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "core/Error.h"
#include "engine/compress/Capture.h"
#include "engine/compress/presses/Press.h"
#include "LagReference.h"
#include "RandomCapture.h"
#include "VoteReference.h"

namespace kvlens {
namespace {

using Shape = test::CaptureShape;
using test::randomCapture;
using test::rowsOf;

// SnapKV's votes of KV head `head` (VoteReference.h) max-pooled over `kernel` positions of
// the prefix [0, T - W); NaN on the window.
std::vector<double> snapReference(const Capture& c, int64_t layer, int64_t head, int64_t W, int64_t kernel) {
    const int64_t T = c.promptLength();
    const std::vector<double> votes = test::votesReference(c, layer, head, W, false);
    std::vector<double> out(T, std::numeric_limits<double>::quiet_NaN());
    for (int64_t i = 0; i < T - W; ++i) {
        double best = -INFINITY;
        for (int64_t j = std::max<int64_t>(0, i - kernel / 2); j <= std::min(T - W - 1, i + kernel / 2); ++j)
            best = std::max(best, votes[j]);
        out[i] = best;
    }
    return out;
}

// One head's scores in kvpress's convention (no NaN but SnapKV's window, padded by the caller).
std::vector<double> scorerReference(const Capture& c, const PressParams& p, int64_t layer, int64_t head) {
    const int64_t T = c.promptLength();
    if (p.scorer == "knorm") {
        const test::Rows k = rowsOf(c.keys(layer), head);
        std::vector<double> s(T);
        for (int64_t t = 0; t < T; ++t) {
            double n = 0.0;
            for (double x : k[t]) n += x * x;
            s[t] = -std::sqrt(n);
        }
        return s;
    }
    if (p.scorer == "lagkv") {
        std::vector<double> s(T, 1.0);
        if (T < p.sinks + 2 * p.lag) {
            for (int64_t t = p.sinks; t < T; ++t) s[t] = double(t - p.sinks) / double(T - p.sinks);
            return s;
        }
        const std::vector<double> lag = test::lagScores(c.keys(layer), c.values(layer), head, T, p.sinks, p.lag);
        for (int64_t t = 0; t < T; ++t)
            if (!std::isnan(lag[t])) s[t] = lag[t] / 2.0;
        return s;
    }
    std::vector<double> votes = snapReference(c, layer, head, p.window, p.kernel);
    for (double& v : votes) v /= double(p.window);  // kvpress averages the window's rows
    return votes;
}

std::vector<int32_t> reference(const Capture& c, const PressParams& p, int64_t layer) {
    const int64_t T = c.promptLength(), C = p.chunk, chunks = (T + C - 1) / C;
    std::vector<std::vector<double>> rows;
    double top = -INFINITY;
    for (int64_t h = 0; h < c.kvHeads(); ++h) {
        rows.push_back(scorerReference(c, p, layer, h));
        for (double v : rows.back())
            if (!std::isnan(v)) top = std::max(top, v);
    }
    std::vector<double> mean(chunks, 0.0);
    for (int64_t i = 0; i < chunks; ++i) {
        const int64_t from = i * C, to = std::min(T, from + C);
        for (const auto& row : rows)
            for (int64_t t = from; t < to; ++t) mean[i] += std::isnan(row[t]) ? top + 1.0 : row[t];
        mean[i] /= double(to - from);
    }
    const int64_t keep = std::clamp<int64_t>(
        p.budget > 0 ? chunks * p.budget / T : int64_t(std::floor(double(chunks) * (1.0 - (1.0 - p.budgetRatio)))),
        1, chunks);
    std::vector<int64_t> order(chunks);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return mean[a] > mean[b]; });
    order.resize(keep);
    std::sort(order.begin(), order.end());
    std::vector<int32_t> kept;
    for (int64_t ch : order)
        for (int64_t t = ch * C; t < std::min(T, (ch + 1) * C); ++t) kept.push_back(int32_t(t));
    return kept;
}

class ChunkKvKvpress : public ::testing::TestWithParam<Shape> {};

TEST_P(ChunkKvKvpress, KeepsTheChunksOfHighestHeadSummedMeanScoreInEveryHead) {
    const Shape shape = GetParam();
    const auto capture = randomCapture(shape, 41 + shape.heads);
    const int64_t T = shape.promptLength;
    int aboveBudget = 0;
    for (const std::string scorer : {"knorm", "snapkv", "lagkv", "lagkv-short"}) {
        for (const int64_t chunk : {int64_t(7), int64_t(10)}) {
            for (const int64_t B : {int64_t(6), int64_t(20), int64_t(45), int64_t(89), T - 3, int64_t(0)}) {
                PressParams p;
                p.method = "chunkkv-kvpress";
                p.scorer = scorer == "lagkv-short" ? "lagkv" : scorer;
                p.chunk = chunk;
                p.window = 8;  // B = 6 is under it: kvpress's ChunkKV keeps no window as such
                p.lag = scorer == "lagkv-short" ? 80 : 12;  // 80: sinks + 2 lag passes both prompts
                p.budget = B;
                if (B == 0) p.budgetRatio = 0.2;  // kvpress's int(chunks * (1 - 0.8)) rounds down
                const Selection s = Press::create(p.method)->select(*capture, p);
                ASSERT_EQ(s.headsPerLayer(), shape.kvHeads);
                for (int64_t l = 0; l < shape.layers; ++l) {
                    const std::vector<int32_t> want = reference(*capture, p, l);
                    for (int64_t h = 0; h < shape.kvHeads; ++h)
                        EXPECT_EQ(s.kept[l][h], want) << p.describe() << " layer " << l << " head " << h;
                    EXPECT_EQ(s.layerBudgets[l], int64_t(want.size()));
                    aboveBudget += B > 0 && int64_t(want.size()) > B;
                }
            }
        }
    }
    // floor(chunks x B / T) chunks of C can pass B (by less than a chunk), as in kvpress.
    if (shape.promptLength == 97) {
        EXPECT_GT(aboveBudget, 0);
    }
}

INSTANTIATE_TEST_SUITE_P(Shapes, ChunkKvKvpress,
                         ::testing::Values(Shape{2, 4, 2, 150, 16},  // GQA
                                           Shape{2, 3, 3, 97, 8}));  // MHA

TEST(ChunkKvKvpress, BadSettingsAreOneLineNamingTheFlag) {
    const auto capture = randomCapture(Shape{1, 2, 2, 60, 8}, 5);
    auto message = [&](const PressParams& p) {
        try {
            Press::create(p.method)->select(*capture, p);
        } catch (const Error& e) {
            return std::string(e.what());
        }
        return std::string();
    };
    PressParams p;
    p.method = "chunkkv-kvpress";
    p.budget = 40;
    p.window = 8;
    p.chunk = 61;
    EXPECT_EQ(message(p), "--chunk 61 is longer than the 60-token prompt (kvpress's ChunkKV then falls back to its "
                          "scorer alone)");
    p.chunk = 0;
    EXPECT_EQ(message(p), "--chunk 0 must be at least 1");
    p.chunk = 60;
    EXPECT_EQ(message(p), "");
    p.scorer = "h2o";  // needs a model's replay: tensors have none
    EXPECT_EQ(message(p).rfind("--scorer h2o needs the attention of every prompt query", 0), 0u) << message(p);
}

}  // namespace
}  // namespace kvlens
