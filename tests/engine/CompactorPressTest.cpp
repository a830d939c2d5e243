// LeverageScore, non-causal attention and Compactor against references written here in
// double precision from their definitions (Chari & Van Durme, 2025, as kvpress runs them):
//   leverage: per KV head, the keys before RoPE (turned back here with this file's own
//     angles) of the ranked span, centred over it, sketched X = K Phi (Phi: the press's
//     seeded Gaussian, an input here), x_i^T (X^T X + 1e-2 I)^-1 x_i clamped at 0, then
//     z-scored over all heads and positions of the layer (unbiased deviation);
//   non-causal: each query of the span against every key of its own chunk (no causal
//     mask, no 1/sqrt(D)), softmax, summed over the chunk's queries, a short last chunk's
//     missing rows adding (C - m)/C, averaged over the KV head's query heads, times the
//     value norm, average-pooled over 3 (zeros counted), z-scored over the layer;
//   compactor: blend x leverage + non-causal over [sinks, T - W), the ends always kept.
// The queries come from the capture's per-head queries of every position (after RoPE).
// GQA (8 query heads on 4 KV heads) and MHA (8 on 8) random models, adjacent and halves RoPE.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "core/Error.h"
#include "engine/compress/Capture.h"
#include "engine/compress/presses/CompactorScores.h"
#include "engine/compress/presses/Press.h"
#include "engine/model/LlamaModel.h"
#include "engine/model/ModelSpec.h"
#include "engine/model/ModelWeights.h"

namespace kvlens {
namespace {

using Vec = std::vector<double>;
using Mat = std::vector<Vec>;

struct Model {
    ModelConfig config;
    std::unique_ptr<LlamaModel> model;
};

Model makeModel(int64_t kvHeads, bool halves) {
    Model m;
    m.config = ModelSpec::parse("random:tiny:layers=2").randomConfig();  // 8 query heads, D = 32
    m.config.nKvHeads = kvHeads;
    m.config.ropeStyle = halves ? RopeStyle::Halves : RopeStyle::Adjacent;
    m.model = std::make_unique<LlamaModel>(
        m.config, ModelWeights::random(m.config, 5, c10::Device(c10::kCPU), c10::kFloat),
        c10::Device(c10::kCPU), c10::kFloat);
    return m;
}

std::shared_ptr<Capture> captureOf(Model& m, int64_t T) {
    std::vector<int32_t> prompt(T);
    for (int64_t i = 0; i < T; ++i) prompt[i] = int32_t((i * 53 + 7) % 500 + 1);
    std::vector<std::pair<int64_t, int64_t>> heads;
    for (int64_t l = 0; l < m.config.nLayers; ++l)
        for (int64_t h = 0; h < m.config.nHeads; ++h) heads.push_back({l, h});
    m.model->setPrefillChunk(100);  // the replay's chunks straddle the attention's
    return Capture::fromPrefill(*m.model, prompt, {}, heads);
}

Mat rows(const at::Tensor& t /*[a, b]*/) {
    const at::Tensor d = t.to(at::kDouble).contiguous();
    const double* p = d.data_ptr<double>();
    Mat out(d.size(0));
    for (int64_t i = 0; i < d.size(0); ++i) out[i].assign(p + i * d.size(1), p + (i + 1) * d.size(1));
    return out;
}

// Over every element of `m`: (x - mean) / max(unbiased deviation, 1e-6).
void zScore(Mat& m) {
    double sum = 0.0, n = 0.0;
    for (const Vec& r : m)
        for (double x : r) sum += x, n += 1.0;
    const double mean = sum / n;
    double sq = 0.0;
    for (const Vec& r : m)
        for (double x : r) sq += (x - mean) * (x - mean);
    const double sd = std::max(std::sqrt(sq / (n - 1.0)), 1e-6);
    for (Vec& r : m)
        for (double& x : r) x = (x - mean) / sd;
}

// Solves A x = b for symmetric positive definite A by Gaussian elimination with pivoting.
Vec solve(Mat a, Vec b) {
    const size_t n = b.size();
    for (size_t c = 0; c < n; ++c) {
        size_t pivot = c;
        for (size_t r = c + 1; r < n; ++r)
            if (std::abs(a[r][c]) > std::abs(a[pivot][c])) pivot = r;
        std::swap(a[c], a[pivot]);
        std::swap(b[c], b[pivot]);
        for (size_t r = c + 1; r < n; ++r) {
            const double f = a[r][c] / a[c][c];
            for (size_t k = c; k < n; ++k) a[r][k] -= f * a[c][k];
            b[r] -= f * b[c];
        }
    }
    Vec x(n);
    for (size_t i = n; i-- > 0;) {
        double s = b[i];
        for (size_t k = i + 1; k < n; ++k) s -= a[i][k] * x[k];
        x[i] = s / a[i][i];
    }
    return x;
}

struct Reference {
    const ModelConfig& config;
    const Capture& capture;

    // Leverage over [lo, hi) per KV head, z-scored over the layer.
    Mat leverage(int64_t layer, int64_t lo, int64_t hi, int64_t sketch, uint64_t seed) const {
        const int64_t KV = capture.kvHeads(), D = capture.headDim(), n = hi - lo, R = config.ropeDim;
        const Mat keysAll = [&] {
            Mat out;
            for (int64_t h = 0; h < KV; ++h)
                for (const Vec& r : rows(capture.keys(layer)[h].narrow(0, lo, n))) out.push_back(r);
            return out;
        }();
        Mat out(KV, Vec(n));
        for (int64_t h = 0; h < KV; ++h) {
            Mat x(n, Vec(D));
            for (int64_t t = 0; t < n; ++t) {
                x[t] = keysAll[h * n + t];
                for (int64_t i = 0; i < R / 2; ++i) {  // RoPE turned back
                    const int64_t u = config.ropeStyle == RopeStyle::Halves ? i : 2 * i;
                    const int64_t v = config.ropeStyle == RopeStyle::Halves ? i + R / 2 : 2 * i + 1;
                    const double a = double(lo + t) * std::pow(config.ropeTheta, -2.0 * double(i) / double(R));
                    const double y0 = x[t][u], y1 = x[t][v];
                    x[t][u] = y0 * std::cos(a) + y1 * std::sin(a);
                    x[t][v] = y1 * std::cos(a) - y0 * std::sin(a);
                }
            }
            for (int64_t d = 0; d < D; ++d) {
                double mean = 0.0;
                for (int64_t t = 0; t < n; ++t) mean += x[t][d] / double(n);
                for (int64_t t = 0; t < n; ++t) x[t][d] -= mean;
            }
            const Mat phi = rows(presses::leverageSketch(D, sketch, seed, layer, h));
            Mat y(n, Vec(sketch, 0.0));
            for (int64_t t = 0; t < n; ++t)
                for (int64_t j = 0; j < sketch; ++j)
                    for (int64_t d = 0; d < D; ++d) y[t][j] += x[t][d] * phi[d][j];
            Mat g(sketch, Vec(sketch, 0.0));
            for (int64_t a = 0; a < sketch; ++a) {
                g[a][a] = 1e-2;
                for (int64_t b = 0; b < sketch; ++b)
                    for (int64_t t = 0; t < n; ++t) g[a][b] += y[t][a] * y[t][b];
            }
            for (int64_t t = 0; t < n; ++t) {
                const Vec z = solve(g, y[t]);
                double s = 0.0;
                for (int64_t j = 0; j < sketch; ++j) s += y[t][j] * z[j];
                out[h][t] = std::max(s, 0.0);
            }
        }
        zScore(out);
        return out;
    }

    // Non-causal attention x ||v||, pooled, z-scored, over [lo, hi) per KV head.
    Mat nonCausal(int64_t layer, int64_t lo, int64_t hi, int64_t chunk) const {
        const int64_t H = capture.queryHeads(), KV = capture.kvHeads(), G = H / KV, n = hi - lo;
        Mat sums(KV, Vec(n, 0.0));
        for (int64_t h = 0; h < H; ++h) {
            const Mat q = rows(capture.queries(layer, h));
            const Mat k = rows(capture.keys(layer)[h / G].narrow(0, 0, capture.promptLength()));
            for (int64_t start = 0; start < n; start += chunk) {
                const int64_t end = std::min(start + chunk, n), m = end - start;
                for (int64_t i = start; i < end; ++i) {
                    Vec logit(m);
                    for (int64_t j = 0; j < m; ++j) {
                        double s = 0.0;
                        for (size_t d = 0; d < q[0].size(); ++d) s += q[lo + i][d] * k[lo + start + j][d];
                        logit[j] = s;
                    }
                    const double top = *std::max_element(logit.begin(), logit.end());
                    double z = 0.0;
                    for (double& x : logit) z += (x = std::exp(x - top));
                    for (int64_t j = 0; j < m; ++j) sums[h / G][start + j] += logit[j] / z / double(G);
                }
                for (int64_t j = 0; j < m; ++j) sums[h / G][start + j] += double(chunk - m) / double(chunk) / double(G);
            }
        }
        const Mat v = [&] {
            Mat out;
            for (int64_t h = 0; h < KV; ++h)
                for (const Vec& r : rows(capture.values(layer)[h].narrow(0, lo, n))) out.push_back(r);
            return out;
        }();
        Mat out(KV, Vec(n));
        for (int64_t h = 0; h < KV; ++h) {
            Vec w(n);
            for (int64_t t = 0; t < n; ++t) {
                double norm = 0.0;
                for (double x : v[h * n + t]) norm += x * x;
                w[t] = sums[h][t] * std::sqrt(norm);
            }
            for (int64_t t = 0; t < n; ++t)
                out[h][t] = ((t > 0 ? w[t - 1] : 0.0) + w[t] + (t + 1 < n ? w[t + 1] : 0.0)) / 3.0;
        }
        zScore(out);
        return out;
    }
};

// `kept` holds every position outside [lo, hi) and, inside it, budget - fixed positions that
// rank best by `ref` (indexed from lo), by rule: nothing kept scores below anything dropped
// by more than the float scoring's rounding.
void expectKeptByRule(const std::vector<int32_t>& kept, const Vec& ref, int64_t T, int64_t lo, int64_t hi,
                      int64_t budget, const std::string& where) {
    ASSERT_EQ(int64_t(kept.size()), budget) << where;
    std::vector<char> in(T, 0);
    for (int32_t p : kept) in[p] = 1;
    for (int64_t p = 0; p < T; ++p) {
        if (p < lo || p >= hi) {
            ASSERT_TRUE(in[p]) << where << ": position " << p << " must be kept";
        }
    }
    double worstKept = INFINITY, bestDropped = -INFINITY;
    for (int64_t p = lo; p < hi; ++p) {
        if (in[p]) {
            worstKept = std::min(worstKept, ref[p - lo]);
        } else {
            bestDropped = std::max(bestDropped, ref[p - lo]);
        }
    }
    EXPECT_GE(worstKept, bestDropped - 1e-3) << where;
}

struct Shape {
    int64_t kvHeads;
    bool halves;
};

class CompactorShapes : public ::testing::TestWithParam<Shape> {
protected:
    void SetUp() override {
        model_ = makeModel(GetParam().kvHeads, GetParam().halves);
        capture_ = captureOf(model_, kT);
    }
    static constexpr int64_t kT = 300;
    Model model_;
    std::shared_ptr<Capture> capture_;
};

TEST_P(CompactorShapes, LeverageKeepsTheDefinitionsBest) {
    const Reference ref{model_.config, *capture_};
    for (const auto& [sketch, seed] : std::vector<std::pair<int64_t, uint64_t>>{{48, 0}, {16, 9}}) {
        PressParams p;
        p.method = "leverage";
        p.sketch = sketch;
        p.seed = seed;
        const std::vector<Mat> wants = {ref.leverage(0, 0, kT, sketch, seed), ref.leverage(1, 0, kT, sketch, seed)};
        for (int64_t B : {1, 40, 150, 299}) {
            p.budget = B;
            const Selection s = Press::create("leverage")->select(*capture_, p);
            ASSERT_EQ(s.headsPerLayer(), capture_->kvHeads());
            for (int64_t l = 0; l < 2; ++l) {
                const Mat& want = wants[l];
                for (int64_t h = 0; h < capture_->kvHeads(); ++h)
                    expectKeptByRule(s.kept[l][h], want[h], kT, 0, kT, B,
                                     "sketch " + std::to_string(sketch) + " B " + std::to_string(B) + " layer " +
                                         std::to_string(l) + " head " + std::to_string(h));
            }
        }
    }
}

TEST_P(CompactorShapes, NonCausalAttentionKeepsTheDefinitionsBest) {
    const Reference ref{model_.config, *capture_};
    for (int64_t chunk : {64, 256, 7}) {
        PressParams p;
        p.method = "noncausal";
        p.attnChunk = chunk;
        p.budget = 90;
        EXPECT_TRUE(capture_->needsReplayFor(p));
        capture_->keepScoresFor(*model_.model, p);
        EXPECT_FALSE(capture_->needsReplayFor(p));  // once per (chunk, span)
        const std::vector<Mat> wants = {ref.nonCausal(0, 0, kT, chunk), ref.nonCausal(1, 0, kT, chunk)};
        for (int64_t B : {1, 90, 299}) {
            p.budget = B;
            const Selection s = Press::create("noncausal")->select(*capture_, p);
            for (int64_t l = 0; l < 2; ++l) {
                const Mat& want = wants[l];
                for (int64_t h = 0; h < capture_->kvHeads(); ++h)
                    expectKeptByRule(s.kept[l][h], want[h], kT, 0, kT, B,
                                     "chunk " + std::to_string(chunk) + " B " + std::to_string(B) + " layer " +
                                         std::to_string(l) + " head " + std::to_string(h));
            }
        }
    }
}

TEST_P(CompactorShapes, CompactorBlendsBetweenItsSinksAndWindow) {
    const Reference ref{model_.config, *capture_};
    struct Setting {
        int64_t sinks, window, chunk;
        double blend;  // < 0: 1 - B/T
    };
    for (const Setting& k : {Setting{4, 32, 256, -1.0}, Setting{8, 4, 50, -1.0}, Setting{0, 1, 64, 0.7}}) {
        PressParams p;
        p.method = "compactor";
        p.sinks = k.sinks;
        p.window = k.window;
        p.attnChunk = k.chunk;
        p.blend = k.blend;
        const int64_t lo = k.sinks, hi = kT - k.window;
        std::vector<Mat> levs, atts;
        for (int64_t l = 0; l < 2; ++l) {
            levs.push_back(ref.leverage(l, lo, hi, p.sketch, p.seed));
            atts.push_back(ref.nonCausal(l, lo, hi, k.chunk));
        }
        for (int64_t B : {k.sinks + k.window + 1, int64_t(100), int64_t(250)}) {
            p.budget = B;
            capture_->keepScoresFor(*model_.model, p);
            const Selection s = Press::create("compactor")->select(*capture_, p);
            const double blend = k.blend < 0 ? 1.0 - double(B) / double(kT) : k.blend;
            for (int64_t l = 0; l < 2; ++l) {
                const Mat &lev = levs[l], &att = atts[l];
                for (int64_t h = 0; h < capture_->kvHeads(); ++h) {
                    Vec want(hi - lo);
                    for (int64_t t = 0; t < hi - lo; ++t) want[t] = blend * lev[h][t] + att[h][t];
                    expectKeptByRule(s.kept[l][h], want, kT, lo, hi, B,
                                     "sinks " + std::to_string(k.sinks) + " W " + std::to_string(k.window) + " B " +
                                         std::to_string(B) + " layer " + std::to_string(l) + " head " +
                                         std::to_string(h));
                }
            }
        }
    }
}

// As a wrapper's scorer: per-layer with equal weights keeps the window and the best
// B - W of the scorer's scores over the whole prompt (the window's own positions scored too).
TEST_P(CompactorShapes, AScorerOfAWrapperRanksTheSameScores) {
    const Reference ref{model_.config, *capture_};
    PressParams p;
    p.method = "perlayer";
    p.scorer = "leverage";
    p.window = 16;
    p.budget = 80;
    const Selection s = Press::create("perlayer")->select(*capture_, p);
    for (int64_t l = 0; l < 2; ++l) {
        Mat want = ref.leverage(l, 0, kT, p.sketch, p.seed);
        for (int64_t h = 0; h < capture_->kvHeads(); ++h) {
            want[h].resize(kT - p.window);
            expectKeptByRule(s.kept[l][h], want[h], kT, 0, kT - p.window, p.budget,
                             "perlayer leverage layer " + std::to_string(l) + " head " + std::to_string(h));
        }
    }
    p.scorer = "noncausal";
    capture_->keepScoresFor(*model_.model, p);
    const Selection n = Press::create("perlayer")->select(*capture_, p);
    for (int64_t l = 0; l < 2; ++l) {
        Mat want = ref.nonCausal(l, 0, kT, p.attnChunk);
        for (int64_t h = 0; h < capture_->kvHeads(); ++h) {
            want[h].resize(kT - p.window);
            expectKeptByRule(n.kept[l][h], want[h], kT, 0, kT - p.window, p.budget,
                             "perlayer noncausal layer " + std::to_string(l) + " head " + std::to_string(h));
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Shapes, CompactorShapes,
                         ::testing::Values(Shape{4, false}, Shape{8, true}),
                         [](const auto& info) { return std::string(info.param.kvHeads == 8 ? "MhaHalves" : "GqaAdjacent"); });

void expectMessage(const std::function<void()>& f, const std::string& want) {
    try {
        f();
        ADD_FAILURE() << "no error; wanted: " << want;
    } catch (const Error& e) {
        EXPECT_EQ(std::string(e.what()), want);
    }
}

TEST(CompactorPress, WhatTheCaptureLacksIsNamedInOneLine) {
    const auto tensors = Capture::fromTensors({at::randn({2, 40, 8})}, {at::randn({2, 40, 8})}, {at::randn({2, 40, 8})});
    PressParams p;
    p.budget = 10;
    p.method = "leverage";
    expectMessage([&] { Press::create("leverage")->select(*tensors, p); },
                  "--method leverage needs the keys before RoPE, which only a model prefill can give back (not "
                  "tensors given with --inputs)");
    p.method = "noncausal";
    expectMessage([&] { Press::create("noncausal")->select(*tensors, p); },
                  "--method noncausal needs every prompt query, which only a model prefill records (not tensors "
                  "given with --inputs)");
    PressParams ada = p;
    ada.method = "adakv";
    ada.scorer = "compactor";
    ada.window = 4;
    expectMessage([&] { Press::create("adakv")->select(*tensors, ada); },
                  "--scorer compactor needs the keys before RoPE, which only a model prefill can give back (not "
                  "tensors given with --inputs)");

    Model m = makeModel(4, false);
    const auto capture = captureOf(m, 120);
    expectMessage([&] { Press::create("noncausal")->select(*capture, p); },
                  "--method noncausal: the capture's non-causal attention has not been computed "
                  "(Capture::keepScoresFor before selecting)");
    Model other = makeModel(8, false);
    expectMessage([&] { capture->keepScoresFor(*other.model, p); },
                  "the non-causal attention needs the model that made the capture (another one is loaded)");
    // A budget that keeps the prompt needs no replay; the replay costs L x KV x T x 4 bytes.
    PressParams all = p;
    all.budget = 120;
    EXPECT_FALSE(capture->needsReplayFor(all));
    const int64_t before = capture->bytes();
    capture->keepScoresFor(*m.model, p);
    EXPECT_EQ(capture->bytes(), before + 2 * 4 * 120 * 4);
}

TEST(CompactorPress, BadSettingsNameTheirFlag) {
    PressParams p;
    p.budget = 50;
    p.method = "leverage";
    p.sketch = 0;
    expectMessage([&] { p.validate(100, 64); }, "--sketch 0 must be at least 1 (the columns of the keys' Gaussian sketch)");
    p.method = "noncausal";
    p.sketch = 48;
    p.attnChunk = 0;
    expectMessage([&] { p.validate(100, 64); }, "--attn-chunk 0 must be at least 1");
    p.method = "compactor";
    p.attnChunk = 256;
    p.blend = -0.5;
    expectMessage([&] { p.validate(100, 64); }, "--blend -0.5 must be >= 0 (or auto: the compression ratio)");
    p.blend = -1.0;
    p.window = 40;
    p.sinks = 10;
    expectMessage([&] { p.validate(100, 64); },
                  "--budget 50 must exceed --window + --sinks 50 (the budget includes the window and the scorer's "
                  "sinks)");
    // The default blend is the share dropped.
    p.window = 32;
    EXPECT_DOUBLE_EQ(p.blendFor(200), 0.75);
    p.blend = 0.3;
    EXPECT_DOUBLE_EQ(p.blendFor(200), 0.3);
}

TEST(CompactorPress, TheSketchIsTheSameForASeedAndDiffersAcrossHeads) {
    const at::Tensor a = presses::leverageSketch(32, 48, 3, 1, 2), b = presses::leverageSketch(32, 48, 3, 1, 2);
    EXPECT_TRUE(at::equal(a, b));
    EXPECT_FALSE(at::equal(a, presses::leverageSketch(32, 48, 3, 1, 3)));
    EXPECT_FALSE(at::equal(a, presses::leverageSketch(32, 48, 4, 1, 2)));
    // N(0, 1) / sqrt(48): the entries' variance is 1/48 (1536 draws: within 15%).
    const double var = (a * a).mean().item<double>() * 48.0;
    EXPECT_NEAR(var, 1.0, 0.15);
    EXPECT_NEAR(a.mean().item<double>(), 0.0, 0.01);
}

}  // namespace
}  // namespace kvlens
