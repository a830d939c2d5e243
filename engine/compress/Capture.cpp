#include "engine/compress/Capture.h"

#include <c10/core/InferenceMode.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

#include "core/Error.h"
#include "engine/compress/ContextReconstruction.h"
#include "engine/compress/FinchPrefill.h"
#include "engine/model/LlamaModel.h"
#include "core/PressParams.h"
#include "kernels/LayerSelection.h"
#include "kernels/ProjectedNorms.h"

namespace kvlens {
namespace {

// Copies the rows of q [n, H, D] (positions p0 .. p0 + n) at positions [from, from + count)
// into dst [H, count, D] (row r = position from + r): a window may straddle two chunks.
void copyWindowRows(const at::Tensor& q, int64_t p0, int64_t from, int64_t count, at::Tensor& dst) {
    const int64_t lo = std::max(from, p0), hi = std::min(from + count, p0 + q.size(0));
    if (lo >= hi) return;
    if (!dst.defined()) dst = at::empty({q.size(1), count, q.size(2)}, q.options().dtype(at::kFloat));
    dst.narrow(1, lo - from, hi - lo).copy_(q.narrow(0, lo - p0, hi - lo).permute({1, 0, 2}));
}

// Keeps the queries of chosen (layer, head) pairs at every prompt position, [T, D] fp32,
// chunk by chunk.
void keepHeadQueries(std::map<std::pair<int64_t, int64_t>, at::Tensor>& wanted, int64_t layer,
                     const at::Tensor& q, int64_t p0, int64_t promptLength) {
    const int64_t n = std::min<int64_t>(q.size(0), promptLength - p0);
    if (n <= 0) return;
    for (auto& [lh, t] : wanted) {
        if (lh.first != layer) continue;
        if (!t.defined()) t = at::empty({promptLength, q.size(2)}, q.options().dtype(at::kFloat));
        t.narrow(0, p0, n).copy_(q.narrow(0, 0, n).select(1, lh.second));
    }
}

class CaptureObserver : public ForwardObserver {
public:
    CaptureObserver(int64_t layers, int64_t promptLength,
                    const std::vector<std::pair<int64_t, int64_t>>& fullQueryHeads, QueryStatistics* stats)
        : queries(layers), promptLength_(promptLength), stats_(stats) {
        for (const auto& lh : fullQueryHeads) fullQueries[lh] = at::Tensor();
    }

    void onQueries(int64_t layer, const at::Tensor& q, int64_t firstPosition) override {
        keepHeadQueries(fullQueries, layer, q, firstPosition, promptLength_);
        if (stats_) stats_->add(layer, q, firstPosition);
        // Keep the queries of the last kMaxWindow prompt positions, [H, w, D] fp32.
        const int64_t w = Capture::windowCapacityFor(promptLength_);
        copyWindowRows(q, firstPosition, promptLength_ - w, w, queries[layer]);
    }

    std::vector<at::Tensor> queries;
    std::map<std::pair<int64_t, int64_t>, at::Tensor> fullQueries;

private:
    int64_t promptLength_;
    QueryStatistics* stats_;
};

// Sums, per layer, the attention every key gets from all prompt queries (H2O's
// score), over the chunks of a replayed prefill: [H, T] fp32.
class ColumnSumAccumulator : public ForwardObserver {
public:
    ColumnSumAccumulator(int64_t layers, int64_t promptLength) : sums(layers), promptLength_(promptLength) {}
    void onQueries(int64_t, const at::Tensor&, int64_t) override {}
    bool wantsAttentionColumnSums() const override { return true; }
    void onAttentionColumnSums(int64_t layer, const at::Tensor& s) override {
        if (!sums[layer].defined()) sums[layer] = at::zeros({s.size(0), promptLength_}, s.options());
        sums[layer].narrow(1, 0, s.size(1)).add_(s);
    }

    std::vector<at::Tensor> sums;

private:
    int64_t promptLength_;
};

// Non-causal chunked attention (see Capture::nonCausalAttention) over a replayed
// prompt: each query of [lo, hi) against the keys of its own chunk in the filled cache.
class NonCausalAccumulator : public ForwardObserver {
public:
    NonCausalAccumulator(const KvCache& cache, int64_t layers, int64_t chunk, int64_t lo, int64_t hi)
        : sums(layers), cache_(cache), chunk_(chunk), lo_(lo), hi_(hi) {}
    void onQueries(int64_t layer, const at::Tensor& q, int64_t p0) override {
        const int64_t a = std::max(p0, lo_), b = std::min(p0 + q.size(0), hi_);
        if (a >= b) return;
        const int64_t H = q.size(1), D = q.size(2);
        const at::Tensor keys = cache_.keys(layer);  // [KV, capacity, D]
        const int64_t KV = keys.size(0), G = H / KV;
        if (!sums[layer].defined()) sums[layer] = at::zeros({H, hi_ - lo_}, q.options().dtype(at::kFloat));
        for (int64_t c0 = a; c0 < b;) {
            const int64_t start = lo_ + (c0 - lo_) / chunk_ * chunk_, end = std::min(start + chunk_, hi_);
            const int64_t c1 = std::min(b, end), m = c1 - c0, kc = end - start;
            // Query head h reads KV head h / G: [m, H, D] -> [KV, G * m, D].
            const at::Tensor qs =
                q.narrow(0, c0 - p0, m).to(at::kFloat).permute({1, 0, 2}).reshape({KV, G * m, D});
            const at::Tensor ks = keys.narrow(1, start, kc).to(at::kFloat);  // [KV, kc, D]
            const at::Tensor prob = at::softmax(at::bmm(qs, ks.transpose(1, 2)), -1);  // [KV, G*m, kc]
            sums[layer].narrow(1, start - lo_, kc).add_(prob.view({KV, G, m, kc}).sum(2).reshape({H, kc}));
            c0 = c1;
        }
    }

    // Per layer [KV, hi - lo]: the short last chunk's padding share added, the query
    // heads of each KV head averaged.
    at::Tensor finished(int64_t layer, int64_t kvHeads) const {
        at::Tensor s = sums[layer].clone();
        const int64_t n = hi_ - lo_, last = n % chunk_;
        if (last > 0) s.narrow(1, n - last, last).add_(double(chunk_ - last) / double(chunk_));
        return s.view({kvHeads, s.size(0) / kvHeads, n}).mean(1);
    }

    std::vector<at::Tensor> sums;  // [H, hi - lo] fp32

private:
    const KvCache& cache_;
    int64_t chunk_, lo_, hi_;
};

std::string finchKey(const PressParams& p, int64_t promptLength) {
    return "finch:" + std::to_string(p.resolveBudget(promptLength)) + ":" + std::to_string(p.window) + ":" +
           std::to_string(p.finchChunk) + ":";
}

std::string reconstructionKey(int64_t chunk, int64_t sinks) {
    return "kvzip:" + std::to_string(chunk) + ":" + std::to_string(sinks);
}

std::string nonCausalKey(int64_t chunk, int64_t lo, int64_t hi) {
    return "noncausal:" + std::to_string(chunk) + ":" + std::to_string(lo) + ":" + std::to_string(hi);
}

const char* const kPrefill = "the prefill produced";

// Throws when `t` [heads, ...] holds a NaN or an Inf, naming the first layer
// and head that does: the methods would otherwise each treat it their own way
// (max pool drops it, a sum spreads it, AdaKV's normalisation flattens it).
void requireFinite(const at::Tensor& t, int64_t layer, const char* headKind, const std::string& what,
                   const std::string& source) {
    if (!t.defined() || t.numel() == 0) return;
    const at::Tensor bad = at::logical_not(at::isfinite(t)).flatten(1).any(1);  // [heads]
    if (!bad.any().item<bool>()) return;
    const int64_t head = bad.nonzero()[0][0].item<int64_t>();
    const bool nan = at::isnan(t.select(0, head)).any().item<bool>();
    throw Error(source + " " + (nan ? "NaN" : "Inf") + " in layer " + std::to_string(layer) + " " +
                headKind + " " + std::to_string(head) + "'s " + what + ": it cannot be compressed" +
                (source == kPrefill ? " (an f16 overflow? try --dtype bf16 or f32)" : ""));
}

void requireFiniteCapture(const Capture& c, const std::string& source) {
    for (int64_t l = 0; l < c.layers(); ++l) {
        requireFinite(c.windowQueries(l), l, "query head", "window queries", source);
        requireFinite(c.keys(l), l, "KV head", "keys", source);
        requireFinite(c.values(l), l, "KV head", "values", source);
    }
}

}  // namespace

std::shared_ptr<Capture> Capture::fromPrefill(
    LlamaModel& model, const std::vector<int32_t>& prompt, const ProgressFn& progress,
    const std::vector<std::pair<int64_t, int64_t>>& fullQueryHeads, int64_t spareTokens) {
    const ModelConfig& c = model.config();
    for (const auto& [layer, head] : fullQueryHeads) {
        if (layer < 0 || layer >= c.nLayers || head < 0 || head >= c.nHeads) {
            throw Error("head " + std::to_string(layer) + ":" + std::to_string(head) +
                        " does not exist: the model has layers 0-" + std::to_string(c.nLayers - 1) +
                        " and query heads 0-" + std::to_string(c.nHeads - 1));
        }
    }
    if (prompt.size() < 2) throw Error("the prompt needs at least 2 tokens to compress");
    // The methods' scores and decode do not apply a sliding window yet: refused past it.
    model.requireCompressible(static_cast<int64_t>(prompt.size()) + std::max<int64_t>(spareTokens, 0));
    if (static_cast<int64_t>(prompt.size()) > c.contextLength) {
        throw Error("the prompt is " + std::to_string(prompt.size()) +
                    " tokens, longer than the model's context of " + std::to_string(c.contextLength) +
                    " tokens");
    }
    std::shared_ptr<Capture> capture(new Capture());
    capture->promptLength_ = static_cast<int64_t>(prompt.size());
    capture->queryHeads_ = c.nHeads;
    capture->kvHeads_ = c.nKvHeads;
    capture->headDim_ = c.headDim;
    capture->prompt_ = prompt;
    capture->cache_ =
        std::make_unique<KvCache>(model.makeCache(capture->promptLength_ + std::max<int64_t>(spareTokens, 0)));
    capture->queryStats_ = std::make_unique<QueryStatistics>(
        c.nLayers, capture->promptLength_, model.ropeInverseFrequencies(), c.ropeDim, c.ropeStyle == RopeStyle::Halves);
    CaptureObserver observer(c.nLayers, capture->promptLength_, fullQueryHeads, capture->queryStats_.get());
    const auto start = std::chrono::steady_clock::now();
    capture->lastLogits_ = model.forward(prompt, *capture->cache_, false, progress, &observer);
    capture->prefillSeconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    capture->windowQueries_ = std::move(observer.queries);
    capture->fullQueries_ = std::move(observer.fullQueries);
    requireFiniteCapture(*capture, kPrefill);
    // The default window's votes are part of the capture: the first SnapKV,
    // PyramidKV or AdaKV selection after a prefill is as quick as any other.
    const int64_t window = std::min<int64_t>(PressParams().window, capture->promptLength_ - 1);
    capture->votes(0, window);
    return capture;
}

std::shared_ptr<Capture> Capture::fromTensors(const std::vector<at::Tensor>& windowQueries,
                                              const std::vector<at::Tensor>& keys,
                                              const std::vector<at::Tensor>& values) {
    if (windowQueries.empty() || keys.size() != windowQueries.size() || values.size() != keys.size()) {
        throw Error("need window queries, keys and values for every layer");
    }
    std::shared_ptr<Capture> capture(new Capture());
    const at::Tensor& k0 = keys[0];
    capture->queryHeads_ = windowQueries[0].size(0);
    capture->kvHeads_ = k0.size(0);
    capture->promptLength_ = k0.size(1);
    capture->headDim_ = k0.size(2);
    const int64_t L = static_cast<int64_t>(keys.size());
    capture->cache_ = std::make_unique<KvCache>(L, capture->kvHeads_, capture->headDim_,
                                                capture->promptLength_, k0.scalar_type(), k0.device());
    for (int64_t l = 0; l < L; ++l) {
        capture->cache_->append(l, keys[l], values[l]);
        capture->windowQueries_.push_back(windowQueries[l].to(at::kFloat).contiguous());
    }
    requireFiniteCapture(*capture, "the inputs hold");
    return capture;
}

std::shared_ptr<void> Capture::borrowSpare() const {
    bool expected = false;
    if (!spareLent_->compare_exchange_strong(expected, true)) return nullptr;
    // The flag outlives the capture if the borrower does.
    std::shared_ptr<std::atomic<bool>> flag = spareLent_;
    return std::shared_ptr<void>(flag.get(), [flag](void*) { *flag = false; });
}

at::Tensor Capture::memoScores(const std::string& name, int64_t layer,
                               const std::function<at::Tensor()>& compute) const {
    std::lock_guard<std::mutex> lock(votesMutex_);
    auto it = memo_.find({name, layer});
    if (it == memo_.end()) {
        c10::InferenceMode guard;
        it = memo_.emplace(std::make_pair(name, layer), compute().to(at::kFloat).contiguous()).first;
    }
    return it->second;
}

at::Tensor Capture::votes(int64_t layer, int64_t window) const {
    std::lock_guard<std::mutex> lock(votesMutex_);
    auto it = votes_.find(window);
    if (it == votes_.end()) {
        std::vector<at::Tensor> perLayer(layers());
        for (int64_t l = 0; l < layers(); ++l) perLayer[l] = computeVotes(l, window);
        it = votes_.emplace(window, std::move(perLayer)).first;
    }
    return it->second[layer];
}

at::Tensor Capture::computeVotes(int64_t layer, int64_t window) const {
    c10::InferenceMode guard;
    const int64_t T = promptLength_;
    if (window < 1 || window > windowCapacity() || window >= T) {
        throw Error("window " + std::to_string(window) + " needs between 1 and " +
                    std::to_string(std::min(windowCapacity(), T - 1)) + " window queries");
    }
    at::Tensor votes = kernels::windowVotes(windowQueries_[layer], keys(layer), window);
    requireFinite(votes, layer, "query head", "votes (window " + std::to_string(window) + ")",
                  kPrefill);
    return votes;
}

namespace {

// Keeps the queries of chosen (layer, head) pairs of a replayed prompt.
class QueryKeeper : public ForwardObserver {
public:
    QueryKeeper(std::map<std::pair<int64_t, int64_t>, at::Tensor>& wanted, int64_t promptLength)
        : wanted_(wanted), promptLength_(promptLength) {}
    void onQueries(int64_t layer, const at::Tensor& q, int64_t p0) override {
        keepHeadQueries(wanted_, layer, q, p0, promptLength_);
    }

private:
    std::map<std::pair<int64_t, int64_t>, at::Tensor>& wanted_;
    int64_t promptLength_;
};

}  // namespace

void Capture::keepQueries(LlamaModel& model, const std::vector<std::pair<int64_t, int64_t>>& heads,
                          const ProgressFn& progress) {
    c10::InferenceMode guard;
    if (prompt_.empty()) throw Error("recomputing queries needs a capture made by a model prefill");
    const ModelConfig& c = model.config();
    std::map<std::pair<int64_t, int64_t>, at::Tensor> wanted;
    int64_t deepest = -1;
    for (const auto& [layer, head] : heads) {
        if (layer < 0 || layer >= c.nLayers || head < 0 || head >= c.nHeads || layer >= layers()) {
            throw Error("head " + std::to_string(layer) + ":" + std::to_string(head) +
                        " does not exist: the model has layers 0-" + std::to_string(c.nLayers - 1) +
                        " and query heads 0-" + std::to_string(c.nHeads - 1));
        }
        if (hasQueries(layer, head)) continue;
        wanted[{layer, head}] = at::Tensor();
        deepest = std::max(deepest, layer);
    }
    if (wanted.empty()) return;
    QueryKeeper keeper(wanted, promptLength_);
    model.replay(prompt_, *cache_, keeper, progress, deepest);
    for (auto& [lh, t] : wanted) fullQueries_[lh] = std::move(t);
}

void Capture::keepScoresFor(LlamaModel& model, const std::string& method, const ProgressFn& progress) const {
    PressParams params;
    params.method = method;
    keepScoresFor(model, params, progress);
}

bool Capture::needsReplayFor(const PressParams& params) const { return !pendingWork(params).empty(); }

std::string Capture::pendingWork(const PressParams& params) const {
    if (prompt_.empty()) return "";
    const MethodId method = methods::named(params.method).id;
    const NeedSet needs = methods::effectiveNeeds(params);
    if (method == MethodId::H2o) return hasH2oScores() ? "" : "H2O's accumulated attention (a replay of the prompt)";
    const int64_t T = promptLength_;
    if (params.resolveBudget(T) >= T) return "";  // keeps everything: nothing ranked
    std::string work;
    auto add = [&](const std::string& w) { work += (work.empty() ? "" : " and ") + w; };
    if (params.ranksBy("h2o") && !hasH2oScores()) add("H2O's accumulated attention (a replay of the prompt)");
    if (needs.has(Need::WoNorms) && !outputValueNorms(0).defined())
        add("CriticalKV's projected value norms (W_o on every value)");
    // (Bad settings say so in keepScoresFor's validation.)
    if (params.ranksBy("kvzip") && !reconstructionScores(0, params.repeatChunk, params.sinks).defined())
        add("KVzip's reconstruction of the prompt (chunks of " + std::to_string(params.repeatChunk) + ")");
    if (needs.has(Need::SecondPrefill) && !prefilledCache(params))
        add("Finch's chunked prefill (chunks of " + std::to_string(params.finchChunk) + ")");
    if (params.ranksBy("noncausal")) {
        const auto [lo, hi] = params.rankedSpan(T);
        if (params.attnChunk >= 1 && lo < hi && !nonCausalAttention(0, params.attnChunk, lo, hi).defined())
            add("non-causal attention (chunks of " + std::to_string(params.attnChunk) + ", a replay of the prompt)");
    }
    return work;
}

void Capture::keepScoresFor(LlamaModel& model, const PressParams& params, const ProgressFn& progress) const {
    if (!needsReplayFor(params)) return;
    // Bad settings fail before a replay, not after it (H2O's needs none: any budget uses it).
    const MethodId method = methods::named(params.method).id;
    const NeedSet needs = methods::effectiveNeeds(params);
    if (method != MethodId::H2o) params.validate(promptLength_, windowCapacity());
    const bool h2o = params.ranksBy("h2o");
    std::lock_guard<std::mutex> lock(statsMutex_);
    const ModelConfig& c = model.config();
    if (c.nLayers != layers() || c.nHeads != queryHeads_ || c.nKvHeads != kvHeads_ || c.headDim != headDim_) {
        throw Error(std::string(h2o                              ? "H2O's scores need"
                                : needs.has(Need::WoNorms) ? "CriticalKV's projected value norms need"
                                : params.ranksBy("kvzip")        ? "KVzip's reconstruction needs"
                                : needs.has(Need::SecondPrefill) ? "Finch's chunked prefill needs"
                                                                 : "the non-causal attention needs") +
                    " the model that made the capture (another one is loaded)");
    }
    c10::InferenceMode guard;
    // Each piece of work pendingWork names (joined by " and ") fills its own share of one bar,
    // in the order below, rather than each running it from 0 to 1 again.
    const std::string work = pendingWork(params);
    int64_t pieces = 1, piece = 0;
    for (size_t at = work.find(" and "); at != std::string::npos; at = work.find(" and ", at + 1)) ++pieces;
    auto share = [&]() -> ProgressFn {
        if (!progress) return {};
        const int64_t mine = std::min(piece++, pieces - 1);
        return [&progress, mine, pieces](double f, const std::string& what) {
            progress((double(mine) + f) / double(pieces), what);
        };
    };
    if (h2o && !hasH2oScores()) {
        ColumnSumAccumulator sums(layers(), promptLength_);
        model.replay(prompt_, *cache_, sums, share());
        for (int64_t l = 0; l < layers(); ++l) {
            requireFinite(sums.sums[l], l, "query head", "accumulated attention", kPrefill);
        }
        h2oScores_ = std::move(sums.sums);
        h2oReady_ = true;
    }
    if (method == MethodId::H2o) return;
    if (needs.has(Need::WoNorms) && !outputValueNorms(0).defined()) {
        // Each query head's slice of W_o [E, H * D] applied to its KV head's values, L1 over E.
        const int64_t T = promptLength_, G = queryHeads_ / kvHeads_;
        // All layers first, then stored together: a failure or a cancel halfway leaves none
        // (needsReplayFor looks at layer 0 only).
        std::vector<at::Tensor> all(layers());
        const ProgressFn normsProgress = share();
        for (int64_t l = 0; l < layers(); ++l) {
            if (normsProgress) normsProgress(double(l) / double(layers()), "projected value norms, layer " + std::to_string(l));
            const at::Tensor v = values(l).narrow(1, 0, T);  // [KV, T, D]
            const at::Tensor w = kernels::floatWeight(model.weights().layers[l].wo).to(v.device());
            at::Tensor norms = at::empty({queryHeads_, T}, v.options().dtype(at::kFloat));
            for (int64_t c = 0; c < kvHeads_; ++c) {
                const at::Tensor vc = v[c].to(at::kFloat);  // once for the KV head's G readers
                for (int64_t h = c * G; h < (c + 1) * G; ++h) norms[h].copy_(kernels::projectedValueNorms(w, vc, h));
            }
            requireFinite(norms, l, "query head", "projected value norms", kPrefill);
            all[l] = norms.contiguous();
        }
        memoStore("wov-l1", all);
    }
    if (params.ranksBy("kvzip") && !reconstructionScores(0, params.repeatChunk, params.sinks).defined()) {
        if (repeatPrompt_.empty())
            throw Error("KVzip needs its repeat prompt in the model's tokens, which this capture was not given");
        std::vector<at::Tensor> all =
            ContextReconstruction::scores(model, *cache_, prompt_, repeatPrompt_, params.sinks, params.repeatChunk, share());
        for (int64_t l = 0; l < layers(); ++l) {
            all[l] = all[l].contiguous();
            requireFinite(all[l], l, "KV head", "KVzip's reconstruction scores", "the reconstruction produced");
        }
        memoStore(reconstructionKey(params.repeatChunk, params.sinks), all);
        std::lock_guard<std::mutex> memoLock(votesMutex_);
        keepRecent("kvzip", reconstructionKey(params.repeatChunk, params.sinks), kReconstructions);
    }
    if (needs.has(Need::SecondPrefill) && !prefilledCache(params)) {
        PrefilledCache own = FinchPrefill::run(model, prompt_, params.resolveBudget(promptLength_), params.window,
                                               params.finchChunk, share());
        for (int64_t l = 0; l < layers(); ++l) {
            requireFinite(own.keys[l], l, "KV head", "keys", "Finch's chunked prefill produced a");
            requireFinite(own.values[l], l, "KV head", "values", "Finch's chunked prefill produced a");
        }
        if (!at::isfinite(own.lastLogits).all().item<bool>())
            throw Error("Finch's chunked prefill produced a NaN or an Inf in the logits after the prompt");
        const std::string key = finchKey(params, promptLength_);
        std::lock_guard<std::mutex> memoLock(votesMutex_);
        memo_[{key + "logits", 0}] = own.lastLogits;
        for (int64_t l = 0; l < layers(); ++l) {
            memo_[{key + "kept", l}] = own.kept[l];
            memo_[{key + "v", l}] = own.values[l];
            memo_[{key + "k", l}] = own.keys[l];
        }
        keepRecent("finch", key, kFinchCaches);
    }
    if (!params.ranksBy("noncausal")) return;
    const auto [lo, hi] = params.rankedSpan(promptLength_);
    if (nonCausalAttention(0, params.attnChunk, lo, hi).defined()) return;
    NonCausalAccumulator acc(*cache_, layers(), params.attnChunk, lo, hi);
    model.replay(prompt_, *cache_, acc, share());
    std::vector<at::Tensor> done(layers());
    for (int64_t l = 0; l < layers(); ++l) {
        done[l] = acc.finished(l, kvHeads_).contiguous();
        requireFinite(done[l], l, "KV head", "non-causal attention", kPrefill);
    }
    memoStore(nonCausalKey(params.attnChunk, lo, hi), done);
}

void Capture::keepRecent(const std::string& kind, const std::string& prefix, size_t keep) const {
    std::vector<std::string>& recent = recent_[kind];
    recent.push_back(prefix);
    while (recent.size() > keep) {
        // A name ending in ':' is the prefix of a set ("finch:B:W:m:" + k, v, kept, logits);
        // any other is one name ("kvzip:2048:4", not also "kvzip:2048:40").
        const std::string& old = recent.front();
        const bool set = old.back() == ':';
        for (auto it = memo_.begin(); it != memo_.end();) {
            const std::string& name = it->first.first;
            it = (set ? name.rfind(old, 0) == 0 : name == old) ? memo_.erase(it) : std::next(it);
        }
        recent.erase(recent.begin());
    }
}

at::Tensor Capture::memoFound(const std::string& name, int64_t layer) const {
    std::lock_guard<std::mutex> lock(votesMutex_);
    auto it = memo_.find({name, layer});
    return it == memo_.end() ? at::Tensor() : it->second;
}

void Capture::memoStore(const std::string& name, const std::vector<at::Tensor>& perLayer) const {
    std::lock_guard<std::mutex> lock(votesMutex_);
    for (size_t l = 0; l < perLayer.size(); ++l) memo_[{name, int64_t(l)}] = perLayer[l];
}

PrefilledCache Capture::prefilledCache(const PressParams& params) const {
    PrefilledCache own;
    if (!methods::effectiveNeeds(params).has(Need::SecondPrefill)) return own;
    const std::string key = finchKey(params, promptLength_);
    // All of one cache under one lock: an older one may be dropped meanwhile (kFinchCaches).
    std::lock_guard<std::mutex> lock(votesMutex_);
    auto found = [&](const std::string& name, int64_t layer) {
        auto it = memo_.find({key + name, layer});
        return it == memo_.end() ? at::Tensor() : it->second;
    };
    if (!found("k", 0).defined()) return own;
    own.lastLogits = found("logits", 0);
    for (int64_t l = 0; l < layers(); ++l) {
        own.keys.push_back(found("k", l));
        own.values.push_back(found("v", l));
        own.kept.push_back(found("kept", l));
    }
    return own;
}

at::Tensor Capture::outputValueNorms(int64_t layer) const { return memoFound("wov-l1", layer); }

at::Tensor Capture::reconstructionScores(int64_t layer, int64_t chunk, int64_t sinks) const {
    return memoFound(reconstructionKey(chunk, sinks), layer);
}

at::Tensor Capture::nonCausalAttention(int64_t layer, int64_t chunk, int64_t lo, int64_t hi) const {
    return memoFound(nonCausalKey(chunk, lo, hi), layer);
}

const at::Tensor& Capture::queries(int64_t layer, int64_t head) const {
    auto it = fullQueries_.find({layer, head});
    if (it == fullQueries_.end() || !it->second.defined()) {
        throw Error("the queries of layer " + std::to_string(layer) + " head " + std::to_string(head) +
                    " were not kept by the prefill");
    }
    return it->second;
}

int64_t Capture::bytes() const {
    int64_t total = cache_ ? cache_->bytes() : 0;
    for (const auto& [lh, t] : fullQueries_)
        if (t.defined()) total += t.numel() * t.element_size();
    for (const at::Tensor& t : windowQueries_) total += t.numel() * t.element_size();
    if (queryStats_) total += queryStats_->bytes();
    if (hasH2oScores())
        for (const at::Tensor& t : h2oScores_) total += t.numel() * t.element_size();
    std::lock_guard<std::mutex> lock(votesMutex_);
    for (const auto& [w, perLayer] : votes_)
        for (const at::Tensor& t : perLayer) total += t.numel() * t.element_size();
    for (const auto& [key, t] : memo_) total += t.numel() * t.element_size();
    return total;
}

}  // namespace kvlens
