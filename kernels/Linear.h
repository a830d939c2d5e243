// y = x W^T (+ b): the projections of the forward pass. On CPUs with
// AVX512-BF16, few-row bf16 products (decode) run a bandwidth-bound kernel of
// our own; everything else (prefill, fp32, CUDA) goes to LibTorch's GEMM.
// Weights kept in their file format (Weight, QuantMatrix) take the quantised path.
#pragma once

#include <ATen/ATen.h>

#include <vector>

#include "kernels/Weight.h"

namespace kvlens::kernels {

// x: [M, in]; w: [out, in] of x's dtype; bias: [out] or undefined. Returns
// [M, out] in `outType` (x's dtype when absent): fp32 output for the residual
// stream saves a rounding and a conversion.
at::Tensor linear(const at::Tensor& x, const at::Tensor& w, const at::Tensor& bias = {},
                  c10::optional<c10::ScalarType> outType = c10::nullopt);

// The same for a Weight: a dense one as above; one kept in its file format runs
// QuantMatrix::gemv (on the fastest instruction set CpuFeatures reports) for up to
// kQuantGemvMaxRows rows of x, and beyond that dequantises tiles of rows into x's
// dtype for LibTorch's GEMM.
at::Tensor linear(const at::Tensor& x, const Weight& w, const at::Tensor& bias = {},
                  c10::optional<c10::ScalarType> outType = c10::nullopt);

// Rows `ids` of an embedding, fp32 [ids.size(), cols] on the weight's device.
at::Tensor embeddingRows(const Weight& w, const std::vector<int64_t>& ids);

// Rows of x up to which the CPU bf16 kernel is used (beyond, GEMM wins).
constexpr int64_t kGemvMaxRows = 4;
// Rows of x up to which a quantised weight is read block by block for each row.
constexpr int64_t kQuantGemvMaxRows = 4;
// fp32 bytes of one dequantised tile of a prefill (8 MB: with its compute-dtype copy
// and its GEMM's output, 60 MB less at the peak of a 2048-token chunk than 32 MB
// tiles; 4096 tokens of Q4_K_M prefilled at 246.9 against 251.6 tok/s, one run each).
constexpr int64_t kQuantTileBytes = 8ll << 20;

}  // namespace kvlens::kernels
