// Expected Attention against a reference written here in double precision from its
// definition: the prompt's queries after the sinks, turned back to before RoPE, as a
// Gaussian (mean, covariance over the count); RoPE averaged over the next F positions
// (R); per query head softmax_j((R mu).k_j / sqrt(D) + k_j.(R S R^T).k_j / (2D)), the KV
// head's query heads averaged, times ||v_j||; the sinks and the best B - sinks kept.
// The queries come from the capture's per-head queries of every position (after RoPE),
// rotated back here with this file's own angles, on the interleaved and the halves layout.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "core/Error.h"
#include "engine/compress/Capture.h"
#include "engine/compress/CompressedCache.h"
#include "engine/compress/DecodeCompressor.h"
#include "engine/compress/presses/Press.h"
#include "engine/model/LlamaModel.h"
#include "engine/model/ModelLoader.h"
#include "engine/model/Sampler.h"

namespace kvlens {
namespace {

using Vec = std::vector<double>;
using Mat = std::vector<Vec>;

double dot(const Vec& a, const Vec& b) {
    double s = 0.0;
    for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
    return s;
}

Vec times(const Mat& m, const Vec& x) {
    Vec y(m.size(), 0.0);
    for (size_t i = 0; i < m.size(); ++i) y[i] = dot(m[i], x);
    return y;
}

// The pair of dimensions RoPE turns together, for pair i of the R rotated ones.
std::pair<int64_t, int64_t> pairOf(int64_t i, int64_t R, bool halves) {
    return halves ? std::make_pair(i, i + R / 2) : std::make_pair(2 * i, 2 * i + 1);
}

struct Reference {
    double theta;  // RoPE base
    bool halves;
    int64_t ropeDim;  // rotated dimensions of each head (the rest are not turned)
    int64_t sinks, future;

    double freq(int64_t i) const { return std::pow(theta, -2.0 * double(i) / double(ropeDim)); }

    // Scores per KV head over positions sinks .. T-1.
    std::vector<Vec> scores(const Capture& c, int64_t layer) const {
        const int64_t T = c.promptLength(), D = c.headDim(), H = c.queryHeads(), KV = c.kvHeads(),
                      G = H / KV;
        const int64_t n = T - sinks;
        // RoPE's rotation averaged over positions T .. T + future - 1.
        Mat R(D, Vec(D, 0.0));
        for (int64_t d = 0; d < D; ++d) R[d][d] = 1.0;
        for (int64_t i = 0; i < ropeDim / 2; ++i) {
            double cs = 0.0, sn = 0.0;
            for (int64_t p = T; p < T + future; ++p) {
                cs += std::cos(double(p) * freq(i)) / double(future);
                sn += std::sin(double(p) * freq(i)) / double(future);
            }
            const auto [u, v] = pairOf(i, ropeDim, halves);
            R[u][u] = cs, R[u][v] = -sn, R[v][u] = sn, R[v][v] = cs;
        }
        const at::Tensor keys = c.keys(layer).to(at::kDouble).contiguous();
        const at::Tensor values = c.values(layer).to(at::kDouble).contiguous();
        const auto ka = keys.accessor<double, 3>(), va = values.accessor<double, 3>();
        std::vector<Vec> out(KV, Vec(n, 0.0));
        for (int64_t h = 0; h < H; ++h) {
            const at::Tensor q =
                c.queries(layer, h).to(at::kDouble).contiguous();  // [T, D] after RoPE
            const auto qa = q.accessor<double, 2>();
            Mat pre(n, Vec(D));
            for (int64_t t = sinks; t < T; ++t) {
                for (int64_t d = 0; d < D; ++d) pre[t - sinks][d] = qa[t][d];
                for (int64_t i = 0; i < ropeDim / 2; ++i) {
                    const auto [u, v] = pairOf(i, ropeDim, halves);
                    const double a = double(t) * freq(i), y0 = qa[t][u], y1 = qa[t][v];
                    pre[t - sinks][u] = y0 * std::cos(a) + y1 * std::sin(a);
                    pre[t - sinks][v] = y1 * std::cos(a) - y0 * std::sin(a);
                }
            }
            Vec mu(D, 0.0);
            for (const Vec& x : pre)
                for (int64_t d = 0; d < D; ++d) mu[d] += x[d] / double(n);
            Mat cov(D, Vec(D, 0.0));
            for (const Vec& x : pre)
                for (int64_t a = 0; a < D; ++a)
                    for (int64_t b = 0; b < D; ++b)
                        cov[a][b] += (x[a] - mu[a]) * (x[b] - mu[b]) / double(n);
            const Vec muR = times(R, mu);
            Mat sigma(D, Vec(D, 0.0));  // R cov R^T
            for (int64_t a = 0; a < D; ++a)
                for (int64_t b = 0; b < D; ++b)
                    for (int64_t x = 0; x < D; ++x)
                        for (int64_t y = 0; y < D; ++y)
                            sigma[a][b] += R[a][x] * cov[x][y] * R[b][y];
            Vec logit(n);
            for (int64_t j = 0; j < n; ++j) {
                Vec k(D);
                for (int64_t d = 0; d < D; ++d) k[d] = ka[h / G][sinks + j][d];
                logit[j] = dot(muR, k) / std::sqrt(double(D)) +
                           dot(k, times(sigma, k)) / (2.0 * double(D));
            }
            const double top = *std::max_element(logit.begin(), logit.end());
            double z = 0.0;
            for (double& x : logit) z += (x = std::exp(x - top));
            for (int64_t j = 0; j < n; ++j) out[h / G][j] += logit[j] / z / double(G);
        }
        for (int64_t kv = 0; kv < KV; ++kv)
            for (int64_t j = 0; j < n; ++j) {
                double norm = 0.0;
                for (int64_t d = 0; d < D; ++d) norm += va[kv][sinks + j][d] * va[kv][sinks + j][d];
                out[kv][j] *= std::sqrt(norm);
            }
        return out;
    }
};

// `kept` is the sinks, then B - sinks positions after them whose reference scores are the
// best, by rule: nothing kept scores clearly below anything dropped (a relative 1e-5
// allows the float32 scoring's rounding at a near tie).
void expectKeptByRule(const std::vector<int32_t>& kept, const Vec& ref, int64_t sinks,
                      int64_t budget, const std::string& where) {
    ASSERT_EQ(int64_t(kept.size()), budget) << where;
    for (int64_t i = 0; i < sinks; ++i) ASSERT_EQ(kept[i], i) << where;
    std::vector<char> in(ref.size(), 0);
    for (int64_t i = sinks; i < budget; ++i) in[kept[i] - sinks] = 1;
    double worstKept = INFINITY, bestDropped = -INFINITY;
    for (size_t j = 0; j < ref.size(); ++j) {
        if (in[j]) {
            worstKept = std::min(worstKept, ref[j]);
        } else {
            bestDropped = std::max(bestDropped, ref[j]);
        }
    }
    EXPECT_GE(worstKept, bestDropped * (1.0 - 1e-5)) << where;
}

struct Case {
    bool halves;
    int64_t ropeDim;  // of the 32 dimensions of random:tiny's heads
    int64_t chunk;    // prefill chunk: the statistics add up over chunks
    int64_t promptLength;
};

class ExpectedAttention : public ::testing::TestWithParam<Case> {};

TEST_P(ExpectedAttention, KeptSetsEqualTheDefinitionInDouble) {
    const Case k = GetParam();
    LoadedModel loaded =
        loadModel("random:tiny:layers=2:seed=7", c10::Device(c10::kCPU), c10::kFloat);
    ModelConfig config = loaded.model->config();  // 8 query heads, 4 KV heads, D = 32
    config.ropeStyle = k.halves ? RopeStyle::Halves : RopeStyle::Adjacent;
    config.ropeDim = k.ropeDim;
    LlamaModel model(config, loaded.model->weights(), c10::Device(c10::kCPU), c10::kFloat);
    std::vector<int32_t> prompt(k.promptLength);
    for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = int32_t((i * 37 + 11) % 500 + 1);
    std::vector<std::pair<int64_t, int64_t>> heads;
    for (int64_t l = 0; l < 2; ++l)
        for (int64_t h = 0; h < config.nHeads; ++h) heads.push_back({l, h});
    model.setPrefillChunk(k.chunk);
    const auto capture = Capture::fromPrefill(model, prompt, {}, heads);
    const int64_t T = capture->promptLength();
    for (const auto& [sinks, future] :
         std::vector<std::pair<int64_t, int64_t>>{{4, 512}, {0, 16}, {7, 100}}) {
        const Reference ref{config.ropeTheta, k.halves, k.ropeDim, sinks, future};
        PressParams p;
        p.method = "expected";
        p.sinks = sinks;
        p.future = future;
        for (int64_t B : {sinks + 1, int64_t(40), int64_t(120), T - 1}) {
            if (B >= T) continue;  // keeps everything
            p.budget = B;
            const Selection s = Press::create("expected")->select(*capture, p);
            EXPECT_EQ(s.headsPerLayer(), config.nKvHeads);
            for (int64_t l = 0; l < 2; ++l) {
                const std::vector<Vec> want = ref.scores(*capture, l);
                for (int64_t h = 0; h < config.nKvHeads; ++h)
                    expectKeptByRule(s.kept[l][h], want[h], sinks, B,
                                     "sinks " + std::to_string(sinks) + " future " +
                                         std::to_string(future) + " B " + std::to_string(B) +
                                         " layer " + std::to_string(l) + " head " +
                                         std::to_string(h));
            }
        }
    }
}

INSTANTIATE_TEST_SUITE_P(
    RopeLayouts, ExpectedAttention,
    ::testing::Values(Case{false, 32, 100, 230}, Case{true, 32, 100, 230},
                      Case{false, 16, 16, 50},  // partial RoPE, a prompt shorter
                      Case{true, 16, 16, 50}),  // than the 64 first queries kept
    [](const auto& info) {
        return std::string(info.param.halves ? "Halves" : "Adjacent") +
               (info.param.ropeDim < 32 ? "PartialShortPrompt" : "");
    });

// Records each decode step's queries (after RoPE) and passes them on to the compressor.
struct Recorder : ForwardObserver {
    DecodeCompressor* rule = nullptr;
    std::vector<std::vector<at::Tensor>> steps;  // [layer] -> each step's [H, D] fp64
    void onQueries(int64_t layer, const at::Tensor& q, int64_t position) override {
        if (int64_t(steps.size()) <= layer) steps.resize(layer + 1);
        steps[layer].push_back(q.select(0, 0).to(at::kDouble).clone());
        rule->onQueries(layer, q, position);
    }
};

// Expected Attention's decode form against the definition in double: when due, a head above
// the budget keeps its first `sinks` rows and the B - sinks others of most expected attention
// x ||v||, the Gaussian being every query so far (the prompt's after the sinks and each decode
// step's), turned back from RoPE with this file's own angles, and RoPE averaged over the
// `future` positions from the next one. Checked by rule on what the cache held before the step.
TEST(ExpectedAttentionDecode, EveryQuerySoFarScoresTheRows) {
    for (const Case k : {Case{false, 32, 100, 90}, Case{true, 16, 100, 90}}) {
        LoadedModel loaded = loadModel("random:tiny:layers=2:seed=7", c10::Device(c10::kCPU), c10::kFloat);
        ModelConfig config = loaded.model->config();
        config.ropeStyle = k.halves ? RopeStyle::Halves : RopeStyle::Adjacent;
        config.ropeDim = k.ropeDim;
        LlamaModel model(config, loaded.model->weights(), c10::Device(c10::kCPU), c10::kFloat);
        std::vector<int32_t> prompt(k.promptLength);
        for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = int32_t((i * 37 + 11) % 500 + 1);
        std::vector<std::pair<int64_t, int64_t>> heads;
        for (int64_t l = 0; l < 2; ++l)
            for (int64_t h = 0; h < config.nHeads; ++h) heads.push_back({l, h});
        const auto capture = Capture::fromPrefill(model, prompt, {}, heads);
        const int64_t T = capture->promptLength(), D = capture->headDim(), H = capture->queryHeads(),
                      G = H / capture->kvHeads(), S = 4, F = 64, B = 40, every = 3;
        PressParams p;
        p.method = "expected";
        p.sinks = S;
        p.future = F;
        p.budget = 60;
        const Selection selection = Press::create("expected")->select(*capture, p);
        CompressedCache cache(*capture, selection, 20);
        p.budget = B;
        DecodeCompressor rule(p, every);
        rule.start(*capture, selection);
        Recorder recorder;
        recorder.rule = &rule;
        const Reference ref{config.ropeTheta, k.halves, k.ropeDim, S, F};
        // A query after RoPE at position t, turned back.
        auto preRope = [&](const at::Tensor& q, int64_t t) {
            const at::Tensor d = q.to(at::kDouble).contiguous();
            Vec x(d.data_ptr<double>(), d.data_ptr<double>() + D);
            for (int64_t i = 0; i < k.ropeDim / 2; ++i) {
                const auto [u, v] = pairOf(i, k.ropeDim, k.halves);
                const double a = double(t) * ref.freq(i), y0 = x[u], y1 = x[v];
                x[u] = y0 * std::cos(a) + y1 * std::sin(a);
                x[v] = y1 * std::cos(a) - y0 * std::sin(a);
            }
            return x;
        };
        int32_t token = Sampler::argmax(capture->lastLogits().data_ptr<float>(), capture->lastLogits().numel());
        int compressions = 0;
        for (int64_t step = 0; step < 12; ++step) {
            token = Sampler::argmax(model.decode(token, cache, &recorder).data_ptr<float>(), config.vocabSize);
            std::vector<std::vector<at::Tensor>> keys(2), values(2);
            for (int64_t l = 0; l < 2; ++l)
                for (int64_t c = 0; c < cache.heads(); ++c) {
                    keys[l].push_back(cache.keys(l)[c].to(at::kDouble).clone());
                    values[l].push_back(cache.values(l)[c].to(at::kDouble).clone());
                }
            compressions += rule.afterStep(cache);
            const bool due = (step + 1) % every == 0;
            const int64_t next = T + step + 1;  // the position the next token takes
            Mat R(D, Vec(D, 0.0));
            for (int64_t d = 0; d < D; ++d) R[d][d] = 1.0;
            for (int64_t i = 0; i < k.ropeDim / 2; ++i) {
                double cs = 0.0, sn = 0.0;
                for (int64_t t = next; t < next + F; ++t) {
                    cs += std::cos(double(t) * ref.freq(i)) / double(F);
                    sn += std::sin(double(t) * ref.freq(i)) / double(F);
                }
                const auto [u, v] = pairOf(i, k.ropeDim, k.halves);
                R[u][u] = cs, R[u][v] = -sn, R[v][u] = sn, R[v][v] = cs;
            }
            for (int64_t l = 0; l < 2; ++l) {
                for (int64_t c = 0; c < cache.heads(); ++c) {
                    const at::Tensor& kb = keys[l][c];
                    const int64_t n = kb.size(0);
                    const std::string where = std::string(k.halves ? "halves" : "adjacent") + " step " +
                                              std::to_string(step) + " layer " + std::to_string(l) + " head " +
                                              std::to_string(c);
                    if (!due || n <= B) {
                        ASSERT_EQ(cache.length(l, c), n) << where;
                        continue;
                    }
                    Vec score(n - S, 0.0);
                    for (int64_t g = 0; g < G; ++g) {
                        const int64_t h = c * G + g;
                        Mat pre;
                        const at::Tensor qp = capture->queries(l, h);  // [T, D] after RoPE
                        for (int64_t t = S; t < T; ++t) pre.push_back(preRope(qp[t], t));
                        for (size_t i = 0; i < recorder.steps[l].size(); ++i)
                            pre.push_back(preRope(recorder.steps[l][i][h], T + int64_t(i)));
                        const double m = double(pre.size());
                        Vec mu(D, 0.0);
                        for (const Vec& x : pre)
                            for (int64_t d = 0; d < D; ++d) mu[d] += x[d] / m;
                        Mat cov(D, Vec(D, 0.0));
                        for (const Vec& x : pre)
                            for (int64_t a = 0; a < D; ++a)
                                for (int64_t b = 0; b < D; ++b) cov[a][b] += (x[a] - mu[a]) * (x[b] - mu[b]) / m;
                        const Vec muR = times(R, mu);
                        Mat rc(D, Vec(D, 0.0)), sigma(D, Vec(D, 0.0));  // R cov, then R cov R^T
                        for (int64_t a = 0; a < D; ++a)
                            for (int64_t b = 0; b < D; ++b)
                                for (int64_t x = 0; x < D; ++x) rc[a][b] += R[a][x] * cov[x][b];
                        for (int64_t a = 0; a < D; ++a)
                            for (int64_t b = 0; b < D; ++b)
                                for (int64_t y = 0; y < D; ++y) sigma[a][b] += rc[a][y] * R[b][y];
                        Vec logit(n - S);
                        for (int64_t j = S; j < n; ++j) {
                            const at::Tensor row = kb[j].contiguous();
                            const Vec kv(row.data_ptr<double>(), row.data_ptr<double>() + D);
                            logit[j - S] = dot(muR, kv) / std::sqrt(double(D)) + dot(kv, times(sigma, kv)) / (2.0 * double(D));
                        }
                        const double top = *std::max_element(logit.begin(), logit.end());
                        double z = 0.0;
                        for (double& x : logit) z += (x = std::exp(x - top));
                        for (int64_t j = 0; j < n - S; ++j) score[j] += logit[j] / z / double(G);
                    }
                    for (int64_t j = S; j < n; ++j) score[j - S] *= values[l][c][j].norm().item<double>();
                    // Which rows stayed: each kept key is one of the rows before (random rows differ).
                    ASSERT_EQ(cache.length(l, c), B) << where;
                    const at::Tensor after = cache.keys(l)[c].to(at::kDouble);
                    std::vector<int32_t> kept;
                    int64_t from = 0;
                    for (int64_t r = 0; r < B; ++r) {
                        while (from < n && !at::equal(kb[from], after[r])) ++from;
                        ASSERT_LT(from, n) << where << ": kept row " << r << " is not a row the head held";
                        kept.push_back(int32_t(from++));
                    }
                    expectKeptByRule(kept, score, S, B, where);
                }
            }
        }
        EXPECT_EQ(compressions, 4);
    }
}

TEST(ExpectedAttentionCapture, TheQueryStatisticsAreCountedAndTensorsHaveNone) {
    LoadedModel loaded = loadModel("random:tiny:layers=2", c10::Device(c10::kCPU), c10::kFloat);
    std::vector<int32_t> prompt(100);
    std::iota(prompt.begin(), prompt.end(), 1);
    const auto capture = Capture::fromPrefill(*loaded.model, prompt);
    ASSERT_NE(capture->queryStatistics(), nullptr);
    // sum and outer products (fp64) and the first 64 queries (fp32) of 8 heads of 32 dimensions,
    // per layer
    EXPECT_EQ(capture->queryStatistics()->bytes(), 2 * 8 * ((32 + 32 * 32) * 8 + 64 * 32 * 4));
    const int64_t before = capture->bytes();
    PressParams p;
    p.method = "expected";
    p.budget = 30;
    Press::create("expected")->select(*capture, p);
    EXPECT_EQ(capture->bytes(), before + 2 * 4 * 100 * 4);  // the scores, kept for the next budget

    const auto tensors = Capture::fromTensors({at::randn({2, 40, 8})}, {at::randn({2, 40, 8})},
                                              {at::randn({2, 40, 8})});
    try {
        Press::create("expected")->select(*tensors, p);
        ADD_FAILURE() << "expected ran without query statistics";
    } catch (const Error& e) {
        EXPECT_STREQ(
            e.what(),
            "--method expected needs the statistics of every prompt query, which only a model "
            "prefill records (not tensors given with --inputs)");
    }
    // The same, named as the flag it came from, when Expected Attention is AdaKV's scorer.
    PressParams ada = p;
    ada.method = "adakv";
    ada.scorer = "expected";
    ada.window = 8;
    try {
        Press::create("adakv")->select(*tensors, ada);
        ADD_FAILURE() << "adakv scored by expected ran without query statistics";
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(),
                     "--scorer expected needs the statistics of every prompt query, which only a model "
                     "prefill records (not tensors given with --inputs)");
    }
    p.sinks = 65;
    try {
        Press::create("expected")->select(*capture, p);
        ADD_FAILURE() << "65 sinks were accepted";
    } catch (const Error& e) {
        EXPECT_EQ(std::string(e.what()).rfind(
                      "--sinks 65 is above the 64 first queries the capture keeps", 0),
                  0u)
            << e.what();
    }
    p.sinks = 4;
    p.future = 0;
    try {
        Press::create("expected")->select(*capture, p);
        ADD_FAILURE() << "--future 0 was accepted";
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "--future 0 must be at least 1");
    }
}

}  // namespace
}  // namespace kvlens
