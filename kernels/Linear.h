// y = x W^T (+ b): the projections of the forward pass. On CPUs with
// AVX512-BF16, few-row bf16 products (decode) run a bandwidth-bound kernel of
// our own; everything else (prefill, fp32, CUDA) goes to LibTorch's GEMM.
#pragma once

#include <ATen/ATen.h>

namespace kvlens::kernels {

// x: [M, in]; w: [out, in] of x's dtype; bias: [out] or undefined. Returns
// [M, out] in `outType` (x's dtype when absent): fp32 output for the residual
// stream saves a rounding and a conversion.
at::Tensor linear(const at::Tensor& x, const at::Tensor& w, const at::Tensor& bias = {},
                  c10::optional<c10::ScalarType> outType = c10::nullopt);

// Rows of x up to which the CPU bf16 kernel is used (beyond, GEMM wins).
constexpr int64_t kGemvMaxRows = 4;

}  // namespace kvlens::kernels
