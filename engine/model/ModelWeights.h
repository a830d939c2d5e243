// The tensors of a Llama-family model on its device, in torch layout
// ([out, in] for projections), loaded from GGUF or drawn at random.
#pragma once

#include <ATen/ATen.h>

#include <functional>
#include <string>
#include <vector>

#include "engine/model/ModelConfig.h"

namespace kvlens {

class GgufFile;

// Progress of long work: fraction done in [0, 1] and what is being done.
using ProgressFn = std::function<void(double fraction, const std::string& what)>;

// Projections sharing an input are stored fused ([q | k | v], [gate | up]):
// one pass over the input per group, and fewer, larger matrix products.
struct LayerWeights {
    at::Tensor attnNorm, ffnNorm;  // fp32 [embed]
    at::Tensor wqkv;               // [qDim + 2 kvDim, embed], compute dtype
    at::Tensor bqkv;               // [qDim + 2 kvDim]; qwen2 only, undefined otherwise
    at::Tensor qNorm, kNorm;       // fp32 [headDim]; qwen3 only, undefined otherwise
    at::Tensor wo;                 // [embed, qDim]
    at::Tensor wGateUp;            // [2 ffn, embed]
    at::Tensor wDown;              // [embed, ffn]
};

struct ModelWeights {
    at::Tensor tokenEmbedding;  // [vocab, embed]
    std::vector<LayerWeights> layers;
    at::Tensor outputNorm;  // fp32 [embed]
    at::Tensor output;      // [vocab, embed]; the embedding itself when tied
    bool tiedOutput = false;
    // Llama 3.1's RoPE frequency factors (rope_freqs.weight): each rotated
    // pair's frequency is divided by its factor. fp32 [ropeDim / 2], or undefined.
    at::Tensor ropeFreqFactors;
    // ggml type names of the file's tensors, with counts, for `info`.
    std::vector<std::pair<std::string, int>> sourceTypes;

    int64_t bytes() const;

    // Every tensor is dequantised to fp32 and converted to `dtype` on `device`.
    // Throws kvlens::Error naming the file and tensor when one is missing, has
    // an unsupported type, or a shape that disagrees with `config`.
    static ModelWeights fromGguf(const GgufFile& file, const ModelConfig& config,
                                 c10::Device device, c10::ScalarType dtype,
                                 const ProgressFn& progress = {});

    // Uniform weights with each projection's output variance ~1, seeded per
    // tensor so that `:layers=N` is a prefix of the full model.
    static ModelWeights random(const ModelConfig& config, uint64_t seed, c10::Device device,
                               c10::ScalarType dtype, const ProgressFn& progress = {});

    // Bytes the weights would take, to refuse loads that cannot fit.
    static int64_t estimateBytes(const ModelConfig& config, c10::ScalarType dtype);
};

}  // namespace kvlens
