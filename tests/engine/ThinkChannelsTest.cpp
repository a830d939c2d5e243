// ThinK over any method against a reference written here in double from its definition
// (Xu et al. 2024, as kvpress's ThinKPress composes it after a position method): per
// selection head, score channel c by mean_i(q_ic^2) over the last W window queries of
// the head's query heads (the means averaged over a KV head's group) times mean_t(k_tc^2)
// over the positions the head keeps; prune the floor(D x ratio) lowest (ties: the lower
// channel). Then the compressed cache: pruned channels zeroed in the prompt's kept keys,
// never in the capture's own buffers; the bytes counted leave them out, the allocated
// bytes do not; decoded tokens keep every channel.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include "core/Error.h"
#include "engine/compress/CompressedCache.h"
#include "engine/compress/presses/Press.h"
#include "RandomCapture.h"

namespace kvlens {
namespace {

std::vector<int32_t> referenceChannels(const Capture& c, const Selection& s, int64_t layer, int64_t head) {
    const int64_t D = c.headDim(), G = c.queryHeads() / c.kvHeads();
    const int64_t n = int64_t(std::floor(double(D) * s.params.think));
    const bool perQuery = s.gqa == GqaMode::QueryHead;
    const at::Tensor q = c.windowQueries(layer).to(at::kDouble).contiguous();  // [H, Wc, D]
    const int64_t wc = q.size(1), w = std::min<int64_t>(s.params.window, wc);
    std::vector<double> qe(D, 0.0), ke(D, 0.0);
    std::vector<int64_t> heads;
    if (perQuery) {
        heads.push_back(head);
    } else {
        for (int64_t g = 0; g < G; ++g) heads.push_back(head * G + g);
    }
    for (int64_t h : heads)
        for (int64_t i = wc - w; i < wc; ++i)
            for (int64_t d = 0; d < D; ++d) {
                const double x = q[h][i][d].item<double>();
                qe[d] += x * x / double(w) / double(heads.size());
            }
    const at::Tensor k = c.keys(layer).to(at::kDouble).contiguous();
    const int64_t kv = perQuery ? head / G : head;
    const auto& kept = s.kept[layer][head];
    const auto ka = k.accessor<double, 3>();
    for (int32_t t : kept)
        for (int64_t d = 0; d < D; ++d) ke[d] += ka[kv][t][d] * ka[kv][t][d] / double(kept.size());
    std::vector<int32_t> order(D);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return qe[a] * ke[a] < qe[b] * ke[b]; });
    std::vector<int32_t> pruned(order.begin(), order.begin() + n);
    std::sort(pruned.begin(), pruned.end());
    return pruned;
}

struct Case {
    test::CaptureShape shape;
    const char* method;
    GqaMode gqa;
    int64_t budget, window;
    double think;
};

class ThinkShapes : public ::testing::TestWithParam<Case> {};

TEST_P(ThinkShapes, PrunedChannelsAreTheDefinitions) {
    const Case k = GetParam();
    const auto capture = test::randomCapture(k.shape, 17);
    PressParams p;
    p.method = k.method;
    p.gqa = k.gqa;
    p.budget = k.budget;
    p.window = k.window;
    p.think = k.think;
    const Selection s = Press::create(k.method)->select(*capture, p);
    const int64_t n = int64_t(std::floor(double(k.shape.headDim) * k.think));
    ASSERT_EQ(s.prunedChannels.size(), size_t(k.shape.layers));
    for (int64_t l = 0; l < s.layers(); ++l) {
        for (int64_t h = 0; h < s.headsPerLayer(); ++h) {
            EXPECT_EQ(s.pruned(l, h), n);
            EXPECT_EQ(s.prunedChannels[l][h], referenceChannels(*capture, s, l, h))
                << k.method << " layer " << l << " head " << h;
        }
    }
    // The same selection without ThinK keeps the same positions.
    PressParams plain = p;
    plain.think = 0.0;
    const Selection without = Press::create(k.method)->select(*capture, plain);
    EXPECT_EQ(without.kept, s.kept);
    EXPECT_TRUE(without.prunedChannels.empty());

    // The cache zeroes exactly those channels of the kept prompt keys, and the capture's keys
    // stay whole (FullKV would otherwise borrow and zero them).
    const at::Tensor before = capture->keys(0).clone();
    {
        // No decode room asked: a FullKV selection could borrow the capture's buffers.
        CompressedCache noRoom(*capture, s, 0);
        EXPECT_FALSE(noRoom.borrowsCapture());
        EXPECT_TRUE(at::equal(capture->keys(0), before));
    }
    CompressedCache cache(*capture, s, 2), plainCache(*capture, without, 2);
    EXPECT_TRUE(at::equal(capture->keys(0), before));
    EXPECT_FALSE(cache.borrowsCapture());
    const int64_t D = k.shape.headDim, b = capture->keys(0).element_size();
    int64_t counted = 0;
    for (int64_t l = 0; l < s.layers(); ++l) {
        const auto keys = cache.keys(l), plainKeys = plainCache.keys(l);
        for (int64_t h = 0; h < s.headsPerLayer(); ++h) {
            std::vector<char> zeroed(D, 0);
            for (int32_t c : s.prunedChannels[l][h]) zeroed[c] = 1;
            for (int64_t c = 0; c < D; ++c) {
                const at::Tensor col = keys[h].select(1, c), want = plainKeys[h].select(1, c);
                if (zeroed[c]) {
                    EXPECT_EQ(col.abs().max().item<double>(), 0.0) << "layer " << l << " head " << h << " channel " << c;
                } else {
                    EXPECT_TRUE(at::equal(col, want)) << "layer " << l << " head " << h << " channel " << c;
                }
            }
            EXPECT_EQ(cache.prunedChannels(l, h), n);
            counted += int64_t(s.kept[l][h].size()) * (2 * D - n) * b;
        }
        EXPECT_EQ(cache.bytes(l), s.bytes(l, D, b));
    }
    EXPECT_EQ(cache.bytes(), counted);
    EXPECT_EQ(cache.allocatedBytes(), plainCache.allocatedBytes());  // zeroed in place: nothing freed
    // A decoded token keeps every channel, and counts all of them.
    const at::Tensor ones = at::ones({1, k.shape.kvHeads, D}, capture->keys(0).options());
    for (int64_t l = 0; l < cache.layers(); ++l) cache.append(l, ones, ones);
    EXPECT_EQ(cache.bytes(), counted + cache.layers() * cache.heads() * 2 * D * b);
    EXPECT_EQ(cache.keys(0)[0][cache.length(0, 0) - 1].sum().item<double>(), double(D));
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, ThinkShapes,
    ::testing::Values(Case{{2, 8, 2, 120, 16}, "snapkv", GqaMode::KvHead, 40, 8, 0.5},
                      Case{{2, 8, 2, 120, 16}, "snapkv", GqaMode::QueryHead, 40, 8, 0.5},
                      Case{{2, 4, 4, 90, 32}, "knorm", GqaMode::KvHead, 30, 32, 0.25},
                      Case{{2, 4, 1, 70, 16}, "full", GqaMode::KvHead, 0, 16, 0.75},
                      Case{{1, 8, 2, 100, 16}, "adakv", GqaMode::KvHead, 30, 4, 0.4}),
    [](const auto& info) {
        return std::string(info.param.method) + (info.param.gqa == GqaMode::QueryHead ? "QueryHead" : "") +
               "H" + std::to_string(info.param.shape.heads) + "KV" + std::to_string(info.param.shape.kvHeads);
    });

TEST(ThinkChannels, NothingIsPrunedBelowOneChannelAndBadRatiosNameTheFlag) {
    const auto capture = test::randomCapture({1, 4, 2, 50, 16}, 3);
    PressParams p;
    p.method = "snapkv";
    p.budget = 20;
    p.window = 4;
    p.think = 0.05;  // floor(16 x 0.05) = 0
    EXPECT_TRUE(Press::create("snapkv")->select(*capture, p).prunedChannels.empty());
    for (double bad : {1.0, -0.1}) {
        p.think = bad;
        try {
            Press::create("snapkv")->select(*capture, p);
            ADD_FAILURE() << bad << " was accepted";
        } catch (const Error& e) {
            std::ostringstream want;
            want << "--think " << bad << " must be in [0, 1) (the share of each key's channels ThinK prunes)";
            EXPECT_EQ(std::string(e.what()), want.str());
        }
    }
    // KNorm keeps no window, but ThinK scores by the window's queries: a window longer than
    // the capture holds takes all it holds (here 50).
    p.method = "knorm";
    p.think = 0.5;
    p.window = 65;
    const Selection s = Press::create("knorm")->select(*capture, p);
    EXPECT_EQ(s.prunedChannels[0][1], referenceChannels(*capture, s, 0, 1));
    p.window = 0;
    try {
        Press::create("knorm")->select(*capture, p);
        ADD_FAILURE() << "window 0 was accepted";
    } catch (const Error& e) {
        EXPECT_EQ(std::string(e.what()), "--window must be at least 1 (ThinK scores channels by the window's queries)");
    }
}

}  // namespace
}  // namespace kvlens
