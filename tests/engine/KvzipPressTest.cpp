// KVzip against a reference written here in double from its definition (Kim et al. 2025,
// chunked scoring as the paper and kvpress's KVzipPress): the prompt after its S sinks is
// cut into chunks of C; for each chunk the model runs, after the whole prompt, the repeat
// prompt (for later chunks followed by the previous chunk's last 8 tokens), the suffix and
// the chunk again. Here that input is run by a plain forward of prompt + input on a fresh
// cache (not by the press's code path), and each of its queries i, per query head, takes a
// softmax of q.k / sqrt(D) over the sinks' keys, the chunk's keys and the input's keys up to
// i; a chunk position scores the maximum over the input's queries and the KV head's group.
// The sinks score 1. The budget L x heads x B is then shared over every layer and head at
// once: each head's sinks, then the best scores of all, ties to the lower layer, head and
// position. On GQA and MHA models, with the reconstruction inputs longer than a prefill chunk.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <tuple>
#include <vector>

#include "core/Error.h"
#include "engine/compress/Capture.h"
#include "engine/compress/presses/Press.h"
#include "engine/compress/presses/PressScores.h"
#include "engine/model/LlamaModel.h"
#include "engine/model/ModelSpec.h"
#include "engine/model/ModelWeights.h"
#include "QueryRecorder.h"

namespace kvlens {
namespace {

struct Fixture {
    ModelConfig config;
    std::unique_ptr<LlamaModel> model;
    std::shared_ptr<Capture> capture;
    std::vector<int32_t> prompt;
    RepeatPrompt repeat;

    explicit Fixture(int64_t kvHeads) {
        config = ModelSpec::parse("random:tiny:layers=2").randomConfig();  // 8 query heads, D = 32
        config.nKvHeads = kvHeads;
        model = std::make_unique<LlamaModel>(config, ModelWeights::random(config, 13, c10::Device(c10::kCPU), c10::kFloat),
                                             c10::Device(c10::kCPU), c10::kFloat);
        model->setPrefillChunk(40);  // a reconstruction input runs in pieces
        prompt.resize(200);
        for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = int32_t((i * 37 + 11) % 450 + 3);
        capture = Capture::fromPrefill(*model, prompt);
        repeat.first = {7, 8, 9};
        repeat.later = {10, 11};
        repeat.suffix = {12};
        capture->setRepeatPrompt(repeat);
    }

    // The reference scores [layer][KV head][position].
    std::vector<std::vector<std::vector<double>>> scores(int64_t S, int64_t C) const {
        const int64_t T = int64_t(prompt.size()), H = config.nHeads, KV = config.nKvHeads, G = H / KV, D = config.headDim;
        std::vector<std::vector<std::vector<double>>> out(config.nLayers,
                                                          std::vector<std::vector<double>>(KV, std::vector<double>(T, 0.0)));
        for (auto& layer : out)
            for (auto& head : layer) std::fill(head.begin(), head.begin() + S, 1.0);
        for (int64_t start = S, c = 0; start < T; start += C, ++c) {
            const int64_t end = std::min(T, start + C);
            std::vector<int32_t> input = c == 0 ? repeat.first : repeat.later;
            if (c > 0) input.insert(input.end(), prompt.begin() + start - std::min<int64_t>(8, C), prompt.begin() + start);
            input.insert(input.end(), repeat.suffix.begin(), repeat.suffix.end());
            input.insert(input.end(), prompt.begin() + start, prompt.begin() + end);
            std::vector<int32_t> all = prompt;
            all.insert(all.end(), input.begin(), input.end());
            const int64_t N = int64_t(all.size()), R = int64_t(input.size());
            KvCache cache = model->makeCache(N);
            test::QueryRecorder rec(config.nLayers, N);
            model->forward(all, cache, false, {}, &rec);
            for (int64_t l = 0; l < config.nLayers; ++l) {
                const at::Tensor k = cache.keys(l).to(at::kDouble).contiguous();  // [KV, N, D]
                const auto ka = k.accessor<double, 3>();
                const auto qa = rec.queries[l].accessor<double, 3>();
                for (int64_t i = 0; i < R; ++i) {
                    std::vector<int64_t> seen;
                    for (int64_t j = 0; j < S; ++j) seen.push_back(j);
                    for (int64_t j = start; j < end; ++j) seen.push_back(j);
                    for (int64_t j = T; j <= T + i; ++j) seen.push_back(j);
                    for (int64_t h = 0; h < H; ++h) {
                        std::vector<double> logit(seen.size());
                        double top = -1e300;
                        for (size_t n = 0; n < seen.size(); ++n) {
                            double dot = 0.0;
                            for (int64_t d = 0; d < D; ++d) dot += qa[T + i][h][d] * ka[h / G][seen[n]][d];
                            logit[n] = dot / std::sqrt(double(D));
                            top = std::max(top, logit[n]);
                        }
                        double sum = 0.0;
                        for (double& x : logit) sum += (x = std::exp(x - top));
                        for (size_t n = size_t(S); n < size_t(S + end - start); ++n) {
                            double& best = out[l][h / G][seen[n]];
                            best = std::max(best, logit[n] / sum);
                        }
                    }
                }
            }
        }
        return out;
    }
};

struct Candidate {
    double score;
    int64_t layer, head, pos;
};

class KvzipShapes : public ::testing::TestWithParam<int64_t> {};

TEST_P(KvzipShapes, ScoresAndKeptSetsAreTheDefinitions) {
    Fixture f(GetParam());
    const Capture& c = *f.capture;
    const int64_t T = c.promptLength(), KV = c.kvHeads(), L = c.layers();
    const at::Tensor keysBefore = c.keys(1).clone();
    // Sinks 4 and chunks of 50 (the last 46 long); no sinks and chunks of 64 (the last 8 long).
    for (const auto& [S, C] : {std::pair<int64_t, int64_t>{4, 50}, {0, 64}}) {
        PressParams p;
        p.method = "kvzip";
        p.sinks = S;
        p.repeatChunk = C;
        p.budget = 60;
        EXPECT_TRUE(c.needsReplayFor(p));
        c.keepScoresFor(*f.model, p);
        EXPECT_FALSE(c.needsReplayFor(p));
        const auto want = f.scores(S, C);
        for (int64_t l = 0; l < L; ++l) {
            const at::Tensor got = c.reconstructionScores(l, C, S).to(at::kDouble).contiguous();
            ASSERT_EQ(got.sizes(), (at::IntArrayRef{KV, T}));
            double worst = 0.0;
            for (int64_t h = 0; h < KV; ++h)
                for (int64_t t = 0; t < T; ++t) worst = std::max(worst, std::abs(got[h][t].item<double>() - want[l][h][t]));
            EXPECT_LT(worst, 1e-5) << "sinks " << S << " chunk " << C << " layer " << l;
        }
        for (int64_t B : {int64_t(20), int64_t(60), int64_t(150)}) {
            p.budget = B;
            const Selection s = Press::create("kvzip")->select(c, p);
            std::vector<Candidate> ranked;
            std::vector<std::vector<std::vector<int32_t>>> kept(L, std::vector<std::vector<int32_t>>(KV));
            for (int64_t l = 0; l < L; ++l)
                for (int64_t h = 0; h < KV; ++h) {
                    for (int64_t t = 0; t < S; ++t) kept[l][h].push_back(int32_t(t));
                    for (int64_t t = S; t < T; ++t) ranked.push_back({want[l][h][t], l, h, t});
                }
            std::stable_sort(ranked.begin(), ranked.end(), [](const Candidate& a, const Candidate& b) { return a.score > b.score; });
            ranked.resize(size_t(L * KV * (B - S)));
            for (const Candidate& x : ranked) kept[x.layer][x.head].push_back(int32_t(x.pos));
            int64_t total = 0;
            for (int64_t l = 0; l < L; ++l)
                for (int64_t h = 0; h < KV; ++h) {
                    std::sort(kept[l][h].begin(), kept[l][h].end());
                    EXPECT_EQ(s.kept[l][h], kept[l][h]) << "sinks " << S << " B " << B << " layer " << l << " head " << h;
                    total += int64_t(s.kept[l][h].size());
                }
            EXPECT_EQ(total, L * KV * B);
        }
    }
    // The reconstruction left the capture's KV as it was.
    EXPECT_EQ(c.cache().length(), T);
    EXPECT_TRUE(at::equal(c.keys(1), keysBefore));
}

// As a wrapper's scorer: AdaKV ranks the reconstruction scores, with the window and sinks
// always kept.
TEST_P(KvzipShapes, AsAScorerItsRowsAreTheReconstructionScores) {
    Fixture f(GetParam());
    const Capture& c = *f.capture;
    PressParams p;
    p.method = "adakv";
    p.scorer = "kvzip";
    p.window = 8;
    p.sinks = 4;
    p.repeatChunk = 50;
    p.budget = 40;
    c.keepScoresFor(*f.model, p);
    const presses::HeadScores rows = presses::scorerScores(c, 0, p);
    const at::Tensor want = c.reconstructionScores(0, 50, 4);
    ASSERT_TRUE(want.defined());
    for (size_t h = 0; h < rows.size(); ++h)
        for (size_t t = 0; t < rows[h].size(); ++t) {
            const bool fixed = t < 4 || t >= rows[h].size() - 8;
            if (fixed) {
                EXPECT_TRUE(std::isnan(rows[h][t])) << h << " " << t;
            } else {
                EXPECT_EQ(rows[h][t], want[int64_t(h)][int64_t(t)].item<float>()) << h << " " << t;
            }
        }
    const Selection s = Press::create("adakv")->select(c, p);
    EXPECT_EQ(s.entries(), c.layers() * c.kvHeads() * 40);
}

INSTANTIATE_TEST_SUITE_P(Shapes, KvzipShapes, ::testing::Values(int64_t(4), int64_t(8)),
                         [](const auto& info) { return std::string(info.param == 8 ? "Mha" : "Gqa"); });

void expectError(const std::function<void()>& run, const std::string& message) {
    try {
        run();
        ADD_FAILURE() << "no error; expected: " << message;
    } catch (const Error& e) {
        EXPECT_EQ(std::string(e.what()), message);
    }
}

TEST(KvzipPress, EachMissingPieceIsNamedInOneLine) {
    Fixture f(4);
    PressParams p;
    p.method = "kvzip";
    p.budget = 60;
    expectError([&] { Press::create("kvzip")->select(*f.capture, p); },
                "KVzip: the prompt's reconstruction has not been run (Capture::keepScoresFor before selecting)");
    const auto tensors = Capture::fromTensors({at::randn({2, 40, 8})}, {at::randn({2, 40, 8})}, {at::randn({2, 40, 8})});
    p.budget = 20;
    expectError([&] { Press::create("kvzip")->select(*tensors, p); },
                "KVzip needs the model to reconstruct the prompt, which tensors given with --inputs do not have");
    p.budget = 60;
    const auto bare = Capture::fromPrefill(*f.model, f.prompt);  // no repeat prompt given
    expectError([&] { bare->keepScoresFor(*f.model, p); },
                "KVzip needs its repeat prompt in the model's tokens, which this capture was not given");
    Fixture other(8);
    expectError([&] { f.capture->keepScoresFor(*other.model, p); },
                "KVzip's reconstruction needs the model that made the capture (another one is loaded)");
    p.repeatChunk = 0;
    expectError([&] { f.capture->keepScoresFor(*f.model, p); },
                "--repeat-chunk 0 must be at least 1 (the context positions KVzip repeats per reconstruction pass)");
    p.repeatChunk = 2048;
    p.budget = 4;
    expectError([&] { f.capture->keepScoresFor(*f.model, p); },
                "--budget 4 must exceed --sinks 4 (the budget includes the sinks)");
    // What a progress bar says is pending, for a wrapper needing two things.
    PressParams both;
    both.method = "criticalkv";
    both.scorer = "kvzip";
    both.budget = 60;
    EXPECT_EQ(f.capture->pendingWork(both), "CriticalKV's projected value norms (W_o on every value) and KVzip's "
                                            "reconstruction of the prompt (chunks of 2048)");
    // A budget that holds the prompt keeps it all: no reconstruction.
    p.budget = 200;
    EXPECT_FALSE(f.capture->needsReplayFor(p));
    EXPECT_EQ(Press::create("kvzip")->select(*f.capture, p).entries(), 2 * 4 * 200);
}

// Two pieces of first-use work (CriticalKV's projected value norms, then KVzip's
// reconstruction) fill one progress bar once, each its half, rather than each from 0 to 1.
TEST(KvzipPress, TwoPiecesOfWorkShareOneProgressBar) {
    Fixture f(2);
    PressParams p;
    p.method = "criticalkv";
    p.scorer = "kvzip";
    p.budget = 60;
    p.window = 8;
    p.repeatChunk = 100;
    EXPECT_EQ(f.capture->pendingWork(p),
              "CriticalKV's projected value norms (W_o on every value) and KVzip's reconstruction of the prompt "
              "(chunks of 100)");
    std::vector<double> seen;
    f.capture->keepScoresFor(*f.model, p, [&](double v, const std::string&) { seen.push_back(v); });
    ASSERT_FALSE(seen.empty());
    for (size_t i = 1; i < seen.size(); ++i) EXPECT_GE(seen[i], seen[i - 1]) << "step " << i;
    EXPECT_LT(seen.front(), 0.5);
    EXPECT_GE(seen.back(), 0.5);
    EXPECT_LE(seen.back(), 1.0);
}

// Only the last kReconstructions (chunk, sinks) stay: a GUI spin box stepping through sinks
// would otherwise keep one L x KV x T set per step. Sinks 4 and 40 are different sets (the
// name of one is not cut from the other's).
TEST(KvzipPress, OnlyTheLastFewReconstructionsAreKept) {
    Fixture f(2);
    const Capture& c = *f.capture;
    PressParams p;
    p.method = "kvzip";
    p.budget = 60;
    p.repeatChunk = 100;
    const std::vector<int64_t> sinks = {4, 40, 5, 6, 7};
    for (int64_t s : sinks) {
        p.sinks = s;
        c.keepScoresFor(*f.model, p);
    }
    for (int64_t s : sinks) {
        p.sinks = s;
        EXPECT_EQ(c.needsReplayFor(p), s == 4) << "sinks " << s;  // the oldest alone is dropped
    }
    p.sinks = 40;
    EXPECT_EQ(Press::create("kvzip")->select(c, p).entries(), 2 * 2 * 60);
}

}  // namespace
}  // namespace kvlens
