// Picks the next token from logits: greedy (argmax, ties to the lowest id) or
// temperature / top-k / top-p sampling from a seeded generator.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <random>

namespace kvlens {

struct SamplingParams {
    double temperature = 0.0;  // 0: greedy
    int64_t topK = 0;          // 0: all tokens
    double topP = 1.0;         // 1: no nucleus cut
    uint64_t seed = 0;
};

class Sampler {
public:
    // Throws kvlens::Error naming the flag of an out-of-range parameter.
    explicit Sampler(const SamplingParams& params);

    // `logits`: fp32 [vocab] on the CPU.
    int32_t sample(const at::Tensor& logits);

    static int32_t argmax(const float* logits, int64_t n);

private:
    SamplingParams params_;
    std::mt19937_64 rng_;
};

}  // namespace kvlens
