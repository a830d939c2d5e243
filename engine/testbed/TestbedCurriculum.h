// What the testbed model is trained on, stage by stage: the needle tasks of
// engine/eval (single, multi-key, multi-value, multi-query; random depths and
// lengths) written in the testbed's vocabulary with their answers after the
// question; and rows of random words in which earlier stretches recur at random
// offsets and lengths (a lookup by content: no fixed distance predicts a copy, the
// shortcut a repeat-once task teaches). Stages grow the context. The first stage
// repeats short random strings (random periods): measured on this model, the copy
// circuit then forms within 200 steps (98% of copied tokens right), while random
// chunks alone sat at chance after 400.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <random>
#include <vector>

#include "engine/tokenizer/LlamaTokenizer.h"

namespace kvlens {

struct TestbedStage {
    int64_t length;     // tokens per row
    int64_t batch;      // rows per step
    int64_t steps;
    double copyShare;   // of the rows, copies (the rest needle tasks)
    bool periodic = false;  // copies as a short random string repeated to the end
};

struct TestbedBatch {
    at::Tensor ids;      // [B, T] int64
    at::Tensor targets;  // [B, T] int64: the next token
    at::Tensor weights;  // [B, T] float: 1 on answers and copies, lmWeight elsewhere, 0 on padding
    at::Tensor answer;   // [B, T] bool: the targets that are answer (or copied) tokens
    std::vector<bool> copy;  // per row
};

class TestbedCurriculum {
public:
    TestbedCurriculum(const LlamaTokenizer& tokenizer, uint64_t seed, double lmWeight = 0.1);

    // Periodic copies at 64 tokens, then 128 -> 4096 tokens of needle tasks with chunk
    // copies fading from half the rows.
    static std::vector<TestbedStage> standardStages();

    TestbedBatch batch(const TestbedStage& stage);

    // One needle-task row's token ids with the answer ("prompt: 1234567.\n") and where
    // the answer starts. Throws if `length` cannot hold the task.
    std::vector<int32_t> needleRow(int64_t length, int64_t& answerStart);

private:
    uint64_t below(uint64_t n) { return rng_() % n; }

    const LlamaTokenizer& tokenizer_;
    std::mt19937_64 rng_;
    double lmWeight_;
    std::vector<int32_t> spanTokens_;  // the 128 words and digits copies are made of
};

}  // namespace kvlens
