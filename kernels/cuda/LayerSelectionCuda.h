// Launchers of the CUDA body of kernels::layerSelection, on raw device pointers:
// plain C++ (no LibTorch, no CUDA headers), so nvcc compiles the body alone.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/cuda/ElementType.h"

namespace kvlens::kernels::cuda {

struct VoteProblem {
    const float* queries = nullptr;  // [H, W, D] fp32, contiguous: the voting window queries
    const void* keys = nullptr;      // [KV, T, D], unit stride along D
    ElementType keyType = ElementType::F32;
    int64_t keyHeadStride = 0, keyRowStride = 0;  // in elements
    int queryHeads = 0, kvHeads = 0, headDim = 0, window = 0;
    int64_t promptLength = 0;  // T
    int kernel = 7;            // odd pooling width
    bool maxPool = true;
    bool perQueryHead = false;

    int heads() const { return perQueryHead ? queryHeads : kvHeads; }
    int64_t prefix() const { return promptLength - window; }
};

// The largest head dimension the vote kernels take (shared memory).
constexpr int kMaxVoteHeadDim = 256;

// Device scratch bytes launchLayerScores needs for `p`.
size_t layerScoresWorkspaceBytes(const VoteProblem& p);

// Pooled, grouped votes into `scores` ([heads, T - W] fp32, device). Returns
// nullptr on success, else the CUDA error's text.
const char* launchLayerScores(const VoteProblem& p, float* scores, void* workspace, void* stream);

// Per row of `scores` ([rows, n] fp32, device): the k largest (ties: lower
// index, NaN lowest) ascending, then window positions prefix .. prefix + window - 1
// (prefix = n), into `kept` ([rows, min(k, n) + window] int32, device).
const char* launchTopPositions(const float* scores, int rows, int64_t n, int64_t k, int window,
                               int32_t* kept, void* stream);

}  // namespace kvlens::kernels::cuda
