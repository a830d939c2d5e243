// Causal grouped-query attention for a few new queries against the cache
// (decode): one fused pass per head — scores, fp32 softmax, weighted values —
// where the tensor-op version pays more in dispatch than in arithmetic.
#pragma once

#include <ATen/ATen.h>

#include <vector>

namespace kvlens::kernels {

// q: [T, H, D] (unit last stride); k, v: [KV, S, D] with S = firstPosition + T;
// query head h reads KV head h / (H / KV); query t sees keys 0..firstPosition+t.
// Returns [T, H * D] in q's dtype. Only CPU tensors; callers use their
// blocked GEMM path elsewhere (see useFusedAttention).
at::Tensor causalAttention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                           int64_t firstPosition);

// Gemma 2's attention (and final) logit soft-capping, in place: x -> cap tanh(x / cap);
// nothing for cap <= 0. Applied to the scaled logits before the causal mask.
void softcapLogits(at::Tensor& logits, double cap);

// One new query per head against a compressed cache whose heads have different
// lengths (AdaKV): q [1, H, D]; keys/values[c] [length_c, D] for cache head c
// (rows contiguous); query head h reads cache head headOf[h]. No padding to the
// longest head. Returns [1, H * D] in q's dtype. CPU body for f32/bf16 on the
// CPU; a CUDA body (kernels/cuda/RaggedAttentionCuda.cu) for f32/bf16/f16 on a
// GPU when the build has it; LibTorch ops per head for anything else, and for a
// `softcap` > 0 (Gemma 2's attention logit soft-cap, applied to the scaled logits).
at::Tensor raggedAttention(const at::Tensor& q, const std::vector<at::Tensor>& keys,
                           const std::vector<at::Tensor>& values, const std::vector<int64_t>& headOf,
                           double softcap = 0.0);

// The dot product of each query head with every key of its KV head, unscaled:
// q [H, D] (any float dtype), k [KV, S, D] (unit last stride); fp32 [H, S] with
// query head h against KV head h / (H / KV). On the CPU, f32/bf16 keys of head
// dimension 64 or 128 are read in place, never copied to fp32.
at::Tensor queryKeyScores(const at::Tensor& q, const at::Tensor& k);

// Whether causalAttention serves this call: CPU, f32/bf16, and few queries.
bool useFusedAttention(const at::Tensor& q, const at::Tensor& k);

}  // namespace kvlens::kernels
