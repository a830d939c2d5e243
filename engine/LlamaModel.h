// The Llama-family forward pass (llama, mistral, qwen2): RMSNorm, RoPE, grouped-
// query attention computed in query blocks, SwiGLU. Prefill and decode share it.
#pragma once

#include <ATen/ATen.h>

#include <vector>

#include "engine/KvCache.h"
#include "engine/ModelConfig.h"
#include "engine/ModelWeights.h"

namespace kvlens {

class LlamaModel {
public:
    LlamaModel(ModelConfig config, ModelWeights weights, c10::Device device, c10::ScalarType dtype);

    // Runs `tokens` at positions cache.length() onwards, appending their keys
    // (after RoPE) and values to `cache`. Returns fp32 logits on the CPU:
    // [vocab] for the last token, or [n, vocab] for every token when `allLogits`.
    // `progress` hears once per layer (prefills of long prompts take minutes).
    at::Tensor forward(const std::vector<int32_t>& tokens, KvCache& cache, bool allLogits = false,
                       const ProgressFn& progress = {});

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
    // Blocked attention for many queries (prefill): GEMMs over query blocks.
    at::Tensor attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                         int64_t firstPosition) const;

    ModelConfig config_;
    ModelWeights weights_;
    c10::Device device_;
    c10::ScalarType dtype_;
    at::Tensor invFreq_;  // [ropeDim / 2] fp32
    int64_t blockBytes_ = 64ll << 20;
};

}  // namespace kvlens
