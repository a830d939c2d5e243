// The retrieval testbed: a small Llama (RMSNorm, interleaved RoPE as GGUF's `llama`
// architecture, GQA, SwiGLU, tied embeddings) as LibTorch modules with autograd, so
// the project can train it on the CPU (TestbedTrainer) and write it as an ordinary
// GGUF that LlamaModel loads like any other file.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "engine/tokenizer/LlamaTokenizer.h"

namespace kvlens {

struct TestbedShape {
    int64_t layers = 4;
    int64_t embed = 128;
    int64_t heads = 4;
    int64_t kvHeads = 2;
    int64_t ffn = 384;
    int64_t context = 4096;
    double ropeTheta = 1e6;
    double rmsEps = 1e-5;
    int64_t headDim() const { return embed / heads; }
};

class TestbedModel : public torch::nn::Module {
public:
    // Weights from `seed`: N(0, 0.02), the residual outputs scaled by 1/sqrt(2 layers).
    TestbedModel(const TestbedShape& shape, int64_t vocabSize, uint64_t seed);

    // ids [B, T] (int64) -> logits [B, T, vocab], causal.
    at::Tensor forward(const at::Tensor& ids);

    // As a GGUF: f32 tensors, the vocabulary's tokenizer keys, `metadata` added as
    // kvlens.testbed.* strings (how it was trained).
    void writeGguf(const std::string& path, const LlamaVocab& vocab,
                   const std::vector<std::pair<std::string, std::string>>& metadata) const;

    // Takes every weight from a GGUF this class wrote (to continue a training); throws
    // kvlens::Error naming the file and the tensor that is missing, not f32 or of
    // another shape.
    void loadGguf(const std::string& path);

    const TestbedShape& shape() const { return shape_; }
    int64_t vocabSize() const { return vocab_; }
    int64_t parameterCount() const;

private:
    struct Layer {
        at::Tensor attnNorm, wq, wk, wv, wo, ffnNorm, wGate, wUp, wDown;
    };
    at::Tensor rope(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) const;
    // Every weight with its GGUF tensor name, in the file's order (write and load share it).
    void forEachTensor(const std::function<void(const std::string&, at::Tensor&)>& fn);

    TestbedShape shape_;
    int64_t vocab_;
    at::Tensor embedding_, outputNorm_;
    std::vector<Layer> layers_;
};

}  // namespace kvlens
