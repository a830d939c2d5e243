#include "engine/compress/presses/CompactorScores.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>

#include "core/Error.h"

namespace kvlens::presses {
namespace {

// "--method leverage" or "--scorer compactor": the flag that asked for these scores.
std::string asker(const PressParams& p) {
    return p.takesScorer() ? "--scorer " + p.scorerInEffect() : "--method " + p.method;
}

// z-score over every element, as kvpress's (scores - mean) / std.clamp_min(1e-6).
at::Tensor zScored(const at::Tensor& s) { return (s - s.mean()) / s.std().clamp_min(1e-6); }

// [KV, n] scores over the span -> rows over all T positions, NaN outside the span.
HeadScores spanRows(const at::Tensor& scores, int64_t T, int64_t lo) {
    const at::Tensor s = scores.to(at::kCPU, at::kFloat).contiguous();
    const int64_t n = s.size(1);
    HeadScores rows(s.size(0), std::vector<float>(T, std::numeric_limits<float>::quiet_NaN()));
    const float* p = s.data_ptr<float>();
    for (int64_t h = 0; h < s.size(0); ++h) std::copy(p + h * n, p + (h + 1) * n, rows[h].begin() + lo);
    return rows;
}

}  // namespace

at::Tensor leverageSketch(int64_t rows, int64_t cols, uint64_t seed, int64_t layer, int64_t head) {
    std::mt19937_64 rng(seed * 0x9E3779B97F4A7C15ull + uint64_t(layer) * 0xBF58476D1CE4E5B9ull +
                        uint64_t(head) * 0x94D049BB133111EBull + 1);
    // Uniform in (0, 1): the top 53 bits, never 0.
    auto uniform = [&] { return (double(rng() >> 11) + 0.5) * (1.0 / 9007199254740992.0); };
    at::Tensor phi = at::empty({rows, cols}, at::kDouble);
    double* p = phi.data_ptr<double>();
    const double scale = 1.0 / std::sqrt(double(cols));
    for (int64_t i = 0; i < rows * cols; i += 2) {
        const double r = std::sqrt(-2.0 * std::log(uniform())), t = 2.0 * M_PI * uniform();
        p[i] = r * std::cos(t) * scale;
        if (i + 1 < rows * cols) p[i + 1] = r * std::sin(t) * scale;
    }
    return phi;
}

HeadScores leverageScores(const Capture& capture, int64_t layer, const PressParams& p) {
    const QueryStatistics* stats = capture.queryStatistics();
    if (!stats) {
        throw Error(asker(p) + " needs the keys before RoPE, which only a model prefill can give back "
                               "(not tensors given with --inputs)");
    }
    const int64_t T = capture.promptLength();
    const auto [lo, hi] = p.rankedSpan(T);
    const std::string key = "leverage:" + std::to_string(p.sketch) + ":" + std::to_string(p.seed) + ":" +
                            std::to_string(lo) + ":" + std::to_string(hi);
    const at::Tensor z = capture.memoScores(key, layer, [&] {
        const int64_t n = hi - lo, KV = capture.kvHeads(), D = capture.headDim();
        const at::Tensor post = capture.keys(layer).narrow(1, lo, n).permute({1, 0, 2});  // [n, KV, D]
        const at::Tensor k = stats->rotatedBack(post, lo).permute({1, 0, 2}).to(at::kCPU, at::kDouble);
        const at::Tensor x = k - k.mean(1, /*keepdim=*/true);  // [KV, n, D]
        at::Tensor out = at::empty({KV, n}, x.options());
        for (int64_t h = 0; h < KV; ++h) {
            const at::Tensor y = at::matmul(x[h], leverageSketch(D, p.sketch, p.seed, layer, h));  // [n, k]
            at::Tensor g = at::matmul(y.t(), y);
            g = 0.5 * (g + g.t());
            const at::Tensor eye = at::eye(p.sketch, g.options());
            at::Tensor factor;
            double lambda = 1e-2;
            for (int tries = 0; tries < 5; ++tries, lambda *= 10.0) {
                auto [f, info] = at::linalg_cholesky_ex(g + lambda * eye);
                if (info.item<int64_t>() == 0) {
                    factor = f;
                    break;
                }
            }
            if (!factor.defined())
                throw Error("LeverageScore: the sketched keys of layer " + std::to_string(layer) + " KV head " +
                            std::to_string(h) + " have no Cholesky factor even with jitter 1e2");
            const at::Tensor solved = at::cholesky_solve(y.t(), factor, /*upper=*/false);  // [k, n]
            out[h].copy_((y * solved.t()).sum(1).clamp_min(0.0));
        }
        return zScored(out);
    });
    return spanRows(z, T, lo);
}

HeadScores nonCausalScores(const Capture& capture, int64_t layer, const PressParams& p) {
    const int64_t T = capture.promptLength();
    const auto [lo, hi] = p.rankedSpan(T);
    const at::Tensor attention = capture.nonCausalAttention(layer, p.attnChunk, lo, hi);  // outside memoScores' lock
    if (!attention.defined()) {
        throw Error(capture.prompt().empty()
                        ? asker(p) + " needs every prompt query, which only a model prefill records "
                                     "(not tensors given with --inputs)"
                        : asker(p) + ": the capture's non-causal attention has not been computed "
                                     "(Capture::keepScoresFor before selecting)");
    }
    const std::string key = "noncausal-scores:" + std::to_string(p.attnChunk) + ":" + std::to_string(lo) +
                            ":" + std::to_string(hi);
    const at::Tensor z = capture.memoScores(key, layer, [&] {
        const at::Tensor v = capture.values(layer).narrow(1, lo, hi - lo).to(at::kFloat).norm(2, {-1});  // [KV, n]
        const at::Tensor weighted = (attention.to(v.device()) * v).unsqueeze(0);                          // [1, KV, n]
        return zScored(at::avg_pool1d(weighted, {3}, {1}, {1}, false, true).squeeze(0));
    });
    return spanRows(z, T, lo);
}

HeadScores compactorScores(const Capture& capture, int64_t layer, const PressParams& p) {
    HeadScores rows = leverageScores(capture, layer, p);
    const HeadScores attention = nonCausalScores(capture, layer, p);
    const float blend = float(p.blendFor(capture.promptLength()));
    for (size_t h = 0; h < rows.size(); ++h)
        for (size_t j = 0; j < rows[h].size(); ++j) rows[h][j] = blend * rows[h][j] + attention[h][j];
    return rows;
}

}  // namespace kvlens::presses
