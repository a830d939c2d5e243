// Builds small Llama-family GGUF models with seeded random weights for tests,
// keeping the weights so a test can run its own reference forward pass.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "support/GgufBuilder.h"

namespace kvlens::test {

struct TinyModelShape {
    std::string architecture = "llama";  // llama | mistral | qwen2 (bias, neox RoPE) | qwen3 (q/k norm, neox)
    int64_t layers = 2, embed = 32, heads = 4, kvHeads = 2, ffn = 48, context = 64;
    int64_t ropeDim = 0;  // 0: the head dimension
    double ropeTheta = 10000.0;
    bool tiedOutput = false;
    bool llama3Rope = false;  // a rope_freqs.weight tensor of frequency factors (Llama 3.1)
    std::string chatTemplate;               // tokenizer.chat_template, when not empty
    std::vector<std::string> controlTokens;  // appended to the vocabulary as control tokens
    uint64_t seed = 1;
};

struct TinyModelFile {
    TinyModelShape shape;
    int64_t vocab = 0;
    // Weights by tensor name, flat in ggml order (shape[0] fastest).
    std::map<std::string, std::vector<float>> weights;
    GgufBuilder builder;  // complete: metadata, vocabulary and every tensor
};

// The vocabulary is a SentencePiece-style one: <unk>, <s>, </s>, the 256 byte
// tokens, then a few pieces ("▁the", "▁a", ...).
TinyModelFile makeTinyModelFile(const TinyModelShape& shape);

// A path under the build folder that a test may write; `name` must be unique per test.
std::string testOutputPath(const std::string& name);

}  // namespace kvlens::test
