// What a prefill leaves behind for the compression methods, so that any
// method, budget, window (up to 64), kernel, pooling, beta or alpha can be
// selected again without running the prefill: per layer, the full KV (after
// RoPE), the last 64 queries (after RoPE) and the SnapKV votes of the default
// window (32). Votes of other window sizes are derived from the window queries
// and keys on first use, then cached. What only one method needs is computed
// when that method is first used (keepScoresFor): H2O's attention each key got
// from all prompt queries takes a replay of the prompt over the capture's own KV
// (about 1.5x a prefill's time, no second KV), so a capture costs a plain
// prefill plus the window's votes. A capture holding a NaN or an Inf (window
// queries, keys, values, H2O scores, votes) is refused with one line naming the
// layer and head, so no method ever ranks one.
//
// Memory, for T prompt tokens, L layers, H query heads, KV heads, head dim D,
// compute dtype of b bytes:
//   full KV         2 * L * KV * T * D * b
//   window queries  L * H * 64 * D * 4
//   H2O scores      L * H * T * 4 once H2O is used
//   votes           L * H * (T - W) * 4 for each window size W used
//   KNorm, KeyDiff  L * KV * T * 4 each, once the method is used
//   TOVA            L * T * 4 once used
//   query statistics L * H * ((D + D^2) * 8 + 64 * D * 4): the sum and outer products
//                   of the pre-RoPE queries (fp64) and the first 64 of them (Expected Attention)
//   Expected Attention's scores  L * KV * T * 4 for each (sinks, future) used
//   LagKV's scores  L * KV * T * 4 for each (sinks, lag) used
//   non-causal attention  L * KV * T * 4 for each (chunk, span) used, from a replay of the
//                   prompt like H2O's (Compactor, --method noncausal)
//   LeverageScore's scores  L * KV * T * 4 for each (sketch, seed, span) used
//   CriticalKV's projected value norms  L * H * T * 4, once (T x D x E x 2 flops per query
//                   head and layer, with W_o dequantised one layer at a time)
//   KVzip's reconstruction scores  L * KV * T * 4 for each of the last kReconstructions
//                   (chunk, sinks) used (an older one is dropped, and run again if asked), from a run of
//                   the repeat prompt and the prompt again after the prompt's KV (about two
//                   prefills' attention and one prefill's MLPs; ContextReconstruction)
//   Finch's cache   L x KV x B x D x 2 x b for each of the last kFinchCaches (budget, window,
//                   chunk) used: its own chunked prefill of the prompt with eviction
//                   (FinchPrefill), kept whole because its keys and values are not the
//                   capture's; an older one is dropped (asked again, it is prefilled again)
//   CAKE's window statistics  L * H * (T - W) * 2 * 4 for each window W used (the
//                   window attention's mean and variance per query head and column),
//                   and its indicator L * KV * T * 4 for each (W, gamma) used
// e.g. tinyllama-1.1b (L=22, H=32, KV=4, D=64), T=8192, bf16: KV 184.5 MB,
// queries 11.5 MB, H2O 23.1 MB, votes for one window 23.0 MB, query statistics 35.0 MB.
#pragma once

#include <ATen/ATen.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "core/PressParams.h"
#include "engine/compress/PrefilledCache.h"
#include "engine/compress/QueryStatistics.h"
#include "engine/compress/RepeatPrompt.h"
#include "engine/model/KvCache.h"
#include "engine/model/ModelWeights.h"

namespace kvlens {

class LlamaModel;

class Capture {
public:
    static constexpr int64_t kMaxWindow = 64;
    // Finch's caches kept at once (each a compressed cache's worth; a budget slider would
    // otherwise add one per budget tried).
    static constexpr size_t kFinchCaches = 4;
    // KVzip's reconstructions kept at once (the GUI's spin boxes would otherwise add one per step).
    static constexpr size_t kReconstructions = 4;

    // Prefills `prompt` on `model`, keeping what the methods need, plus the
    // queries of every prompt position for the (layer, query head) pairs in
    // `fullQueryHeads` (T * D * 4 bytes each), for full attention maps.
    // `spareTokens`: room reserved in the KV buffers after the prompt, which a
    // FullKV compressed cache of up to that many decode steps borrows instead of
    // copying the whole KV (the evaluator's and the hit rate's full-cache decode).
    static std::shared_ptr<Capture> fromPrefill(
        LlamaModel& model, const std::vector<int32_t>& prompt, const ProgressFn& progress = {},
        const std::vector<std::pair<int64_t, int64_t>>& fullQueryHeads = {}, int64_t spareTokens = 0);

    // From tensors dumped elsewhere (`kvlens select`): per layer, window queries
    // [H, W, D] and keys/values [KV, T, D]; with `outputProjections` (each layer's W_o,
    // [E, H x D]) also the projected value norms CriticalKV ranks by. Has no H2O scores.
    static std::shared_ptr<Capture> fromTensors(const std::vector<at::Tensor>& windowQueries,
                                                const std::vector<at::Tensor>& keys,
                                                const std::vector<at::Tensor>& values,
                                                const std::vector<at::Tensor>& outputProjections = {});

    int64_t layers() const { return static_cast<int64_t>(windowQueries_.size()); }
    int64_t promptLength() const { return promptLength_; }
    int64_t queryHeads() const { return queryHeads_; }
    int64_t kvHeads() const { return kvHeads_; }
    int64_t headDim() const { return headDim_; }
    int64_t windowCapacity() const { return windowQueries_.empty() ? 0 : windowQueries_[0].size(1); }
    // The window queries a prefill of `promptLength` tokens keeps: what PressParams::validate
    // checks a window against before the prefill (a bad budget then fails in under a second).
    static int64_t windowCapacityFor(int64_t promptLength) {
        return std::min(kMaxWindow, promptLength);
    }

    const KvCache& cache() const { return *cache_; }
    // Rows of room after the prompt in every KV buffer.
    int64_t spareTokens() const { return cache_->capacity() - promptLength_; }
    // Lends that room to one borrower at a time: a FullKV CompressedCache appends
    // its decode steps there, past the rows this capture reads. Null while lent.
    std::shared_ptr<void> borrowSpare() const;
    at::Tensor keys(int64_t layer) const { return cache_->keys(layer); }
    at::Tensor values(int64_t layer) const { return cache_->values(layer); }
    const at::Tensor& windowQueries(int64_t layer) const { return windowQueries_[layer]; }
    // The sliding window of `layer` in the model that made the capture (ModelConfig::windowAt):
    // a query at position p attends to keys after p - window; 0: the layer is global (and every
    // layer of a capture from tensors). The window votes, TOVA's, CAKE's and the attention
    // statistics apply it; Press::select keeps a local layer's positions inside it.
    int64_t slidingWindow(int64_t layer) const {
        return slidingWindows_.empty() ? 0 : slidingWindows_[static_cast<size_t>(layer)];
    }
    // The first prompt position the first decode step's query still attends to on `layer`
    // (T - window + 1; 0 on a global layer or where the window spans the prompt).
    int64_t firstReached(int64_t layer) const {
        const int64_t w = slidingWindow(layer);
        return w > 0 ? std::max<int64_t>(0, promptLength_ - w + 1) : 0;
    }
    // Whether some layer's window leaves out prompt positions (firstReached > 0).
    bool windowed() const;
    // K and V bytes the full cache holds for `layer` after the prompt: every prompt row, or on
    // a local layer the rows a decode step still reaches (from firstReached on).
    int64_t fullCacheBytes(int64_t layer) const;
    // Gemma 2's attention logit soft-cap (ModelConfig::attnSoftcap; 0: none): the window votes,
    // TOVA's, CAKE's and the attention statistics cap their logits as the model does.
    double attentionSoftcap() const { return attentionSoftcap_; }
    // Whether local layers rotate with their own RoPE base (Gemma 3): the query statistics and
    // pre-RoPE keys, which turn by the global base, do not hold there (Press::requireModelSupport).
    bool localRope() const { return localRope_; }
    // Queries of all prompt positions for one (layer, query head), [T, D] fp32,
    // when the prefill was asked to keep them; throws kvlens::Error otherwise.
    bool hasQueries(int64_t layer, int64_t head) const {
        auto it = fullQueries_.find({layer, head});
        return it != fullQueries_.end() && it->second.defined();
    }
    const at::Tensor& queries(int64_t layer, int64_t head) const;
    // Recomputes, for a map the prefill was not asked for, the queries of the
    // (layer, query head) pairs not kept yet: a forward pass of the prompt
    // through layers 0 .. the deepest one asked (its KV only for those layers).
    // Same model as the prefill; not while other threads read this capture.
    void keepQueries(LlamaModel& model, const std::vector<std::pair<int64_t, int64_t>>& heads,
                     const ProgressFn& progress = {});

    // Computes, the first time `method` needs them, the statistics only it uses
    // (H2O: the accumulated attention, a replay of the prompt on `model`, which
    // must be the one that made the capture); nothing for the other methods, nor
    // for a capture from tensors (which cannot have them). Thread-safe.
    // Non-causal attention (Compactor, --method noncausal, or a wrapper's scorer): a replay
    // per (chunk, span) the params ask for, unless the budget keeps the whole prompt.
    void keepScoresFor(LlamaModel& model, const PressParams& params, const ProgressFn& progress = {}) const;
    // Whether keepScoresFor(params) has work to do: a replay of the prompt, KVzip's
    // reconstruction, or CriticalKV's projected value norms (for a progress bar's title).
    bool needsReplayFor(const PressParams& params) const;
    // What keepScoresFor(params) would compute, in words for a progress bar ("KVzip's
    // reconstruction of the prompt (chunks of 2048)", joined by " and "); "" for nothing.
    std::string pendingWork(const PressParams& params) const;

    // CriticalKV: per layer, each query head's ||W_o^(h) v_t||_1 over the prompt positions (its
    // slice of the model's output projection applied to the values of its KV head), [H, T]
    // fp32; undefined until keepScoresFor(criticalkv or criticaladakv) made them from the model's weights.
    at::Tensor outputValueNorms(int64_t layer) const;
    void keepScoresFor(LlamaModel& model, const std::string& method, const ProgressFn& progress = {}) const;

    // Non-causal chunked attention over positions [lo, hi) cut into chunks of `chunk` from
    // lo (the last may be shorter): each query's softmax of q.k (after RoPE, unscaled, as
    // Compactor's code and kvpress) over the keys of its own chunk only, summed over the
    // chunk's queries, plus (chunk - m) / chunk on each of a short last chunk's m columns
    // (the missing query rows' uniform share, as both codes pad), averaged over the KV
    // head's query heads: [KV, hi - lo] fp32. Undefined until keepScoresFor made it.
    at::Tensor nonCausalAttention(int64_t layer, int64_t chunk, int64_t lo, int64_t hi) const;

    // KVzip's repeat prompt in the tokens of the model that made the capture: whoever makes
    // a capture from a prefill sets it from the model's tokenizer (RepeatPrompt::from), so
    // that keepScoresFor can run the reconstruction. Before any other thread reads it.
    void setRepeatPrompt(RepeatPrompt prompt) { repeatPrompt_ = std::move(prompt); }
    const RepeatPrompt& repeatPrompt() const { return repeatPrompt_; }
    // KVzip: per layer, each KV head's highest attention from the prompt's reconstruction in
    // chunks of `chunk` after `sinks` (ContextReconstruction; the sinks score 1), [KV, T]
    // fp32. Undefined until keepScoresFor made it.
    at::Tensor reconstructionScores(int64_t layer, int64_t chunk, int64_t sinks) const;

    // Finch: the cache its chunked prefill (FinchPrefill) left for `params`' budget, window and
    // --finch-chunk, once keepScoresFor made it; empty for any other method, and before.
    // CompressedCache copies it instead of gathering from this capture's KV.
    PrefilledCache prefilledCache(const PressParams& params) const;

    // The prompt's pre-RoPE query statistics (Expected Attention); null for a capture
    // from tensors.
    const QueryStatistics* queryStatistics() const { return queryStats_.get(); }

    bool hasH2oScores() const { return h2oReady_; }
    const at::Tensor& h2oScores(int64_t layer) const { return h2oScores_[layer]; }  // [H, T]

    // Sum over the last `window` queries of their causal softmax (fp32, over all
    // keys a query attends to, its layer's sliding window applied, scaled by 1/sqrt(D)),
    // for prefix columns: [H, T - window] fp32.
    at::Tensor votes(int64_t layer, int64_t window) const;

    // A layer's scores that depend on the capture alone (KNorm's, KeyDiff's, TOVA's;
    // PressScores): made by `compute` on first use of (name, layer), then kept and
    // counted in bytes(). Thread-safe; `compute` runs under the lock.
    at::Tensor memoScores(const std::string& name, int64_t layer, const std::function<at::Tensor()>& compute) const;

    // The prompt and the next-token logits after it (empty/undefined for fromTensors).
    const std::vector<int32_t>& prompt() const { return prompt_; }
    const at::Tensor& lastLogits() const { return lastLogits_; }
    // Wall time of the prefill that made it (0 for fromTensors).
    double prefillSeconds() const { return prefillSeconds_; }

    int64_t bytes() const;

private:
    // A piece of work a method needs from the model beyond the prefill (engine/compress/work/):
    // it reads and fills what this capture keeps.
    friend class CaptureWork;
    Capture() = default;
    at::Tensor computeVotes(int64_t layer, int64_t window) const;
    // What memoScores keeps, without computing it: the tensor of (name, layer), or undefined.
    at::Tensor memoFound(const std::string& name, int64_t layer) const;
    // Stores every layer's tensor under `name` at once (a half-made set is never seen).
    void memoStore(const std::string& name, const std::vector<at::Tensor>& perLayer) const;

    int64_t promptLength_ = 0, queryHeads_ = 0, kvHeads_ = 0, headDim_ = 0;
    std::unique_ptr<KvCache> cache_;
    std::vector<at::Tensor> windowQueries_;  // [H, min(64, T), D] fp32
    std::vector<int64_t> slidingWindows_;    // per layer (empty: none)
    double attentionSoftcap_ = 0.0;
    bool localRope_ = false;
    std::unique_ptr<QueryStatistics> queryStats_;
    std::shared_ptr<std::atomic<bool>> spareLent_ = std::make_shared<std::atomic<bool>>(false);
    mutable std::mutex statsMutex_;
    mutable std::vector<at::Tensor> h2oScores_;  // [H, T] fp32, once keepScoresFor("h2o")
    mutable std::atomic<bool> h2oReady_{false};
    std::map<std::pair<int64_t, int64_t>, at::Tensor> fullQueries_;  // (layer, head) -> [T, D] fp32
    std::vector<int32_t> prompt_;
    RepeatPrompt repeatPrompt_;
    at::Tensor lastLogits_;
    double prefillSeconds_ = 0.0;
    mutable std::mutex votesMutex_;
    mutable std::map<int64_t, std::vector<at::Tensor>> votes_;  // window -> per layer
    mutable std::map<std::pair<std::string, int64_t>, at::Tensor> memo_;  // under votesMutex_
    // Per kind ("finch", "kvzip"), the memo prefixes of what a model run made, oldest first;
    // keepRecent drops the oldest beyond a count (all under votesMutex_).
    mutable std::map<std::string, std::vector<std::string>> recent_;
    void keepRecent(const std::string& kind, const std::string& prefix, size_t keep) const;
};

}  // namespace kvlens
