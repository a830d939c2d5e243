// Causal grouped-query attention for a few new queries against the cache
// (decode): one fused pass per head — scores, fp32 softmax, weighted values —
// where the tensor-op version pays more in dispatch than in arithmetic.
#pragma once

#include <ATen/ATen.h>

namespace kvlens::kernels {

// q: [T, H, D] (unit last stride); k, v: [KV, S, D] with S = firstPosition + T;
// query head h reads KV head h / (H / KV); query t sees keys 0..firstPosition+t.
// Returns [T, H * D] in q's dtype. Only CPU tensors; callers use their
// blocked GEMM path elsewhere (see useFusedAttention).
at::Tensor causalAttention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                           int64_t firstPosition);

// Whether causalAttention serves this call: CPU, f32/bf16, and few queries.
bool useFusedAttention(const at::Tensor& q, const at::Tensor& k);

}  // namespace kvlens::kernels
