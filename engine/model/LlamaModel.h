// The Llama-family forward pass (llama, mistral, qwen2/3, phi3, gemma2/3): RMSNorm, RoPE,
// grouped-query attention computed in query blocks (sliding windows per layer, Gemma 2's
// soft-capping), SwiGLU or GeGLU. Prefill and decode share it.
#pragma once

#include <ATen/ATen.h>

#include <algorithm>
#include <functional>
#include <vector>

#include "engine/compress/CompressedCache.h"
#include "engine/model/KvCache.h"
#include "engine/model/ModelConfig.h"
#include "engine/model/ModelWeights.h"

namespace kvlens {

// Sees inside a forward pass: what the compression methods' capture keeps.
class ForwardObserver {
public:
    virtual ~ForwardObserver() = default;
    // Queries after RoPE of the tokens being run, [T, heads, headDim], the first at
    // position `firstPosition` (scaled so that q.k / sqrt(headDim) is the model's logit:
    // Gemma's query_pre_attn_scalar is in them).
    virtual void onQueries(int64_t layer, const at::Tensor& q, int64_t firstPosition) = 0;
    // runAfter only, before each chunk's onQueries: the keys after RoPE of every token run
    // after the filled cache so far, this chunk's last, [kvHeads, n, headDim] (a view of the
    // scratch cache, valid until the next chunk).
    virtual void onKeys(int64_t layer, const at::Tensor& keysSoFar) {}
    // Attention probabilities summed over the queries run, per query head and key:
    // fp32 [heads, keys] (what H2O accumulates). Asked for only when this returns true.
    virtual bool wantsAttentionColumnSums() const { return false; }
    virtual void onAttentionColumnSums(int64_t layer, const at::Tensor& sums) {}
};

class LlamaModel {
public:
    LlamaModel(ModelConfig config, ModelWeights weights, c10::Device device, c10::ScalarType dtype);

    // Runs `tokens` at positions cache.length() onwards, appending their keys
    // (after RoPE) and values to `cache`. Returns fp32 logits on the CPU:
    // [vocab] for the last token, or [n, vocab] for every token when `allLogits`.
    // `progress` hears once per layer of each chunk (prefills of long prompts take
    // minutes). A prompt longer than the prefill chunk runs chunk after chunk, each
    // attending over the cache so far, so activations stay bounded whatever its
    // length; `observer` then hears every chunk (its firstPosition says where).
    // With `stopAfterLayer` >= 0 only layers 0 .. stopAfterLayer run (for what
    // the observer collects; `cache` needs only those layers) and the result is
    // an undefined tensor.
    at::Tensor forward(const std::vector<int32_t>& tokens, KvCache& cache, bool allLogits = false,
                       const ProgressFn& progress = {}, ForwardObserver* observer = nullptr,
                       int64_t stopAfterLayer = -1);

    // Runs again a prompt whose keys and values `filled` already holds (its first
    // tokens.size() entries, from forward on the same tokens), for what `observer`
    // collects: each chunk attends over `filled`'s entries and appends nothing, so a
    // second look at a prefill needs no second KV cache. Layers 0 .. stopAfterLayer
    // (all when < 0).
    void replay(const std::vector<int32_t>& tokens, const KvCache& filled, ForwardObserver& observer,
                const ProgressFn& progress = {}, int64_t stopAfterLayer = -1);

    // Runs `tokens` as if appended to `filled`, at positions filled.length() onwards,
    // without writing to it (other threads may be reading it): each chunk attends over
    // filled's entries and the tokens' own keys so far, which a scratch cache of
    // tokens.size() rows holds until it returns. For what `observer` collects (KVzip's
    // reconstruction of the prompt); it hears each chunk's keys, then its queries.
    void runAfter(const std::vector<int32_t>& tokens, const KvCache& filled, ForwardObserver& observer,
                  const ProgressFn& progress = {});

    // One decode step on a compressed cache: appends the token's keys and values
    // to every head and attends over each head's own entries. Returns fp32 [vocab].
    // `observer` hears each layer's query (onQueries, [1, heads, headDim]).
    at::Tensor decode(int32_t token, CompressedCache& cache, ForwardObserver* observer = nullptr);

    KvCache makeCache(int64_t capacity) const;

    const ModelConfig& config() const { return config_; }
    // Attend over the whole sequence whatever the window (--sliding-window ignore: as
    // llama.cpp runs Mistral, for parity runs).
    void ignoreSlidingWindow() { config_.slidingWindow = 0; }
    const ModelWeights& weights() const { return weights_; }
    c10::Device device() const { return device_; }
    c10::ScalarType dtype() const { return dtype_; }
    // RoPE's radians per position of each rotated pair, fp32 [ropeDim / 2] on the device
    // (of the global layers where local ones have their own base: the methods that rotate by
    // it refuse such a model, Press::requireModelSupport).
    const at::Tensor& ropeInverseFrequencies() const { return invFreq_; }

    // Attention scores held at once stay under this many bytes; the query block
    // size follows from it (memory grows with T x block, never T x T).
    // By default a block holds at least 16 queries (GEMMs too small cost more than
    // cache misses); a bound set here is kept exactly (down to one query).
    void setAttentionBlockBytes(int64_t bytes) {
        blockBytes_ = bytes;
        minQueryBlock_ = 1;
    }
    int64_t queryBlockSize(int64_t keys) const;
    // Tokens a prefill runs at once (kPrefillChunk by default; at least 1). 2048: a
    // 4096-token prefill of the TinyLlama shape (Q4_K_M) peaks 0.17 GB lower than with
    // 4096 (the activations and the MLP's GEMM temporaries halve) at 237.4 against
    // 251.6 tokens/s; a 32K-token prefill took 1,046 s against 876 (README).
    static constexpr int64_t kPrefillChunk = 2048;
    void setPrefillChunk(int64_t tokens) { prefillChunk_ = std::max<int64_t>(tokens, 1); }
    int64_t prefillChunk() const { return prefillChunk_; }

private:
    // Appends k, v [T, kvHeads, D] for `layer` to a cache and returns the
    // attention output [T, heads * D] of q [T, heads, D].
    using AttentionStep = std::function<at::Tensor(int64_t layer, const at::Tensor& q,
                                                   const at::Tensor& k, const at::Tensor& v)>;
    at::Tensor run(const std::vector<int32_t>& tokens, int64_t firstPosition, bool allLogits,
                   const ProgressFn& progress, const AttentionStep& attend, int64_t stopAfterLayer = -1);
    // Runs `tokens` chunk by chunk from position p0, each chunk through run() with
    // the step stepAt(its first position); the logits as forward() returns them.
    using StepAt = std::function<AttentionStep(int64_t firstPosition)>;
    at::Tensor runChunked(const std::vector<int32_t>& tokens, int64_t p0, bool allLogits,
                          const ProgressFn& progress, const StepAt& stepAt, int64_t stopAfterLayer);
    // The prefill's attention of q [T, H, D] at `firstPosition` over keys/values
    // [KV, firstPosition + T, D], telling `observer` the column sums it asks for.
    at::Tensor observedAttention(int64_t layer, const at::Tensor& q, const at::Tensor& keys,
                                 const at::Tensor& values, int64_t firstPosition, ForwardObserver* observer) const;

    // Blocked attention for many queries (prefill): GEMMs over query blocks.
    // `columnSums`, when given, receives the probabilities summed over queries, [H, S].
    // `window`: the layer's sliding window (0: none).
    at::Tensor attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                         int64_t firstPosition, int64_t window, at::Tensor* columnSums = nullptr) const;
    // logits -> cap * tanh(logits / cap) in place (Gemma 2's soft-capping; nothing when cap is 0).
    static void softcap(at::Tensor& logits, double cap);

    ModelConfig config_;
    ModelWeights weights_;
    c10::Device device_;
    c10::ScalarType dtype_;
    at::Tensor invFreq_;       // [ropeDim / 2] fp32 (RopeFrequencies)
    at::Tensor localInvFreq_;  // Gemma 3's local layers (ModelConfig::localRopeTheta), or undefined
    float ropeMagnitude_ = 1.0f;
    int64_t blockBytes_ = 16ll << 20;
    int64_t minQueryBlock_ = 16;
    int64_t prefillChunk_ = kPrefillChunk;
};

}  // namespace kvlens
