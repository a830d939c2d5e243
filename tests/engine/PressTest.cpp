// Each compression method's selection on small seeded captures, checked against
// brute-force scores in double, plus budgets, GQA modes, seeds and errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <numeric>
#include <set>
#include <tuple>
#include <limits>

#include "engine/compress/Capture.h"
#include "core/Error.h"
#include "engine/model/LlamaModel.h"
#include "engine/model/ModelLoader.h"
#include "engine/compress/presses/Press.h"
#include "engine/compress/presses/PressScores.h"
#include "engine/compress/presses/PyramidKvPress.h"
#include "support/TinyModelFile.h"

namespace kvlens {
namespace {

using Scores = std::vector<std::vector<double>>;  // [head][position]

struct Shape {
    int64_t layers = 2, heads = 4, kvHeads = 2, promptLength = 160, headDim = 16,
            windowQueries = 64;
};

// Seeded normal tensors. `sharpness(h)` scales query head h, so that some heads
// attend to a few keys and others spread out (what makes AdaKV's heads differ).
std::shared_ptr<Capture> randomCapture(const Shape& s, uint64_t seed,
                                       double (*sharpness)(int64_t) = nullptr) {
    at::manual_seed(seed);
    std::vector<at::Tensor> q, k, v;
    for (int64_t l = 0; l < s.layers; ++l) {
        at::Tensor ql = at::randn({s.heads, s.windowQueries, s.headDim});
        if (sharpness) {
            for (int64_t h = 0; h < s.heads; ++h) ql[h].mul_(sharpness(h));
        }
        q.push_back(ql);
        k.push_back(at::randn({s.kvHeads, s.promptLength, s.headDim}));
        v.push_back(at::randn({s.kvHeads, s.promptLength, s.headDim}));
    }
    return Capture::fromTensors(q, k, v);
}

Selection select(const Capture& capture, const PressParams& p) {
    return Press::create(p.method)->select(capture, p);
}

PressParams params(const std::string& method, int64_t budget, int64_t window = 16) {
    PressParams p;
    p.method = method;
    p.budget = budget;
    p.window = window;
    return p;
}

// The prefix part of a head's kept positions; fails unless they are strictly
// ascending and end with the whole window T-W .. T-1.
std::vector<int32_t> prefixOf(const std::vector<int32_t>& kept, int64_t T, int64_t W) {
    for (size_t i = 1; i < kept.size(); ++i) {
        if (kept[i] <= kept[i - 1]) ADD_FAILURE() << "not strictly ascending at " << i;
    }
    if (int64_t(kept.size()) < W) {
        ADD_FAILURE() << "fewer positions than the window";
        return {};
    }
    std::vector<int32_t> prefix(kept.begin(), kept.end() - W);
    for (int64_t i = 0; i < W; ++i) {
        EXPECT_EQ(kept[kept.size() - W + i], T - W + i) << "window position " << i;
    }
    if (!prefix.empty()) {
        EXPECT_GE(prefix.front(), 0);
        EXPECT_LT(prefix.back(), T - W);
    }
    return prefix;
}

// `kept` holds k positions, and none dropped scores above one kept (beyond `tol`).
void expectTopK(const std::vector<int32_t>& kept, const std::vector<double>& scores, int64_t k,
                double tol, const std::string& what) {
    EXPECT_EQ(int64_t(kept.size()), k) << what;
    std::vector<char> in(scores.size(), 0);
    for (int32_t p : kept) in[p] = 1;
    double minKept = INFINITY, maxDropped = -INFINITY;
    for (size_t j = 0; j < scores.size(); ++j) {
        if (in[j]) {
            minKept = std::min(minKept, scores[j]);
        } else {
            maxDropped = std::max(maxDropped, scores[j]);
        }
    }
    EXPECT_GE(minKept, maxDropped - tol) << what;
}

// SnapKV's votes from the definition, in double: per query head, the causal softmax of
// the last W queries over all T keys (scaled by 1/sqrt(D)) summed over the queries,
// prefix columns only. Query head h reads KV head h / (H / KV).
Scores referenceVotes(const Capture& c, int64_t layer, int64_t W) {
    const int64_t H = c.queryHeads(), G = H / c.kvHeads(), T = c.promptLength(), D = c.headDim();
    const at::Tensor qt = c.windowQueries(layer).to(at::kDouble).contiguous();
    const at::Tensor kt = c.keys(layer).to(at::kDouble).contiguous();
    const auto q = qt.accessor<double, 3>();
    const auto k = kt.accessor<double, 3>();
    const int64_t Wc = qt.size(1);
    Scores votes(H, std::vector<double>(T - W, 0.0));
    for (int64_t h = 0; h < H; ++h) {
        for (int64_t i = 0; i < W; ++i) {
            const int64_t pos = T - W + i;
            std::vector<double> logit(pos + 1);
            double top = -INFINITY;
            for (int64_t t = 0; t <= pos; ++t) {
                double dot = 0.0;
                for (int64_t d = 0; d < D; ++d) dot += q[h][Wc - W + i][d] * k[h / G][t][d];
                logit[t] = dot / std::sqrt(double(D));
                top = std::max(top, logit[t]);
            }
            double z = 0.0;
            for (double& x : logit) z += (x = std::exp(x - top));
            for (int64_t t = 0; t < T - W; ++t) votes[h][t] += t <= pos ? logit[t] / z : 0.0;
        }
    }
    return votes;
}

// Mean over the query heads of each group: one row per KV head.
Scores groupMean(const Scores& perQueryHead, int64_t kvHeads) {
    const int64_t G = int64_t(perQueryHead.size()) / kvHeads;
    Scores out(kvHeads, std::vector<double>(perQueryHead[0].size(), 0.0));
    for (size_t h = 0; h < perQueryHead.size(); ++h)
        for (size_t j = 0; j < perQueryHead[h].size(); ++j) out[h / G][j] += perQueryHead[h][j] / G;
    return out;
}

std::vector<double> referencePool(const std::vector<double>& x, int64_t kernel, Pooling pooling) {
    const int64_t n = int64_t(x.size()), pad = kernel / 2;
    std::vector<double> out(n);
    for (int64_t i = 0; i < n; ++i) {
        double sum = 0.0, best = -INFINITY;
        for (int64_t j = i - pad; j <= i + pad; ++j) {
            if (j < 0 || j >= n) continue;  // avg counts the pads as zeros; max ignores them
            sum += x[j];
            best = std::max(best, x[j]);
        }
        out[i] = pooling == Pooling::Max ? best : sum / double(kernel);
    }
    return out;
}

TEST(Press, VotesFollowTheDefinitionWithGroupedHeads) {
    const Shape shape;
    const auto capture = randomCapture(shape, 1);
    for (int64_t W : {1, 16, 64}) {
        for (int64_t l = 0; l < shape.layers; ++l) {
            const Scores want = referenceVotes(*capture, l, W);
            const Scores wantKv = groupMean(want, shape.kvHeads);
            const presses::HeadScores q = presses::windowVotes(*capture, l, W, GqaMode::QueryHead);
            const presses::HeadScores kv = presses::windowVotes(*capture, l, W, GqaMode::KvHead);
            ASSERT_EQ(int64_t(q.size()), shape.heads);
            ASSERT_EQ(int64_t(kv.size()), shape.kvHeads);
            for (int64_t h = 0; h < shape.heads; ++h) {
                ASSERT_EQ(q[h].size(), want[h].size());
                for (size_t j = 0; j < want[h].size(); ++j) {
                    ASSERT_NEAR(q[h][j], want[h][j], 1e-5 * want[h][j] + 1e-7)
                        << "W=" << W << " layer " << l << " head " << h << " position " << j;
                }
            }
            for (int64_t h = 0; h < shape.kvHeads; ++h) {
                for (size_t j = 0; j < wantKv[h].size(); ++j) {
                    ASSERT_NEAR(kv[h][j], wantKv[h][j], 1e-5 * wantKv[h][j] + 1e-7)
                        << "W=" << W << " layer " << l << " kv head " << h << " position " << j;
                }
            }
        }
    }
}

TEST(Press, SnapKvKeepsTopPooledVotesPerHead) {
    const Shape shape;
    const auto capture = randomCapture(shape, 2);
    const int64_t B = 48, W = 16, T = shape.promptLength;
    for (GqaMode mode : {GqaMode::KvHead, GqaMode::QueryHead}) {
        for (Pooling pooling : {Pooling::Max, Pooling::Avg}) {
            PressParams p = params("snapkv", B, W);
            p.gqa = mode;
            p.pooling = pooling;
            p.kernel = 5;
            const Selection s = select(*capture, p);
            const int64_t heads = mode == GqaMode::KvHead ? shape.kvHeads : shape.heads;
            EXPECT_EQ(s.headsPerLayer(), heads);
            ASSERT_EQ(s.layers(), shape.layers);
            EXPECT_EQ(s.layerBudgets, std::vector<int64_t>(shape.layers, B));
            EXPECT_EQ(s.entries(), shape.layers * heads * B);
            for (int64_t l = 0; l < shape.layers; ++l) {
                Scores votes = referenceVotes(*capture, l, W);
                if (mode == GqaMode::KvHead) votes = groupMean(votes, shape.kvHeads);
                ASSERT_EQ(int64_t(s.kept[l].size()), heads);
                for (int64_t h = 0; h < heads; ++h) {
                    const std::string what = std::string(gqaModeName(mode)) + " " +
                                             poolingName(pooling) + " layer " + std::to_string(l) +
                                             " head " + std::to_string(h);
                    EXPECT_EQ(int64_t(s.kept[l][h].size()), B) << what;
                    expectTopK(prefixOf(s.kept[l][h], T, W),
                               referencePool(votes[h], p.kernel, pooling), B - W, 1e-6, what);
                }
            }
        }
    }
}

TEST(Press, QueryHeadModeLetsHeadsOfAGroupDiffer) {
    const Shape shape;
    const auto capture = randomCapture(shape, 3);
    PressParams p = params("snapkv", 40);
    p.gqa = GqaMode::QueryHead;
    const Selection s = select(*capture, p);
    EXPECT_EQ(s.headsPerLayer(), shape.heads);
    EXPECT_EQ(s.headOf(3), 3);
    EXPECT_NE(s.kept[0][0], s.kept[0][1]) << "query heads 0 and 1 share KV head 0 but not votes";
    p.gqa = GqaMode::KvHead;
    const Selection kv = select(*capture, p);
    EXPECT_EQ(kv.headsPerLayer(), shape.kvHeads);
    EXPECT_EQ(kv.headOf(0), 0);
    EXPECT_EQ(kv.headOf(1), 0);
    EXPECT_EQ(kv.headOf(3), 1);
}

TEST(Press, PyramidKvGivesEachLayerItsScheduledSnapKvBudget) {
    Shape shape;
    shape.layers = 4;
    const auto capture = randomCapture(shape, 4);
    const int64_t B = 40, W = 16, T = shape.promptLength;
    for (PyramidSchedule schedule : {PyramidSchedule::Exact, PyramidSchedule::Factory}) {
        PressParams p = params("pyramidkv", B, W);
        p.schedule = schedule;
        p.beta = 4;
        const Selection s = select(*capture, p);
        const std::vector<int64_t> prefix =
            PyramidKvPress::prefixBudgets(shape.layers, T, W, B, p.beta, schedule);
        EXPECT_GT(prefix.front(), prefix.back()) << "the budget must fall across layers";
        for (int64_t l = 0; l < shape.layers; ++l) {
            EXPECT_EQ(s.layerBudgets[l], prefix[l] + W);
            // Within a layer PyramidKV is SnapKV at that layer's budget.
            PressParams snap = params("snapkv", prefix[l] + W, W);
            const Selection same = select(*capture, snap);
            EXPECT_EQ(s.kept[l], same.kept[l]) << scheduleName(schedule) << " layer " << l;
            for (const auto& head : s.kept[l]) {
                EXPECT_EQ(int64_t(head.size()), prefix[l] + W);
                prefixOf(head, T, W);
            }
        }
        if (schedule == PyramidSchedule::Exact) {
            EXPECT_EQ(s.entries(), shape.layers * shape.kvHeads * B);
        }
    }
}

double skewed(int64_t h) { return h < 2 ? 0.1 : 4.0; }  // flat group 0, sharp group 1

TEST(Press, AdaKvSharesEachLayersPoolAmongHeads) {
    Shape shape;
    shape.heads = 8;
    shape.kvHeads = 4;
    const auto capture = randomCapture(shape, 5, skewed);
    const int64_t B = 48, W = 16, T = shape.promptLength, P = B - W;
    for (GqaMode mode : {GqaMode::KvHead, GqaMode::QueryHead}) {
        for (double alpha : {0.0, 0.2, 0.5}) {
            PressParams p = params("adakv", B, W);
            p.gqa = mode;
            p.alpha = alpha;
            const Selection s = select(*capture, p);
            const int64_t heads = s.headsPerLayer(), floorPerHead = int64_t(std::floor(alpha * P));
            bool lengthsDiffer = false;
            for (int64_t l = 0; l < shape.layers; ++l) {
                const std::string what = std::string(gqaModeName(mode)) + " alpha " +
                                         std::to_string(alpha) + " layer " + std::to_string(l);
                ASSERT_EQ(int64_t(s.kept[l].size()), heads) << what;
                EXPECT_EQ(s.entries(l), heads * P + heads * W) << what;
                // Per-head scores normalised to sum 1, as the method compares them across heads.
                const presses::HeadScores votes = presses::windowVotes(*capture, l, W, mode);
                std::vector<std::vector<double>> norm(heads);
                double minKeptBeyondFloor = INFINITY, maxDropped = -INFINITY;
                for (int64_t h = 0; h < heads; ++h) {
                    const std::vector<float> pooled =
                        presses::pool1d(votes[h], p.kernel, p.pooling);
                    const double total = std::accumulate(pooled.begin(), pooled.end(), 0.0);
                    for (float x : pooled) norm[h].push_back(double(x) / total);
                    const std::vector<int32_t> prefix = prefixOf(s.kept[l][h], T, W);
                    const int64_t n = int64_t(prefix.size());
                    EXPECT_GE(n, floorPerHead) << what << " head " << h;
                    if (n != int64_t(s.kept[l][0].size()) - W) lengthsDiffer = true;
                    // Each head's entries are its own best, whoever granted them.
                    expectTopK(prefix, norm[h], n, 1e-7, what + " head " + std::to_string(h));
                    std::vector<char> in(T - W, 0);
                    for (int32_t pos : prefix) in[pos] = 1;
                    for (int64_t j = 0; j < T - W; ++j) {
                        if (!in[j]) maxDropped = std::max(maxDropped, norm[h][j]);
                    }
                    // The lowest entry of a head above its floor came from the shared top-k.
                    if (n > floorPerHead) {
                        double lowest = INFINITY;
                        for (int32_t pos : prefix) lowest = std::min(lowest, norm[h][pos]);
                        minKeptBeyondFloor = std::min(minKeptBeyondFloor, lowest);
                    }
                }
                EXPECT_GE(minKeptBeyondFloor, maxDropped - 1e-7) << what << ": shared top-k";
            }
            EXPECT_TRUE(lengthsDiffer) << gqaModeName(mode) << " alpha " << alpha
                                       << ": sharp and flat heads got equal lengths";
        }
    }
    // alpha = 1 guarantees every head its whole share: plain per-head top-k.
    PressParams p = params("adakv", B, W);
    p.alpha = 1.0;
    const Selection s = select(*capture, p);
    for (const auto& layer : s.kept)
        for (const auto& head : layer) EXPECT_EQ(int64_t(head.size()), B);
}

TEST(Press, StreamingLlmKeepsSinksAndTheMostRecent) {
    const Shape shape;
    const auto capture = randomCapture(shape, 6);
    const int64_t T = shape.promptLength;
    for (int64_t sinks : {0, 4, 7}) {
        PressParams p = params("streamingllm", 40);
        p.sinks = sinks;
        const Selection s = select(*capture, p);
        std::vector<int32_t> want;
        for (int64_t i = 0; i < sinks; ++i) want.push_back(int32_t(i));
        for (int64_t i = T - (40 - sinks); i < T; ++i) want.push_back(int32_t(i));
        for (const auto& layer : s.kept)
            for (const auto& head : layer) EXPECT_EQ(head, want) << "sinks " << sinks;
    }
}

// A prefill of random:tiny (8 query heads, 4 KV heads) with every query recorded, and
// H2O's score from the definition in double: the causal softmax of all T queries
// summed per key.
class QueryRecorder : public ForwardObserver {
public:
    void onQueries(int64_t layer, const at::Tensor& q, int64_t) override {
        queries[layer] = q.to(at::kDouble).contiguous();  // [T, H, D]
    }
    std::map<int64_t, at::Tensor> queries;
};

struct Prefilled {
    LoadedModel loaded;
    std::shared_ptr<Capture> capture;
    std::vector<Scores> accumulated;  // [layer][query head][key]
};

const Prefilled& prefilled() {
    static const std::unique_ptr<Prefilled> p = [] {
        auto out = std::make_unique<Prefilled>();
        out->loaded = loadModel("random:tiny:layers=2", c10::Device(c10::kCPU), c10::kFloat);
        LlamaModel& model = *out->loaded.model;
        std::vector<int32_t> prompt;
        for (int32_t i = 0; i < 48; ++i) prompt.push_back((37 * i + 11) % 500 + 3);
        out->capture = Capture::fromPrefill(model, prompt);
        out->capture->keepScoresFor(model, "h2o");

        const int64_t T = int64_t(prompt.size()), H = model.config().nHeads,
                      G = H / model.config().nKvHeads, D = model.config().headDim;
        QueryRecorder recorder;
        KvCache cache = model.makeCache(T);
        model.forward(prompt, cache, false, {}, &recorder);
        for (int64_t l = 0; l < model.config().nLayers; ++l) {
            const at::Tensor qt = recorder.queries.at(l);
            const at::Tensor kt = cache.keys(l).to(at::kDouble).contiguous();
            const auto q = qt.accessor<double, 3>();
            const auto k = kt.accessor<double, 3>();
            Scores sums(H, std::vector<double>(T, 0.0));
            for (int64_t h = 0; h < H; ++h) {
                for (int64_t i = 0; i < T; ++i) {
                    std::vector<double> e(i + 1);
                    double top = -INFINITY, z = 0.0;
                    for (int64_t t = 0; t <= i; ++t) {
                        double dot = 0.0;
                        for (int64_t d = 0; d < D; ++d) dot += q[i][h][d] * k[h / G][t][d];
                        top = std::max(top, e[t] = dot / std::sqrt(double(D)));
                    }
                    for (double& x : e) z += (x = std::exp(x - top));
                    for (int64_t t = 0; t <= i; ++t) sums[h][t] += e[t] / z;
                }
            }
            out->accumulated.push_back(std::move(sums));
        }
        return out;
    }();
    return *p;
}

TEST(Press, H2oKeepsTheTopAccumulatedAttention) {
    const Prefilled& m = prefilled();
    const Capture& c = *m.capture;
    const int64_t T = c.promptLength(), B = 20, W = 8;
    ASSERT_TRUE(c.hasH2oScores());
    for (int64_t l = 0; l < c.layers(); ++l) {
        const at::Tensor got = c.h2oScores(l).to(at::kDouble).contiguous();
        ASSERT_EQ(got.size(0), c.queryHeads());
        ASSERT_EQ(got.size(1), T);
        const auto g = got.accessor<double, 2>();
        for (int64_t h = 0; h < c.queryHeads(); ++h)
            for (int64_t t = 0; t < T; ++t) {
                const double want = m.accumulated[l][h][t];
                ASSERT_NEAR(g[h][t], want, 1e-4 * want + 1e-6) << "layer " << l << " head " << h;
            }
    }
    // H2O keeps one selection per KV head whatever --gqa says (query-head mode is
    // for the voting methods), so both requests give the group-mean ranking.
    for (GqaMode mode : {GqaMode::KvHead, GqaMode::QueryHead}) {
        PressParams p = params("h2o", B, W);
        p.gqa = mode;
        const Selection s = select(c, p);
        EXPECT_EQ(s.gqa, GqaMode::KvHead);
        for (int64_t l = 0; l < c.layers(); ++l) {
            Scores scores = groupMean(m.accumulated[l], c.kvHeads());
            ASSERT_EQ(int64_t(s.kept[l].size()), int64_t(scores.size()));
            for (size_t h = 0; h < scores.size(); ++h) {
                scores[h].resize(T - W);  // the window is kept anyway
                const std::string what = std::string(gqaModeName(mode)) + " layer " +
                                         std::to_string(l) + " head " + std::to_string(h);
                expectTopK(prefixOf(s.kept[l][h], T, W), scores[h], B - W, 1e-5, what);
            }
        }
    }
}

TEST(Press, BudgetOfThePromptOrMoreKeepsEverything) {
    const Capture& c = *prefilled().capture;
    const int64_t T = c.promptLength();
    std::vector<int32_t> all(T);
    std::iota(all.begin(), all.end(), 0);
    for (const std::string& method : PressParams::methodNames()) {
        for (int64_t B : {T, T + 5}) {
            const Selection s = select(c, params(method, B));
            EXPECT_EQ(s.layerBudgets, std::vector<int64_t>(c.layers(), T)) << method;
            for (const auto& layer : s.kept)
                for (const auto& head : layer) EXPECT_EQ(head, all) << method << " B=" << B;
        }
    }
}

TEST(Press, RatioBudgetResolvesAgainstThePromptLength) {
    PressParams p;
    p.budget = 0;
    p.budgetRatio = 0.25;
    EXPECT_EQ(p.resolveBudget(160), 40);
    p.budgetRatio = 0.125;
    EXPECT_EQ(p.resolveBudget(100), 13);  // 12.5 rounds half away from zero
    p.budgetRatio = 0.001;
    EXPECT_EQ(p.resolveBudget(100), 1);  // never below one entry
    p.budget = 7;
    EXPECT_EQ(p.resolveBudget(100), 7);  // an absolute budget wins

    const Shape shape;
    const auto capture = randomCapture(shape, 7);
    PressParams r = params("snapkv", 0);
    r.budgetRatio = 0.3;
    const Selection s = select(*capture, r);
    EXPECT_EQ(s.layerBudgets, std::vector<int64_t>(shape.layers, 48));
    for (const auto& layer : s.kept)
        for (const auto& head : layer) EXPECT_EQ(head.size(), 48u);
    EXPECT_EQ(s.kept, select(*capture, params("snapkv", 48)).kept);
    EXPECT_NE(r.describe().find("30%"), std::string::npos) << r.describe();
}

TEST(Press, RandomIsReproduciblePerSeedAndDiffersAcrossSeeds) {
    const Shape shape;
    const auto capture = randomCapture(shape, 8);
    const int64_t B = 40, W = 16, T = shape.promptLength;
    PressParams p = params("random", B, W);
    p.seed = 1;
    const Selection a = select(*capture, p), again = select(*capture, p);
    EXPECT_EQ(a.kept, again.kept);
    p.seed = 2;
    const Selection b = select(*capture, p);
    EXPECT_NE(a.kept, b.kept);
    std::set<std::vector<int32_t>> distinct;
    for (const Selection* s : {&a, &b}) {
        for (const auto& layer : s->kept) {
            for (const auto& head : layer) {
                EXPECT_EQ(int64_t(head.size()), B);
                EXPECT_EQ(int64_t(prefixOf(head, T, W).size()), B - W);
                distinct.insert(head);
            }
        }
    }
    // Every layer and head draws its own positions.
    EXPECT_EQ(int64_t(distinct.size()), 2 * shape.layers * shape.kvHeads);
}

// Runs `f`, which must throw kvlens::Error: one line holding every one of `parts`.
template <typename F>
void expectError(F f, std::initializer_list<std::string> parts) {
    try {
        f();
        ADD_FAILURE() << "no error; expected one mentioning " << *parts.begin();
    } catch (const Error& e) {
        const std::string m = e.what();
        EXPECT_EQ(m.find('\n'), std::string::npos) << m;
        for (const std::string& part : parts) {
            EXPECT_NE(m.find(part), std::string::npos) << "'" << part << "' missing in: " << m;
        }
    }
}

// Keep-all wins whenever B >= T, whatever W (the reference code keeps everything
// when the prompt fits the budget): a 20-token prompt with the default window 32
// and budget 128 keeps all 20 positions in every method.
TEST(Press, BudgetAtOrAboveThePromptKeepsEverythingWhateverTheWindow) {
    Shape shortShape;
    shortShape.promptLength = 20;
    shortShape.windowQueries = 20;
    const auto capture = randomCapture(shortShape, 11);
    std::vector<int32_t> all(20);
    std::iota(all.begin(), all.end(), 0);
    for (const std::string& method : PressParams::methodNames()) {
        if (method == "h2o") continue;  // needs a prefill: below
        for (int64_t W : {32, 20, 64, 100}) {
            for (int64_t B : {20, 128}) {
                const Selection s = select(*capture, params(method, B, W));
                EXPECT_EQ(s.layerBudgets, std::vector<int64_t>(shortShape.layers, 20)) << method;
                for (const auto& layer : s.kept)
                    for (const auto& head : layer) EXPECT_EQ(head, all) << method << " W=" << W << " B=" << B;
            }
        }
        PressParams ratio = params(method, 0, 32);
        ratio.budgetRatio = 1.0;
        EXPECT_EQ(select(*capture, ratio).kept.front().front(), all) << method;
    }
    const Capture& c = *prefilled().capture;
    const int64_t T = c.promptLength();
    const Selection h2o = select(c, params("h2o", T + 1, T + 10));
    for (const auto& layer : h2o.kept)
        for (const auto& head : layer) EXPECT_EQ(int64_t(head.size()), T);
}

// A ratio budget that rounds to the window or below says which ratio, which
// prompt length, what it rounded to and which window (or sinks).
TEST(Press, RatioBudgetAtOrBelowTheWindowNamesRatioPromptAndWindow) {
    const auto capture = randomCapture(Shape(), 12);  // 160 positions
    PressParams p = params("snapkv", 0, 32);
    p.budgetRatio = 0.1;
    expectError([&] { select(*capture, p); },
                {"--budget 10% of the 160-token prompt rounds to 16, which must exceed --window 32 "
                 "(the budget includes the window)"});
    PressParams sinks = params("streamingllm", 0);
    sinks.budgetRatio = 0.02;
    expectError([&] { select(*capture, sinks); },
                {"--budget 2% of the 160-token prompt rounds to 3, which must exceed --sinks 4 (the "
                 "budget includes the sinks)"});
    expectError([&] { select(*capture, params("snapkv", 32, 32)); },
                {"--budget 32 must exceed --window 32 (the budget includes the window)"});
}

// NaN or Inf in what the methods rank is refused when the capture is made,
// naming the layer and head, rather than each method treating it its own way.
TEST(Press, CaptureWithNaNOrInfIsRefusedNamingLayerAndHead) {
    const Shape s;
    auto tensors = [&](uint64_t seed) {
        at::manual_seed(seed);
        std::vector<at::Tensor> q, k, v;
        for (int64_t l = 0; l < s.layers; ++l) {
            q.push_back(at::randn({s.heads, s.windowQueries, s.headDim}));
            k.push_back(at::randn({s.kvHeads, s.promptLength, s.headDim}));
            v.push_back(at::randn({s.kvHeads, s.promptLength, s.headDim}));
        }
        return std::make_tuple(q, k, v);
    };
    {
        auto [q, k, v] = tensors(1);
        k[1][1][77][3] = std::numeric_limits<float>::quiet_NaN();
        expectError([&] { Capture::fromTensors(q, k, v); },
                    {"the inputs hold NaN in layer 1 KV head 1's keys: it cannot be compressed"});
    }
    {
        auto [q, k, v] = tensors(2);
        q[0][2][5][0] = std::numeric_limits<float>::infinity();
        expectError([&] { Capture::fromTensors(q, k, v); },
                    {"the inputs hold Inf in layer 0 query head 2's window queries"});
    }
    {
        auto [q, k, v] = tensors(3);
        v[1][0][0][0] = -std::numeric_limits<float>::infinity();
        expectError([&] { Capture::fromTensors(q, k, v); }, {"layer 1 KV head 0's values"});
    }
}

// An Inf reaching the keys during a prefill (as an f16 overflow on a GPU would)
// is refused with the layer and KV head it reached first.
TEST(Press, PrefillThatOverflowsIsRefusedNamingLayerAndHead) {
    test::TinyModelShape shape;  // 2 layers, 4 query heads, 2 KV heads, head dim 8
    test::TinyModelFile m = test::makeTinyModelFile(shape);
    const int64_t headDim = shape.embed / shape.heads;
    for (size_t i = 0; i < m.builder.tensorCount(); ++i) {
        test::GgufBuilder::Tensor& t = m.builder.tensor(i);
        if (t.name != "blk.1.attn_k.weight") continue;
        const float inf = std::numeric_limits<float>::infinity();
        const size_t element = size_t(1 * headDim) * size_t(shape.embed);  // KV head 1's first row
        std::memcpy(t.data.data() + 4 * element, &inf, 4);
    }
    const std::string path = test::testOutputPath("press_overflow.gguf");
    m.builder.writeFile(path);
    LoadedModel loaded = loadModel(path, c10::Device(c10::kCPU), c10::kFloat);
    const std::vector<int32_t> prompt = {1, 260, 17, 270, 5, 99, 42, 262, 8, 3, 211, 64};
    expectError([&] { Capture::fromPrefill(*loaded.model, prompt); },
                {"the prefill produced ", " in layer 1 KV head 1's keys: it cannot be compressed",
                 "--dtype bf16 or f32"});
}

TEST(Press, ErrorsNameTheFlagInOneLine) {
    Shape shortShape;
    shortShape.promptLength = 40;
    shortShape.windowQueries = 40;
    const auto shortCapture = randomCapture(shortShape, 9);
    const auto capture = randomCapture(Shape(), 9);

    expectError([&] { select(*shortCapture, params("snapkv", 30, 40)); },
                {"--window 40", "prompt length 40"});
    expectError([&] { select(*capture, params("snapkv", 100, 65)); }, {"--window 65", "64"});
    PressParams even = params("snapkv", 48);
    even.kernel = 4;
    expectError([&] { select(*capture, even); }, {"--kernel 4"});
    expectError([&] { select(*capture, params("snapkv", 16, 16)); },
                {"--budget 16", "--window 16"});
    expectError([&] { select(*capture, params("pyramidkv", 10, 16)); },
                {"--budget 10", "--window 16"});
    for (double alpha : {1.5, -0.1}) {
        PressParams p = params("adakv", 48);
        p.alpha = alpha;
        expectError([&] { select(*capture, p); }, {"--alpha"});
    }
    PressParams flat = params("pyramidkv", 48);
    flat.beta = 0.5;
    expectError([&] { select(*capture, flat); }, {"--beta 0.5"});
    expectError([&] { Press::create("snapkvv"); }, {"--method 'snapkvv'", "snapkv"});
    expectError([&] { Press::create("snapkv")->select(*capture, params("lru", 48)); },
                {"--method 'lru'"});
    expectError([&] { select(*capture, params("h2o", 48)); }, {"--method h2o"});
    // The methods and wrappers of CAKE, SimLayerKV and --scorer.
    PressParams scored = params("snapkv", 48);
    scored.scorer = "knorm";
    expectError([&] { select(*capture, scored); }, {"--scorer is for adakv, chunkkv, cake, perlayer, criticalkv, "
                                                    "criticaladakv and chunkkv-kvpress, not --method snapkv"});
    scored.method = "adakv";
    scored.scorer = "lru";
    expectError([&] { select(*capture, scored); },
                {"--scorer 'lru' is not one of snapkv, h2o, tova, knorm, keydiff, lagkv, expected, cur, cake"});
    // H2O as a scorer needs every prompt query: tensors given with --inputs have none.
    scored.scorer = "h2o";
    expectError([&] { select(*capture, scored); },
                {"--scorer h2o needs the attention of every prompt query, which only a model prefill records "
                 "(not tensors given with --inputs)"});
    for (double tau : {0.0, -1.0}) {
        PressParams cake = params("cake", 48);
        cake.tau2 = tau;
        expectError([&] { select(*capture, cake); }, {"--tau2 ", " must be positive"});
    }
    PressParams cake = params("cake", 48);
    cake.gamma = -2;
    expectError([&] { select(*capture, cake); }, {"--gamma -2 must be >= 0"});
    cake = params("cake", 48, 1);
    expectError([&] { select(*capture, cake); }, {"--window 1 is too short for CAKE"});
    // As a scorer too: one row has no variance, and a NaN indicator would keep everything.
    for (const char* wrapper : {"adakv", "chunkkv", "perlayer"}) {
        PressParams scoredByCake = params(wrapper, 48, 1);
        scoredByCake.scorer = "cake";
        expectError([&] { select(*capture, scoredByCake); }, {"--window 1 is too short for CAKE"});
    }
    PressParams lazy = params("simlayerkv", 48);
    lazy.lazy = 1.5;
    expectError([&] { select(*capture, lazy); }, {"--lazy 1.5 must be in [0, 1]"});
    PressParams sunk = params("adakv", 20, 16);
    sunk.scorer = "cur";
    expectError([&] { select(*capture, sunk); }, {"--budget 20 must exceed --window + --sinks 20"});
    PressParams chunked = params("chunkkv", 30, 16);
    chunked.scorer = "cur";
    chunked.chunk = 12;
    expectError([&] { select(*capture, chunked); },
                {"--budget 30 leaves 10 entries beside --window 16 and --sinks 4, less than one --chunk of 12"});
}

// H2O's scores are not part of the capture (they cost a second pass over the
// prompt): the first H2O selection computes them by a replay over the capture's
// own KV, chunk by chunk like a long prefill, equal to the definition in double.
TEST(Press, H2oScoresComeOnFirstUseFromAReplayOfThePrompt) {
    const Prefilled& m = prefilled();
    LlamaModel& model = *m.loaded.model;
    const auto fresh = Capture::fromPrefill(model, m.capture->prompt());
    EXPECT_FALSE(fresh->hasH2oScores());
    const int64_t before = fresh->bytes();
    expectError([&] { select(*fresh, params("h2o", 20, 8)); }, {"--method h2o", "keepScoresFor"});
    fresh->keepScoresFor(model, "snapkv");  // nothing: SnapKV needs only the votes
    EXPECT_FALSE(fresh->hasH2oScores());
    EXPECT_EQ(fresh->bytes(), before);
    for (int64_t chunk : {int64_t(48), int64_t(7)}) {  // one chunk; seven, the last of 6 tokens
        model.setPrefillChunk(chunk);
        const auto c = Capture::fromPrefill(model, m.capture->prompt());
        c->keepScoresFor(model, "h2o");
        model.setPrefillChunk(LlamaModel::kPrefillChunk);
        ASSERT_TRUE(c->hasH2oScores());
        const int64_t T = c->promptLength(), H = c->queryHeads();
        EXPECT_EQ(c->bytes(), before + c->layers() * H * T * 4) << chunk;
        for (int64_t l = 0; l < c->layers(); ++l) {
            const at::Tensor got = c->h2oScores(l).to(at::kDouble).contiguous();
            const auto g = got.accessor<double, 2>();
            for (int64_t h = 0; h < H; ++h)
                for (int64_t t = 0; t < T; ++t) {
                    const double want = m.accumulated[l][h][t];
                    ASSERT_NEAR(g[h][t], want, 1e-4 * want + 1e-6) << "chunk " << chunk << " layer " << l;
                }
        }
        EXPECT_EQ(select(*c, params("h2o", 20, 8)).kept, select(*m.capture, params("h2o", 20, 8)).kept);
    }
    // Another model than the capture's is refused, naming why.
    LoadedModel other = loadModel("random:tiny:layers=1", c10::Device(c10::kCPU), c10::kFloat);
    expectError([&] { fresh->keepScoresFor(*other.model, "h2o"); }, {"H2O's scores need the model"});
}

// A prompt longer than the prefill chunk runs chunk after chunk: the same logits,
// KV and capture (window queries straddling two chunks, full queries) as one run.
TEST(Press, ChunkedPrefillCapturesWhatOnePrefillDoes) {
    const Prefilled& m = prefilled();
    LlamaModel& model = *m.loaded.model;
    const std::vector<int32_t>& prompt = m.capture->prompt();
    const auto whole = Capture::fromPrefill(model, prompt, {}, {{1, 3}, {0, 0}});
    for (int64_t chunk : {int64_t(5), int64_t(30), int64_t(47)}) {
        model.setPrefillChunk(chunk);
        std::vector<std::string> heard;
        const auto c = Capture::fromPrefill(model, prompt, [&](double, const std::string& w) { heard.push_back(w); },
                                            {{1, 3}, {0, 0}});
        KvCache cache = model.makeCache(int64_t(prompt.size()));
        const at::Tensor all = model.forward(prompt, cache, true);
        model.setPrefillChunk(LlamaModel::kPrefillChunk);
        EXPECT_TRUE(at::allclose(c->lastLogits(), whole->lastLogits(), 1e-5, 1e-5)) << chunk;
        ASSERT_EQ(all.size(0), int64_t(prompt.size()));
        EXPECT_TRUE(at::allclose(all[-1], whole->lastLogits(), 1e-5, 1e-5)) << chunk;
        for (int64_t l = 0; l < c->layers(); ++l) {
            EXPECT_TRUE(at::allclose(c->keys(l), whole->keys(l), 1e-5, 1e-5)) << chunk;
            EXPECT_TRUE(at::allclose(c->values(l), whole->values(l), 1e-5, 1e-5)) << chunk;
            EXPECT_TRUE(at::allclose(c->windowQueries(l), whole->windowQueries(l), 1e-5, 1e-5)) << chunk;
            EXPECT_TRUE(at::allclose(c->votes(l, 32), whole->votes(l, 32), 1e-5, 1e-6)) << chunk;
        }
        EXPECT_TRUE(at::allclose(c->queries(1, 3), whole->queries(1, 3), 1e-5, 1e-5)) << chunk;
        EXPECT_TRUE(at::allclose(c->queries(0, 0), whole->queries(0, 0), 1e-5, 1e-5)) << chunk;
        const int64_t chunks = (int64_t(prompt.size()) + chunk - 1) / chunk;
        ASSERT_FALSE(heard.empty());
        EXPECT_NE(heard.front().find("chunk 1/" + std::to_string(chunks)), std::string::npos) << heard.front();
    }
    // A bad id anywhere fails before the first chunk touches the cache.
    model.setPrefillChunk(5);
    KvCache cache = model.makeCache(16);
    std::vector<int32_t> bad(12, 5);
    bad[11] = int32_t(model.config().vocabSize);
    expectError([&] { model.forward(bad, cache); }, {"token id " + std::to_string(bad[11]), "outside the vocabulary"});
    model.setPrefillChunk(LlamaModel::kPrefillChunk);
    EXPECT_EQ(cache.length(), 0);
}

TEST(Press, ADescriptionReadsBackAsTheParametersItWasWrittenFrom) {
    auto same = [](const PressParams& a, const PressParams& b) {
        return a.method == b.method && a.budget == b.budget && std::abs(a.budgetRatio - b.budgetRatio) < 1e-9 &&
               a.window == b.window && a.kernel == b.kernel && a.pooling == b.pooling && a.beta == b.beta &&
               a.alpha == b.alpha && a.gqa == b.gqa && a.schedule == b.schedule && a.sinks == b.sinks &&
               a.seed == b.seed && a.lag == b.lag && a.chunk == b.chunk && a.future == b.future &&
               a.scorer == b.scorer && a.tau1 == b.tau1 && a.tau2 == b.tau2 && a.gamma == b.gamma && a.lazy == b.lazy &&
               a.layerWeights == b.layerWeights && a.sketch == b.sketch && a.attnChunk == b.attnChunk &&
               a.blend == b.blend && a.think == b.think && a.repeatChunk == b.repeatChunk &&
               a.finchChunk == b.finchChunk && a.convention == b.convention;
    };
    std::vector<PressParams> all;
    for (const std::string& m : PressParams::methodNames()) {
        PressParams p;
        p.method = m;
        p.budget = 96;
        all.push_back(p);
    }
    PressParams odd;
    odd.method = "pyramidkv";
    odd.budget = 0;
    odd.budgetRatio = 0.125;
    odd.window = 16;
    odd.kernel = 5;
    odd.pooling = Pooling::Avg;
    odd.gqa = GqaMode::QueryHead;
    odd.beta = 7.5;
    odd.schedule = PyramidSchedule::Factory;
    all.push_back(odd);
    PressParams kvpress = odd;  // --convention kvpress --compression-ratio 0.3
    kvpress.convention = Convention::Kvpress;
    kvpress.gqa = GqaMode::KvHead;
    kvpress.budgetRatio = 1.0 - 0.3;
    kvpress.schedule = PressParams{}.schedule;  // unread under kvpress (the table's kvpressUnread), so not described
    all.push_back(kvpress);
    PressParams ada;
    ada.method = "adakv";
    ada.budget = 200;
    ada.alpha = 0.35;
    all.push_back(ada);
    PressParams sl;
    sl.method = "streamingllm";
    sl.budget = 64;
    sl.sinks = 9;
    all.push_back(sl);
    PressParams rnd;
    rnd.method = "random";
    rnd.budget = 64;
    rnd.seed = 12345;
    all.push_back(rnd);
    PressParams lag;
    lag.method = "lagkv";
    lag.budget = 300;
    lag.sinks = 16;
    lag.lag = 64;
    all.push_back(lag);
    PressParams chunk;
    chunk.method = "chunkkv";
    chunk.budget = 100;
    chunk.window = 24;
    chunk.chunk = 7;
    chunk.gqa = GqaMode::QueryHead;
    all.push_back(chunk);
    PressParams expected;
    expected.method = "expected";
    expected.budget = 80;
    expected.sinks = 2;
    expected.future = 2048;
    all.push_back(expected);
    PressParams cur;
    cur.method = "cur";
    cur.budget = 90;
    cur.sinks = 6;
    all.push_back(cur);
    PressParams cake;
    cake.method = "cake";
    cake.budget = 120;
    cake.window = 16;
    cake.tau1 = 1.6000000001;
    cake.tau2 = 0.4;
    cake.gamma = 150;
    all.push_back(cake);
    PressParams cakeKnorm = cake;
    cakeKnorm.scorer = "knorm";
    cakeKnorm.gamma = PressParams().gamma;  // CAKE's indicator's knob: unused with another scorer
    all.push_back(cakeKnorm);
    PressParams adaExpected;
    adaExpected.method = "adakv";
    adaExpected.budget = 100;
    adaExpected.scorer = "expected";
    adaExpected.sinks = 3;
    adaExpected.future = 256;
    adaExpected.alpha = 0.3;
    all.push_back(adaExpected);
    PressParams chunkCur;
    chunkCur.method = "chunkkv";
    chunkCur.budget = 100;
    chunkCur.scorer = "cur";
    chunkCur.sinks = 5;
    chunkCur.chunk = 8;
    all.push_back(chunkCur);
    PressParams adaCake;
    adaCake.method = "adakv";
    adaCake.budget = 100;
    adaCake.scorer = "cake";
    adaCake.gamma = 50;
    all.push_back(adaCake);
    PressParams lazy;
    lazy.method = "simlayerkv";
    lazy.budget = 70;
    lazy.sinks = 2;
    lazy.lazy = 0.65;
    all.push_back(lazy);
    PressParams perLayer;
    perLayer.method = "perlayer";
    perLayer.budget = 80;
    perLayer.scorer = "keydiff";
    perLayer.layerWeights = {4, 2, 1.5, 0.123456789};  // read back exactly
    all.push_back(perLayer);
    PressParams leverage;
    leverage.method = "leverage";
    leverage.budget = 64;
    leverage.sketch = 20;
    leverage.seed = 12345;
    all.push_back(leverage);
    PressParams compactor;
    compactor.method = "compactor";
    compactor.budget = 64;
    compactor.sinks = 8;
    compactor.window = 4;
    compactor.sketch = 32;
    compactor.attnChunk = 128;
    compactor.blend = 0.35;
    compactor.seed = 3;
    all.push_back(compactor);
    PressParams snapThink;
    snapThink.method = "snapkv";
    snapThink.budget = 64;
    snapThink.think = 0.3;
    all.push_back(snapThink);
    PressParams fullThink;
    fullThink.method = "full";
    fullThink.window = 16;
    fullThink.think = 0.5;
    all.push_back(fullThink);
    PressParams chunkNonCausal;
    chunkNonCausal.method = "chunkkv";
    chunkNonCausal.budget = 100;
    chunkNonCausal.scorer = "noncausal";
    chunkNonCausal.attnChunk = 64;
    all.push_back(chunkNonCausal);
    PressParams kvzip;
    kvzip.method = "kvzip";
    kvzip.budget = 100;
    kvzip.sinks = 2;
    kvzip.repeatChunk = 300;
    all.push_back(kvzip);
    PressParams critical;
    critical.method = "criticaladakv";
    critical.budget = 100;
    critical.alpha = 0.35;
    critical.scorer = "kvzip";
    critical.repeatChunk = 512;
    all.push_back(critical);
    PressParams finch;
    finch.method = "finch";
    finch.budget = 100;
    finch.window = 80;
    finch.finchChunk = 300;
    all.push_back(finch);
    PressParams chunkKvpress;
    chunkKvpress.method = "chunkkv-kvpress";
    chunkKvpress.budget = 70;
    chunkKvpress.chunk = 20;
    chunkKvpress.scorer = "knorm";
    all.push_back(chunkKvpress);
    PressParams finchKvpress;
    finchKvpress.method = "finch-kvpress";
    finchKvpress.budget = 90;
    finchKvpress.window = 24;
    all.push_back(finchKvpress);
    PressParams cakeLag;
    cakeLag.method = "cake";
    cakeLag.budget = 120;
    cakeLag.scorer = "lagkv";
    cakeLag.lag = 40;
    cakeLag.sinks = 2;
    all.push_back(cakeLag);
    for (const PressParams& p : all) {
        const PressParams back = PressParams::fromDescription(p.describe());
        if (p.method == "full") {
            EXPECT_EQ(back.method, "full");
            EXPECT_EQ(back.budget, p.budget);
            EXPECT_EQ(back.think, p.think);
            if (p.think > 0.0) {
                EXPECT_EQ(back.window, p.window);
            }
            continue;
        }
        EXPECT_TRUE(same(p, back)) << p.describe() << " -> " << back.describe();
    }
    auto message = [](const std::string& line) {
        try {
            PressParams::fromDescription(line, "niah params");
        } catch (const Error& e) {
            return std::string(e.what());
        }
        return std::string();
    };
    EXPECT_EQ(message(""), "niah params: the line is empty");
    EXPECT_EQ(message("fancy B=3"), "niah params: 'fancy' is not a method");
    EXPECT_EQ(message("snapkv B=x"), "niah params: 'B=x' is not a number");
    EXPECT_EQ(message("snapkv B=64 wobble"), "niah params: 'wobble' is not a parameter of a method");
}

}  // namespace
}  // namespace kvlens
