// The Llama-family forward pass (llama, mistral, qwen2): RMSNorm, RoPE, grouped-
// query attention computed in query blocks, SwiGLU. Prefill and decode share it.
#pragma once

#include <ATen/ATen.h>

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
    // position `firstPosition`.
    virtual void onQueries(int64_t layer, const at::Tensor& q, int64_t firstPosition) = 0;
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
    // `progress` hears once per layer (prefills of long prompts take minutes).
    // With `stopAfterLayer` >= 0 only layers 0 .. stopAfterLayer run (for what
    // the observer collects; `cache` needs only those layers) and the result is
    // an undefined tensor.
    at::Tensor forward(const std::vector<int32_t>& tokens, KvCache& cache, bool allLogits = false,
                       const ProgressFn& progress = {}, ForwardObserver* observer = nullptr,
                       int64_t stopAfterLayer = -1);

    // One decode step on a compressed cache: appends the token's keys and values
    // to every head and attends over each head's own entries. Returns fp32 [vocab].
    // `observer` hears each layer's query (onQueries, [1, heads, headDim]).
    at::Tensor decode(int32_t token, CompressedCache& cache, ForwardObserver* observer = nullptr);

    KvCache makeCache(int64_t capacity) const;

    const ModelConfig& config() const { return config_; }
    const ModelWeights& weights() const { return weights_; }
    c10::Device device() const { return device_; }
    c10::ScalarType dtype() const { return dtype_; }

    // Attention scores held at once stay under this many bytes; the query block
    // size follows from it (memory grows with T x block, never T x T).
    void setAttentionBlockBytes(int64_t bytes) { blockBytes_ = bytes; }
    int64_t queryBlockSize(int64_t keys) const;

private:
    // Appends k, v [T, kvHeads, D] for `layer` to a cache and returns the
    // attention output [T, heads * D] of q [T, heads, D].
    using AttentionStep = std::function<at::Tensor(int64_t layer, const at::Tensor& q,
                                                   const at::Tensor& k, const at::Tensor& v)>;
    at::Tensor run(const std::vector<int32_t>& tokens, int64_t firstPosition, bool allLogits,
                   const ProgressFn& progress, const AttentionStep& attend, int64_t stopAfterLayer = -1);

    // Blocked attention for many queries (prefill): GEMMs over query blocks.
    // `columnSums`, when given, receives the probabilities summed over queries, [H, S].
    at::Tensor attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                         int64_t firstPosition, at::Tensor* columnSums = nullptr) const;

    ModelConfig config_;
    ModelWeights weights_;
    c10::Device device_;
    c10::ScalarType dtype_;
    at::Tensor invFreq_;  // [ropeDim / 2] fp32 (RopeFrequencies)
    float ropeMagnitude_ = 1.0f;
    int64_t blockBytes_ = 64ll << 20;
};

}  // namespace kvlens
