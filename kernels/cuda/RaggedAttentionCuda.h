// Launcher of the CUDA body of kernels::raggedAttention (decode over a
// compressed cache whose heads have different lengths), on raw device pointers:
// plain C++ (no LibTorch, no CUDA headers), so nvcc compiles the body alone.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/cuda/ElementType.h"

namespace kvlens::kernels::cuda {

// Limits of the table passed by value to the kernel (kernel parameters stay
// under 4 KB); larger models fall back to the composite body.
constexpr int kMaxRaggedCacheHeads = 64;
constexpr int kMaxRaggedQueryHeads = 128;
constexpr int kMaxRaggedHeadDim = 256;

struct RaggedCacheHead {
    const void* keys = nullptr;    // [length, D] rows, keyRowStride elements apart
    const void* values = nullptr;  // [length, D] rows, valueRowStride elements apart
    int64_t keyRowStride = 0, valueRowStride = 0;
    int64_t length = 0;
};

struct RaggedProblem {
    const void* query = nullptr;  // [H, D], rows queryHeadStride elements apart
    int64_t queryHeadStride = 0;
    void* out = nullptr;  // [H, D] contiguous, same element type
    ElementType type = ElementType::F32;
    int queryHeads = 0, cacheHeads = 0, headDim = 0;
    RaggedCacheHead heads[kMaxRaggedCacheHeads];
    uint8_t headOf[kMaxRaggedQueryHeads] = {};  // query head -> cache head
};

// Device scratch bytes launchRaggedAttention needs for `p`.
size_t raggedAttentionWorkspaceBytes(const RaggedProblem& p);

// Split over key chunks, then a combine per head. Returns nullptr on success,
// else the CUDA error's text.
const char* launchRaggedAttention(const RaggedProblem& p, void* workspace, void* stream);

}  // namespace kvlens::kernels::cuda
