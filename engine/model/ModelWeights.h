// The tensors of a Llama-family model on its device, in torch layout
// ([out, in] for projections), loaded from GGUF or drawn at random.
#pragma once

#include <ATen/ATen.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/model/ModelConfig.h"
#include "kernels/Weight.h"

namespace kvlens {

class GgufFile;

// Progress of long work: fraction done in [0, 1] and what is being done.
using ProgressFn = std::function<void(double fraction, const std::string& what)>;

// Projections sharing an input are stored fused ([q | k | v], [gate | up]):
// one pass over the input per group, and fewer, larger matrix products.
// The matrices are kernels::Weight: on the CPU a GGUF file's F16, BF16 and quantised
// tensors stay in the file's format, read in place from its mapping (which they keep
// alive); fp32 files, random models and GPU models hold dense tensors in the compute
// dtype.
struct LayerWeights {
    at::Tensor attnNorm, ffnNorm;  // fp32 [embed]
    kernels::Weight wqkv;          // [qDim + 2 kvDim, embed]
    at::Tensor bqkv;               // [qDim + 2 kvDim]; qwen2 only, undefined otherwise
    at::Tensor qNorm, kNorm;       // fp32 [headDim]; qwen3 and gemma3 only, undefined otherwise
    at::Tensor attnPostNorm, ffnPostNorm;  // fp32 [embed]; gemma2/3 only (ModelConfig::postNorms)
    kernels::Weight wo;            // [embed, qDim]
    kernels::Weight wGateUp;       // [2 ffn, embed]
    kernels::Weight wDown;         // [embed, ffn]
};

struct ModelWeights {
    kernels::Weight tokenEmbedding;  // [vocab, embed]
    std::vector<LayerWeights> layers;
    at::Tensor outputNorm;    // fp32 [embed]
    kernels::Weight output;   // [vocab, embed]; the embedding itself when tied
    bool tiedOutput = false;
    // Llama 3.1's RoPE frequency factors (rope_freqs.weight): each rotated
    // pair's frequency is divided by its factor. fp32 [ropeDim / 2], or undefined.
    at::Tensor ropeFreqFactors;
    // ggml type names of the file's tensors, with counts, for `info`.
    std::vector<std::pair<std::string, int>> sourceTypes;

    int64_t bytes() const;

    // On the CPU, matrices of types other than F32 are kept in the file's format;
    // the others (and every matrix on a GPU) are dequantised to fp32 and converted
    // to `dtype` on `device`. Throws kvlens::Error naming the file and tensor when one
    // is missing, has an unsupported type, or a shape that disagrees with `config`.
    static ModelWeights fromGguf(const std::shared_ptr<const GgufFile>& file, const ModelConfig& config,
                                 c10::Device device, c10::ScalarType dtype,
                                 const ProgressFn& progress = {});
    // Whether a load of `file` on `device` reads some matrix in the file's format.
    static bool readsInPlace(const GgufFile& file, c10::Device device);
    // Bytes a load of `file` allocates beyond its mapping: the dense matrices.
    static int64_t denseBytes(const GgufFile& file, const ModelConfig& config, c10::Device device,
                              c10::ScalarType dtype);

    // Uniform weights with each projection's output variance ~1, seeded per
    // tensor so that `:layers=N` is a prefix of the full model.
    static ModelWeights random(const ModelConfig& config, uint64_t seed, c10::Device device,
                               c10::ScalarType dtype, const ProgressFn& progress = {});

    // Bytes the weights would take, to refuse loads that cannot fit.
    static int64_t estimateBytes(const ModelConfig& config, c10::ScalarType dtype);
};

}  // namespace kvlens
