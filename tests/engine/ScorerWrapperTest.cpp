// AdaKV and ChunkKV with another scorer (--scorer), against references written here
// in double precision from their definitions, not from the presses' code:
//  AdaKV(s): every head keeps its window and the scorer's sinks; of the rest,
//    P = B - W - sinks per head, each head first keeps its floor(alpha x P) best, then
//    the layer's heads x (P - floor) remaining go to the best scores of any head
//    (ties: lower head, then lower position), the scores as the scorer gives them.
//  ChunkKV(s): between the sinks and the window, chunks of c positions from the first
//    after the sinks; each head keeps its floor((B - W - sinks) / c) chunks of highest
//    summed score whole (ties to the earlier chunk), the sinks and the window.
// Scorers: KNorm (minus the key's L2 norm), CUR (windowed key x value norm shares,
// with sinks) and LagKV (its lag-relative scores, with sinks; its tail, the last full
// partition with the remainder, kept whole like the window: the longer of the two), on GQA
// and MHA captures.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <tuple>
#include <vector>

#include "engine/compress/Capture.h"
#include "engine/compress/presses/Press.h"
#include "LagReference.h"
#include "NormReference.h"
#include "RandomCapture.h"

namespace kvlens {
namespace {

using Shape = test::CaptureShape;

constexpr int64_t kLag = 16;

// The scorer's sinks and the last positions kept whole (the window, or LagKV's tail when
// longer: after 4 sinks, partitions of kLag, the last full one and the remainder).
int64_t sinksOf(const std::string& scorer) { return scorer == "knorm" ? 0 : 4; }
int64_t tailOf(const std::string& scorer, int64_t T, int64_t W) {
    if (scorer != "lagkv") return W;
    const int64_t partitions = (T - 4) / kLag;
    return std::max(W, T - (4 + (partitions - 1) * kLag));
}

// A scorer's scores of one KV head over all T positions.
std::vector<double> scores(const Capture& c, const std::string& scorer, int64_t layer, int64_t head) {
    const int64_t T = c.promptLength();
    if (scorer == "lagkv") return test::lagScores(c.keys(layer), c.values(layer), head, T, 4, kLag);
    std::vector<double> k = test::squaredNorms(c.keys(layer), head, T);
    if (scorer == "knorm") {
        for (double& v : k) v = -std::sqrt(v);
        return k;
    }
    // CUR: each squared norm's share of its aligned window of 16, keys times values, divided
    // by the head's sum over the prompt (kvpress's CURPress; AdaKV compares heads by it).
    k = test::windowShares(k);
    const std::vector<double> v = test::windowShares(test::squaredNorms(c.values(layer), head, T));
    double total = 0.0;
    for (int64_t t = 0; t < T; ++t) total += (k[t] *= v[t]);
    for (double& x : k) x /= total;
    return k;
}

std::vector<std::vector<int32_t>> adaKvReference(const Capture& c, const std::string& scorer, int64_t layer,
                                                 int64_t B, int64_t window, int64_t sinks, double alpha) {
    const int64_t T = c.promptLength(), KV = c.kvHeads(), W = tailOf(scorer, T, window), P = B - W - sinks;
    const int64_t floorPerHead = int64_t(std::floor(alpha * double(P) + 1e-9));
    std::vector<std::vector<int32_t>> kept(KV);
    std::vector<std::tuple<double, int64_t, int64_t>> rest;  // (score, head, position)
    for (int64_t h = 0; h < KV; ++h) {
        const std::vector<double> s = scores(c, scorer, layer, h);
        std::vector<int32_t> order;
        for (int64_t t = sinks; t < T - W; ++t) order.push_back(int32_t(t));
        std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return s[a] > s[b]; });
        for (int64_t i = 0; i < int64_t(order.size()); ++i) {
            if (i < floorPerHead) kept[h].push_back(order[i]);
            else rest.emplace_back(s[order[i]], h, order[i]);
        }
        for (int64_t t = 0; t < sinks; ++t) kept[h].push_back(int32_t(t));
        for (int64_t t = T - W; t < T; ++t) kept[h].push_back(int32_t(t));
    }
    std::sort(rest.begin(), rest.end(), [](const auto& a, const auto& b) {
        if (std::get<0>(a) != std::get<0>(b)) return std::get<0>(a) > std::get<0>(b);
        return std::make_pair(std::get<1>(a), std::get<2>(a)) < std::make_pair(std::get<1>(b), std::get<2>(b));
    });
    for (int64_t i = 0; i < KV * (P - floorPerHead); ++i) kept[std::get<1>(rest[i])].push_back(int32_t(std::get<2>(rest[i])));
    for (auto& head : kept) std::sort(head.begin(), head.end());
    return kept;
}

std::vector<int32_t> chunkKvReference(const Capture& c, const std::string& scorer, int64_t layer, int64_t head,
                                      int64_t B, int64_t window, int64_t sinks, int64_t chunk) {
    const int64_t T = c.promptLength(), W = tailOf(scorer, T, window), ranked = T - W - sinks;
    const std::vector<double> s = scores(c, scorer, layer, head);
    const int64_t chunks = (ranked + chunk - 1) / chunk, keepChunks = std::min(chunks, (B - W - sinks) / chunk);
    std::vector<double> sums(chunks, 0.0);
    for (int64_t i = 0; i < ranked; ++i) sums[i / chunk] += s[sinks + i];
    std::vector<int32_t> order(chunks);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return sums[a] > sums[b]; });
    std::vector<int32_t> kept;
    for (int64_t t = 0; t < sinks; ++t) kept.push_back(int32_t(t));
    for (int64_t i = 0; i < keepChunks; ++i)
        for (int64_t t = sinks + order[i] * chunk; t < std::min(T - W, sinks + (order[i] + 1) * chunk); ++t)
            kept.push_back(int32_t(t));
    for (int64_t t = T - W; t < T; ++t) kept.push_back(int32_t(t));
    std::sort(kept.begin(), kept.end());
    return kept;
}

class ScorerWrapperShapes : public ::testing::TestWithParam<Shape> {};

TEST_P(ScorerWrapperShapes, AdaKvWithAnotherScorerEqualsTheDefinitionInDouble) {
    const Shape shape = GetParam();
    const auto capture = test::randomCapture(shape, 77 + shape.heads);
    for (const std::string scorer : {"knorm", "cur", "lagkv"}) {
        const int64_t sinks = sinksOf(scorer);
        for (double alpha : {0.0, 0.2, 1.0}) {
            for (int64_t B : {scorer == "lagkv" ? int64_t(45) : int64_t(30), int64_t(57)}) {
                PressParams p;
                p.method = "adakv";
                p.scorer = scorer;
                p.lag = kLag;
                p.budget = B;
                p.window = 8;
                p.alpha = alpha;
                const Selection s = Press::create("adakv")->select(*capture, p);
                ASSERT_EQ(s.headsPerLayer(), shape.kvHeads);
                bool lengthsDiffer = false;
                for (int64_t l = 0; l < shape.layers; ++l) {
                    const auto want = adaKvReference(*capture, scorer, l, B, 8, sinks, alpha);
                    for (int64_t h = 0; h < shape.kvHeads; ++h) {
                        EXPECT_EQ(s.kept[l][h], want[h]) << scorer << " alpha " << alpha << " B " << B << " layer " << l
                                                         << " head " << h;
                        lengthsDiffer |= s.kept[l][h].size() != s.kept[l][0].size();
                    }
                }
                if (alpha < 1.0 && shape.kvHeads > 1) {
                    EXPECT_TRUE(lengthsDiffer) << scorer << " alpha " << alpha << ": every head kept the same count";
                }
            }
        }
    }
}

TEST_P(ScorerWrapperShapes, ChunkKvWithAnotherScorerEqualsTheDefinitionInDouble) {
    const Shape shape = GetParam();
    const auto capture = test::randomCapture(shape, 91 + shape.heads);
    for (const std::string scorer : {"knorm", "cur", "lagkv"}) {
        const int64_t sinks = sinksOf(scorer);
        for (int64_t chunk : {int64_t(5), int64_t(7)}) {
            PressParams p;
            p.method = "chunkkv";
            p.scorer = scorer;
            p.lag = kLag;
            p.budget = 50;
            p.window = 8;
            p.chunk = chunk;
            const Selection s = Press::create("chunkkv")->select(*capture, p);
            ASSERT_EQ(s.headsPerLayer(), shape.kvHeads);
            for (int64_t l = 0; l < shape.layers; ++l)
                for (int64_t h = 0; h < shape.kvHeads; ++h)
                    EXPECT_EQ(s.kept[l][h], chunkKvReference(*capture, scorer, l, h, 50, 8, sinks, chunk))
                        << scorer << " chunk " << chunk << " layer " << l << " head " << h;
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Shapes, ScorerWrapperShapes,
                         ::testing::Values(Shape{2, 4, 2, 150, 16},  // GQA
                                           Shape{2, 3, 3, 97, 8}));  // MHA

// The default scorer is the method's own: adakv and chunkkv without --scorer equal
// --scorer snapkv, and query-head selections stay theirs.
TEST(ScorerWrapper, SnapKvAsTheScorerIsTheMethodsOwn) {
    const auto capture = test::randomCapture(Shape{2, 4, 2, 120, 16}, 5);
    for (const std::string method : {"adakv", "chunkkv"}) {
        for (GqaMode mode : {GqaMode::KvHead, GqaMode::QueryHead}) {
            PressParams own;
            own.method = method;
            own.budget = 48;
            own.window = 8;
            own.gqa = mode;
            PressParams named = own;
            named.scorer = "snapkv";
            const Selection a = Press::create(method)->select(*capture, own);
            const Selection b = Press::create(method)->select(*capture, named);
            EXPECT_EQ(a.kept, b.kept) << method;
            EXPECT_EQ(a.gqa, mode) << method;
        }
    }
}

}  // namespace
}  // namespace kvlens
