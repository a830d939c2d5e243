#include "engine/compress/presses/PressScores.h"

#include "kernels/CausalAttention.h"
#include "kernels/LayerSelection.h"
#include "engine/compress/presses/CompactorScores.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <iomanip>
#include <sstream>
#include <limits>
#include <string>

#include "core/Error.h"
#include "core/Methods.h"

namespace kvlens::presses {
namespace {

HeadScores toRows(const at::Tensor& scores /*[heads, n]*/) {
    const at::Tensor s = scores.to(at::kCPU, at::kFloat).contiguous();
    HeadScores out(s.size(0));
    const float* p = s.data_ptr<float>();
    for (int64_t h = 0; h < s.size(0); ++h)
        out[h].assign(p + h * s.size(1), p + (h + 1) * s.size(1));
    return out;
}

HeadScores grouped(const at::Tensor& perQueryHead /*[H, n] fp32*/, int64_t kvHeads, GqaMode mode) {
    return toRows(kernels::groupVotes(perQueryHead, kvHeads, mode == GqaMode::QueryHead));
}

// The fused kernel serves captures on a GPU when the build has its CUDA body;
// elsewhere the capture's cached votes make re-selection cheap.
bool fusedOnDevice(const Capture& capture) {
    return kernels::hasCudaBodies() && capture.keys(0).is_cuda();
}

}  // namespace

kernels::VoteSpec voteSpec(const PressParams& p) {
    kernels::VoteSpec spec;
    spec.window = p.window;
    spec.kernel = p.kernel;
    spec.pooling =
        p.pooling == Pooling::Max ? kernels::VotePooling::Max : kernels::VotePooling::Avg;
    spec.perQueryHead = p.gqa == GqaMode::QueryHead;
    return spec;
}

HeadScores windowVotes(const Capture& capture, int64_t layer, int64_t window, GqaMode mode) {
    return grouped(capture.votes(layer, window), capture.kvHeads(), mode);
}

HeadScores pooledVotes(const Capture& capture, int64_t layer, const PressParams& p) {
    if (fusedOnDevice(capture)) {
        kernels::VoteSpec spec = voteSpec(p);
        spec.slidingWindow = capture.slidingWindow(layer);
        spec.softcap = capture.attentionSoftcap();
        return toRows(kernels::layerScores(capture.windowQueries(layer), capture.keys(layer), spec));
    }
    HeadScores votes = windowVotes(capture, layer, p.window, p.gqa);
    for (auto& row : votes) row = pool1d(row, p.kernel, p.pooling);
    return votes;
}

std::vector<std::vector<int32_t>> voteSelection(const Capture& capture, int64_t layer,
                                                const PressParams& p, int64_t prefixBudget) {
    kernels::VoteSpec spec = voteSpec(p);
    spec.slidingWindow = capture.slidingWindow(layer);
    spec.softcap = capture.attentionSoftcap();
    const at::Tensor kept =
        fusedOnDevice(capture)
            ? kernels::layerSelection(capture.windowQueries(layer), capture.keys(layer), spec,
                                      prefixBudget)
            : kernels::selectFromVotes(kernels::groupVotes(capture.votes(layer, p.window),
                                                           capture.kvHeads(), spec.perQueryHead),
                                       spec, prefixBudget);
    std::vector<std::vector<int32_t>> rows(kept.size(0));
    const int32_t* k = kept.data_ptr<int32_t>();
    for (int64_t h = 0; h < kept.size(0); ++h)
        rows[h].assign(k + h * kept.size(1), k + (h + 1) * kept.size(1));
    return rows;
}

HeadScores finchPressScores(const Capture& capture, int64_t layer, int64_t window) {
    return grouped(capture.memoScores("finch-kvpress:" + std::to_string(window), layer, [&] {
        const int64_t T = capture.promptLength();
        const at::Tensor weights = at::arange(T - window, T, at::TensorOptions().dtype(at::kFloat)) / double(window);
        return kernels::windowVotes(capture.windowQueries(layer), capture.keys(layer), window, weights,
                                    capture.slidingWindow(layer), capture.attentionSoftcap());
    }), capture.kvHeads(), GqaMode::KvHead);
}

HeadScores accumulatedAttention(const Capture& capture, int64_t layer, int64_t window,
                                GqaMode mode) {
    const at::Tensor& s = capture.h2oScores(layer);
    return grouped(s.narrow(1, 0, capture.promptLength() - window).contiguous(), capture.kvHeads(),
                   mode);
}

at::Tensor negativeKeyNorms(const at::Tensor& keys) { return keys.to(at::kFloat).norm(2, {-1}).neg(); }

at::Tensor negativeAnchorCosines(const at::Tensor& keys) {
    const at::Tensor k = keys.to(at::kFloat);
    const at::Tensor unit = k / k.norm(2, {-1}, /*keepdim=*/true).clamp_min(1e-12);  // [..., n, D]
    const at::Tensor anchor = unit.mean({-2}, /*keepdim=*/true);                      // [..., 1, D]
    const at::Tensor anchorUnit = anchor / anchor.norm(2, {-1}, true).clamp_min(1e-12);
    return (unit * anchorUnit).sum({-1}).neg();                                      // [..., n]
}

// The key-based and last-query scores depend on the capture alone, not on the budget:
// each layer's is computed once and kept in the capture (Capture::memoScores), so a new
// budget costs only the top-k.
HeadScores keyNormScores(const Capture& capture, int64_t layer) {
    return toRows(capture.memoScores("knorm", layer, [&] {
        return negativeKeyNorms(capture.keys(layer).narrow(1, 0, capture.promptLength()));  // [KV, T]
    }));
}

HeadScores keyDiffScores(const Capture& capture, int64_t layer) {
    return toRows(capture.memoScores("keydiff", layer, [&] {
        return negativeAnchorCosines(capture.keys(layer).narrow(1, 0, capture.promptLength()));  // [KV, T]
    }));
}

std::vector<float> lastQueryAttention(const Capture& capture, int64_t layer) {
    return toRows(capture.memoScores("tova", layer, [&] {
        const int64_t T = capture.promptLength(), H = capture.queryHeads(), KV = capture.kvHeads();
        const at::Tensor& q = capture.windowQueries(layer);  // [H, Wc, D] fp32, the last row is T-1
        const at::Tensor k = capture.keys(layer).narrow(1, 0, T).to(at::kFloat);  // [KV, T, D]
        // Query head h reads KV head h / (H / KV).
        const at::Tensor last = q.select(1, q.size(1) - 1).to(k.device()).view({KV, H / KV, capture.headDim()});
        at::Tensor logits = at::matmul(last, k.transpose(1, 2)) / std::sqrt(double(capture.headDim()));
        kernels::softcapLogits(logits, capture.attentionSoftcap());
        // A local layer's last query sees only its window.
        const at::Tensor hidden = kernels::attentionMask(T - 1, 1, T, capture.slidingWindow(layer), k.device());
        logits.masked_fill_(hidden, -std::numeric_limits<float>::infinity());
        return at::softmax(logits, -1).view({H, T}).mean({0}, /*keepdim=*/true);  // [1, T]
    }))[0];
}

HeadScores expectedAttentionScores(const Capture& capture, int64_t layer, const PressParams& p) {
    const QueryStatistics* stats = capture.queryStatistics();
    if (!stats) {
        throw Error(std::string(p.takesScorer() ? "--scorer expected" : "--method expected") +
                    " needs the statistics of every prompt query, which only a model prefill "
                    "records (not tensors given with --inputs)");
    }
    const std::string key = "expected:" + std::to_string(p.sinks) + ":" + std::to_string(p.future);
    at::Tensor scores = capture.memoScores(key, layer, [&] {
        const int64_t T = capture.promptLength(), S = p.sinks, n = T - S, D = capture.headDim();
        const int64_t KV = capture.kvHeads(), H = capture.queryHeads(), G = H / KV;
        auto [mean, cov] = stats->meanAndCovariance(layer, S);         // [H, D], [H, D, D] fp64
        const at::Tensor R = stats->averageRotation(T, p.future);      // [D, D]
        const at::Tensor mu = at::matmul(mean, R.t());                 // rows R mu
        const at::Tensor sigma = at::matmul(at::matmul(R, cov), R.t());  // R S R^T per head
        const at::Device dev = capture.keys(layer).device();
        const at::Tensor k = capture.keys(layer).narrow(1, S, n).to(at::kFloat);    // [KV, n, D]
        const at::Tensor v = capture.values(layer).narrow(1, S, n).to(at::kFloat);  // [KV, n, D]
        // Query head h reads KV head h / G: the heads of a group share their keys, taken
        // one group member at a time so no [H, n, D] copy of the keys is made.
        const at::Tensor muF = mu.to(dev, at::kFloat).view({KV, G, D});
        const at::Tensor sigmaF = sigma.to(dev, at::kFloat).view({KV, G, D, D});
        at::Tensor a = at::zeros({KV, n}, k.options());
        for (int64_t g = 0; g < G; ++g) {
            const at::Tensor linear = at::bmm(k, muF.select(1, g).unsqueeze(2)).squeeze(2) / std::sqrt(double(D));
            const at::Tensor quad = (at::bmm(k, sigmaF.select(1, g)) * k).sum(-1) / (2.0 * double(D));  // [KV, n]
            a.add_(at::softmax(linear + quad, -1));
        }
        const at::Tensor scored = a.div_(double(G)) * v.norm(2, {-1});
        return at::cat({at::full({KV, S}, std::numeric_limits<float>::quiet_NaN(), scored.options()), scored}, 1);
    });
    return toRows(scores);
}

namespace {

// LagKV's per-token score of states x [KV, P + 1, L, D] fp32: partitions 0 .. P-1, each
// against the next one's per-channel range -> [KV, P * L].
at::Tensor lagStateScores(const at::Tensor& x) {
    const int64_t P = x.size(1) - 1;
    const at::Tensor cur = x.narrow(1, 0, P), ref = x.narrow(1, 1, P);
    const at::Tensor lo = std::get<0>(ref.min(2, /*keepdim=*/true)), hi = std::get<0>(ref.max(2, true));
    // A channel constant over the reference has no range: it adds nothing to the spread.
    const at::Tensor range = at::where(hi > lo, hi - lo, at::full_like(hi, std::numeric_limits<float>::infinity()));
    const at::Tensor spread = ((cur - lo) / range).std(-1, /*unbiased=*/true);  // [KV, P, L]
    return at::softmax(spread, -1).flatten(1);
}

}  // namespace

HeadScores lagKvScores(const Capture& capture, int64_t layer, const PressParams& p) {
    const std::string key = "lagkv:" + std::to_string(p.sinks) + ":" + std::to_string(p.lag);
    return toRows(capture.memoScores(key, layer, [&] {
        const int64_t T = capture.promptLength();
        return lagLocalScores(capture.keys(layer).narrow(1, 0, T), capture.values(layer).narrow(1, 0, T), p);
    }));
}

HeadScores lagKvRanks(const Capture& capture, int64_t layer, const PressParams& p) {
    const int64_t T = capture.promptLength();
    const float nan = std::numeric_limits<float>::quiet_NaN();
    if (T < p.sinks + 2 * p.lag) {
        std::vector<float> ramp(static_cast<size_t>(T), nan);
        for (int64_t t = std::min(p.sinks, T); t < T; ++t)
            ramp[t] = static_cast<float>(double(t - p.sinks) / double(T - p.sinks));
        return HeadScores(static_cast<size_t>(capture.kvHeads()), ramp);
    }
    HeadScores rows = lagKvScores(capture, layer, p);
    std::vector<int32_t> order(static_cast<size_t>(p.lag));
    for (auto& row : rows) {
        for (int64_t from = p.sinks; from + p.lag <= T && !std::isnan(row[from]); from += p.lag) {
            for (int64_t i = 0; i < p.lag; ++i) order[i] = int32_t(i);
            std::stable_sort(order.begin(), order.end(),
                             [&](int32_t a, int32_t b) { return row[from + a] < row[from + b]; });
            for (int64_t r = 0; r < p.lag; ++r) row[from + order[r]] = static_cast<float>(double(r) / double(p.lag));
        }
    }
    return rows;
}

at::Tensor lagLocalScores(const at::Tensor& keys, const at::Tensor& values, const PressParams& p) {
    const int64_t KV = keys.size(0), n = keys.size(1), D = keys.size(2), L = p.lag;
    const int64_t scored = std::max<int64_t>(0, (p.lagTailStart(n) - p.sinks) / L);
    at::Tensor out = at::full({KV, n}, std::numeric_limits<float>::quiet_NaN(), keys.options().dtype(at::kFloat));
    if (scored == 0) return out;
    const int64_t span = (scored + 1) * L;
    auto states = [&](const at::Tensor& t) {
        return t.narrow(1, p.sinks, span).to(at::kFloat).reshape({KV, scored + 1, L, D});
    };
    out.narrow(1, p.sinks, scored * L).copy_(lagStateScores(states(keys)) + lagStateScores(states(values)));
    return out;
}

at::Tensor curLocalScores(const at::Tensor& keys, const at::Tensor& values) {
    const int64_t KV = keys.size(0), n = keys.size(1), w = kCurWindow;
    const int64_t pad = (w - n % w) % w;
    // Each window's share of its squared norms (a window of zeros shares nothing).
    auto local = [&](const at::Tensor& states) {
        const at::Tensor sq = states.to(at::kFloat).pow(2).sum(-1);  // [KV, n]
        const at::Tensor groups = at::constant_pad_nd(sq, {0, pad}).view({KV, -1, w});
        const at::Tensor sums = groups.sum(-1, /*keepdim=*/true);
        return at::where(sums > 0, groups / sums.clamp_min(1e-30), at::zeros_like(groups))
            .view({KV, -1})
            .narrow(1, 0, n);
    };
    // kvpress's CURPress divides each head's scores by their sum over the prompt: a wrapper
    // comparing heads (AdaKV, CriticalAdaKV, ChunkKV summed over heads) then ranks shares.
    const at::Tensor product = local(keys) * local(values);
    const at::Tensor total = product.sum(-1, /*keepdim=*/true);
    return at::where(total > 0, product / total.clamp_min(1e-30), product);
}

HeadScores curScores(const Capture& capture, int64_t layer, const PressParams& p) {
    HeadScores rows = toRows(capture.memoScores("cur", layer, [&] {
        const int64_t T = capture.promptLength();
        return curLocalScores(capture.keys(layer).narrow(1, 0, T), capture.values(layer).narrow(1, 0, T));
    }));
    const size_t sinks = static_cast<size_t>(std::clamp<int64_t>(p.sinks, 0, capture.promptLength()));
    for (auto& head : rows)
        std::fill(head.begin(), head.begin() + sinks, std::numeric_limits<float>::quiet_NaN());
    return rows;
}

HeadScores reconstructionScores(const Capture& capture, int64_t layer, const PressParams& p) {
    const at::Tensor scores = capture.reconstructionScores(layer, p.repeatChunk, p.sinks);
    if (!scores.defined()) {
        throw Error(capture.prompt().empty()
                        ? "KVzip needs the model to reconstruct the prompt, which tensors given with --inputs do not have"
                        : "KVzip: the prompt's reconstruction has not been run (Capture::keepScoresFor before selecting)");
    }
    HeadScores rows = toRows(scores);
    const size_t sinks = static_cast<size_t>(std::clamp<int64_t>(p.sinks, 0, capture.promptLength()));
    for (auto& head : rows) std::fill(head.begin(), head.begin() + sinks, std::numeric_limits<float>::quiet_NaN());
    return rows;
}

namespace {

// Per layer, flat: the window's attention mean over its rows per query head and prefix
// column ([H, T - W]), their variance (the same shape), then the layer's entropy and
// summed variance, each as two floats (value and remainder: the memo holds fp32).
at::Tensor cakeStatistics(const Capture& capture, int64_t layer, int64_t W) {
    return capture.memoScores("cake:" + std::to_string(W), layer, [&] {
        const int64_t T = capture.promptLength(), H = capture.queryHeads(), KV = capture.kvHeads();
        const int64_t D = capture.headDim(), prefix = T - W;
        const at::Tensor& wq = capture.windowQueries(layer);  // [H, Wc, D], the last row is T-1
        const at::Tensor k = capture.keys(layer).narrow(1, 0, T).to(at::kFloat);  // [KV, T, D]
        const at::Tensor q = wq.narrow(1, wq.size(1) - W, W).to(k.device()).reshape({KV, (H / KV) * W, D});
        at::Tensor logits = (at::matmul(q, k.transpose(1, 2)) / std::sqrt(double(D))).view({H, W, T});
        kernels::softcapLogits(logits, capture.attentionSoftcap());
        // Row i is position T - W + i: it sees keys up to itself (inside a local layer's window).
        logits.masked_fill_(kernels::attentionMask(prefix, W, T, capture.slidingWindow(layer), logits.device()).unsqueeze(0),
                            -std::numeric_limits<float>::infinity());
        const at::Tensor a = at::softmax(logits, -1).narrow(2, 0, prefix);  // [H, W, prefix]
        const at::Tensor var = a.var(1, /*unbiased=*/true);
        // Each term in fp32, the sums in fp64.
        const double entropy = -at::sum(a * at::log(a + 1e-10f), at::kDouble).item<double>();
        const double variance = at::sum(var, at::kDouble).item<double>();
        const float e0 = float(entropy), v0 = float(variance);
        const at::Tensor tail = at::tensor({e0, float(entropy - double(e0)), v0, float(variance - double(v0))});
        return at::cat({a.mean(1).flatten(), var.flatten(), tail.to(a.device())});
    });
}

}  // namespace

CakeDispersion cakeDispersion(const Capture& capture, int64_t layer, const PressParams& p) {
    const at::Tensor stats = cakeStatistics(capture, layer, p.window);
    const at::Tensor tail = stats.narrow(0, stats.size(0) - 4, 4).cpu().to(at::kDouble).contiguous();
    const double* t = tail.data_ptr<double>();
    return {t[0] + t[1], t[2] + t[3]};
}

HeadScores cakeIndicator(const Capture& capture, int64_t layer, const PressParams& p) {
    std::ostringstream key;
    key << "cake-indicator:" << p.window << ":" << std::setprecision(17) << p.gamma;
    // Fetched before: the memo's lock is held while it computes.
    const at::Tensor stats = cakeStatistics(capture, layer, p.window);
    return toRows(capture.memoScores(key.str(), layer, [&] {
        const int64_t H = capture.queryHeads(), KV = capture.kvHeads(), T = capture.promptLength();
        const int64_t prefix = T - p.window;
        const at::Tensor mean = stats.narrow(0, 0, H * prefix).view({H, prefix});
        const at::Tensor var = stats.narrow(0, H * prefix, H * prefix).view({H, prefix});
        // Each query head's row pooled on its own (zeros padding counted), then the group's mean.
        const at::Tensor pooled = at::avg_pool1d((mean + p.gamma * var).unsqueeze(0), {kCakeKernel}, {1},
                                                 {kCakeKernel / 2}, /*ceil_mode=*/false, /*count_include_pad=*/true)
                                      .squeeze(0);
        at::Tensor out = at::full({KV, T}, std::numeric_limits<float>::quiet_NaN(), pooled.options());
        out.narrow(1, 0, prefix).copy_(pooled.view({KV, H / KV, prefix}).mean(1));
        return out;
    }));
}

std::vector<int64_t> cakeLayerBudgets(const std::vector<double>& pref, int64_t total, int64_t available) {
    const int64_t L = static_cast<int64_t>(pref.size());
    double sum = 0.0;
    for (double v : pref) sum += v;
    std::vector<int64_t> b(L);
    for (int64_t l = 0; l < L; ++l) {
        const double share = sum > 0.0 && std::isfinite(sum) ? pref[l] / sum : 1.0 / double(L);
        b[l] = static_cast<int64_t>(share * double(total));  // truncated, as int() does
    }
    // Spreads `amount` over the layers `eligible` picks: the same to each, the remainder
    // one by one from the first of them.
    auto spread = [&](int64_t amount, int64_t sign, const std::function<bool(int64_t)>& eligible) {
        std::vector<int64_t> picked;
        for (int64_t l = 0; l < L; ++l)
            if (eligible(b[l])) picked.push_back(l);
        if (picked.empty()) return;
        const int64_t each = amount / int64_t(picked.size()), rest = amount % int64_t(picked.size());
        for (size_t i = 0; i < picked.size(); ++i) b[picked[i]] += sign * (each + (int64_t(i) < rest ? 1 : 0));
    };
    int64_t excess = 0;
    for (auto& v : b) {
        excess += std::max<int64_t>(v - available, 0);
        v = std::min(v, available);
    }
    if (excess > 0) spread(excess, 1, [&](int64_t v) { return v < available; });
    int64_t current = 0;
    for (int64_t v : b) current += v;
    const int64_t diff = total - current;
    if (diff > 0) spread(diff, 1, [&](int64_t v) { return v < available; });
    if (diff < 0) spread(-diff, -1, [](int64_t v) { return v > 1; });
    return b;
}

HeadScores windowRankedVotes(const Capture& capture, int64_t layer, const PressParams& p) {
    const int64_t T = capture.promptLength();
    if (p.window >= T || p.window > capture.windowCapacity()) return {};
    HeadScores rows = pooledVotes(capture, layer, p);
    for (auto& row : rows) row.resize(static_cast<size_t>(T), std::numeric_limits<float>::quiet_NaN());
    return rows;
}

HeadScores scorerScoresOrNone(const Capture& capture, int64_t layer, const PressParams& p) {
    const MethodId id = methods::named(p.takesScorer() ? p.scorerInEffect() : p.method).id;
    const int64_t T = capture.promptLength();
    const NeedSet needs = methods::info(id).needs;
    if ((needs.has(Need::QueryStats) || needs.has(Need::PreRopeKeys)) && !capture.queryStatistics()) return {};
    if (id == MethodId::H2o && !capture.hasH2oScores()) return {};
    if (id == MethodId::Kvzip &&
        (p.sinks >= T || !capture.reconstructionScores(0, p.repeatChunk, p.sinks).defined()))
        return {};
    if (id == MethodId::Expected && p.sinks >= T) return {};
    const auto [lo, hi] = p.rankedSpan(T);
    if ((id == MethodId::Leverage || id == MethodId::NonCausal || id == MethodId::Compactor) && lo >= hi) return {};
    if ((id == MethodId::NonCausal || id == MethodId::Compactor) &&
        !capture.nonCausalAttention(0, p.attnChunk, lo, hi).defined())
        return {};
    if (p.takesScorer()) {
        // A wrapper ranks between its window (or LagKV's tail) and its scorer's sinks.
        const int64_t fixed = p.keptTail(T) + (p.usesSinks() ? p.sinks : 0);
        if (p.keepsOwn(Keep::Window) && (fixed >= T || p.window > capture.windowCapacity())) return {};
        if (id == MethodId::SnapKv && (p.window >= T || p.window > capture.windowCapacity())) return {};
        return scorerScores(capture, layer, p);
    }
    switch (id) {
        case MethodId::Leverage: return leverageScores(capture, layer, p);
        case MethodId::NonCausal: return nonCausalScores(capture, layer, p);
        case MethodId::Compactor: return compactorScores(capture, layer, p);
        case MethodId::Kvzip: return reconstructionScores(capture, layer, p);
        default: return {};
    }
}

HeadScores scorerScores(const Capture& capture, int64_t layer, const PressParams& p) {
    const std::string scorer = p.scorerInEffect();
    const int64_t T = capture.promptLength();
    const float nan = std::numeric_limits<float>::quiet_NaN();
    HeadScores rows;
    switch (methods::named(scorer, "--scorer").id) {
        case MethodId::SnapKv:
            rows = pooledVotes(capture, layer, p);
            for (auto& row : rows) row.resize(static_cast<size_t>(T), nan);
            return rows;
        case MethodId::Cake: return cakeIndicator(capture, layer, p);
        case MethodId::H2o:
            // H2O's accumulated attention over the prefix, per KV head (as --method h2o ranks it).
            if (!capture.hasH2oScores()) {
                throw Error(capture.prompt().empty()
                                ? "--scorer h2o needs the attention of every prompt query, which only a model prefill "
                                  "records (not tensors given with --inputs)"
                                : "--scorer h2o: the capture's accumulated attention has not been computed "
                                  "(Capture::keepScoresFor before selecting)");
            }
            rows = accumulatedAttention(capture, layer, p.window, GqaMode::KvHead);
            for (auto& row : rows) row.resize(static_cast<size_t>(T), nan);
            return rows;
        case MethodId::Tova:
            rows = HeadScores(static_cast<size_t>(capture.kvHeads()), lastQueryAttention(capture, layer));
            // kvpress's TOVAPress scores the last position above every other.
            if (p.convention == Convention::Kvpress)
                for (auto& row : rows) row.back() = nan;
            break;
        case MethodId::Knorm: rows = keyNormScores(capture, layer); break;
        case MethodId::KeyDiff: rows = keyDiffScores(capture, layer); break;
        case MethodId::Expected: rows = expectedAttentionScores(capture, layer, p); break;
        case MethodId::Cur: rows = curScores(capture, layer, p); break;
        case MethodId::Leverage: rows = leverageScores(capture, layer, p); break;
        case MethodId::NonCausal: rows = nonCausalScores(capture, layer, p); break;
        case MethodId::Compactor: rows = compactorScores(capture, layer, p); break;
        case MethodId::Kvzip: rows = reconstructionScores(capture, layer, p); break;
        case MethodId::LagKv:  // NaN: its sinks and its tail
            rows = p.convention == Convention::Kvpress ? lagKvRanks(capture, layer, p) : lagKvScores(capture, layer, p);
            break;
        default: throw Error("--scorer '" + scorer + "' has no scores here");
    }
    // The wrappers keep the window beside their scorer; kvpress's ChunkKV only what the scorer
    // itself keeps.
    if (p.keepsOwn(Keep::Window))
        for (auto& row : rows) std::fill(row.end() - p.window, row.end(), nan);
    return rows;
}

void keepLayerShares(const Capture& capture, const PressParams& p, const std::vector<double>& weights,
                     int64_t budget, Selection& s) {
    const int64_t L = capture.layers(), T = capture.promptLength(), W = p.keptTail(T);
    const int64_t sinks = p.usesSinks() ? std::min(p.sinks, T - W) : 0;
    const int64_t available = T - W - sinks;
    const std::vector<int64_t> budgets = cakeLayerBudgets(weights, (budget - W - sinks) * L, available);
    for (int64_t l = 0; l < L; ++l) {
        const int64_t b = std::clamp<int64_t>(budgets[l], 0, available);
        const HeadScores scores = scorerScores(capture, l, p);  // NaN: always kept
        for (size_t h = 0; h < scores.size(); ++h) s.kept[l][h] = keptWithNaNs(scores[h], b);
    }
}

int64_t alwaysKept(const std::vector<float>& scores) {
    return std::count_if(scores.begin(), scores.end(), [](float v) { return std::isnan(v); });
}

std::vector<int32_t> keptWithNaNs(const std::vector<float>& scores, int64_t k) {
    std::vector<float> ranked;
    std::vector<int32_t> where, kept;
    for (size_t j = 0; j < scores.size(); ++j) {
        if (std::isnan(scores[j])) {
            kept.push_back(int32_t(j));
        } else {
            ranked.push_back(scores[j]);
            where.push_back(int32_t(j));
        }
    }
    for (int32_t i : topPositions(ranked, std::min<int64_t>(k, int64_t(ranked.size())))) kept.push_back(where[i]);
    std::sort(kept.begin(), kept.end());
    return kept;
}

std::vector<float> chunkSums(const std::vector<float>& scores, int64_t chunk) {
    const int64_t n = static_cast<int64_t>(scores.size());
    std::vector<float> sums((n + chunk - 1) / chunk, 0.0f);
    for (int64_t i = 0; i < n; ++i) sums[i / chunk] += scores[i];
    return sums;
}

std::vector<float> pool1d(const std::vector<float>& scores, int64_t kernel, Pooling pooling) {
    return kernels::pool1d(
        scores.data(), static_cast<int64_t>(scores.size()), kernel,
        pooling == Pooling::Max ? kernels::VotePooling::Max : kernels::VotePooling::Avg);
}

std::vector<int32_t> topPositions(const std::vector<float>& scores, int64_t k) {
    return kernels::topPositions(scores.data(), static_cast<int64_t>(scores.size()), k);
}

std::vector<int32_t> topPositions(const std::vector<double>& scores, int64_t k) {
    return kernels::topPositions(scores.data(), static_cast<int64_t>(scores.size()), k);
}

std::vector<int32_t> withWindow(std::vector<int32_t> prefix, int64_t promptLength, int64_t window) {
    prefix.reserve(prefix.size() + window);
    for (int64_t p = promptLength - window; p < promptLength; ++p)
        prefix.push_back(static_cast<int32_t>(p));
    return prefix;
}

}  // namespace kvlens::presses
