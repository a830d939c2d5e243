// Decode attention for a group of G query heads reading one KV head (GQA), per
// instruction set: the keys and values are read once for all of them, each key's
// fp32 dot with every query of the group in vector registers, then each row's fp32
// softmax (a vectorised exp) and weighted values. Each row's arithmetic does not
// depend on the group around it, so a head decodes the same alone (a per-query-head
// compressed cache) as in its group (the full cache). AVX2 and AVX-512 bodies for head
// dimensions 64 and 128 (what Llama, Mistral and Qwen use), each in its own
// translation unit compiled for its set (AttentionGroupAvx2.cpp, AttentionGroupAvx512.cpp)
// from the one body in AttentionGroupBody.h; CausalAttention picks one at run time.
#pragma once

#include <cstdint>

namespace kvlens::kernels {

// qf: G rows of D fp32 queries, already scaled by 1 / sqrt(D); kr, vr: S key and value
// rows (ks1 / vs1 elements apart) of type K (float, or uint16_t holding bf16);
// scores: G * S floats of scratch; out: G rows of D fp32 attention outputs.
template <typename K>
using AttentionGroupFn = void (*)(const float* qf, int G, const K* kr, int64_t ks1, const K* vr, int64_t vs1,
                                  int64_t S, float* scores, float* out);

// scores: G * S floats, row g the fp32 dots of query row g with the S keys (the
// attention's first pass alone: the hit rate's ranking of keys).
template <typename K>
using GroupScoresFn = void (*)(const float* qf, int G, const K* kr, int64_t ks1, int64_t S, float* scores);

struct AttentionGroupTable {
    AttentionGroupFn<float> f32d64, f32d128;
    AttentionGroupFn<uint16_t> bf16d64, bf16d128;
    GroupScoresFn<float> scoresF32d64, scoresF32d128;
    GroupScoresFn<uint16_t> scoresBf16d64, scoresBf16d128;
};

// nullptr off x86-64; whether the CPU runs them is the caller's to check.
const AttentionGroupTable* attentionGroupAvx2();
const AttentionGroupTable* attentionGroupAvx512();

}  // namespace kvlens::kernels
