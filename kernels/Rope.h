// Rotary position embedding applied in place to query and key heads, in fp32
// whatever the storage dtype: adjacent pairs (llama) or halves (neox, qwen2).
#pragma once

#include <ATen/ATen.h>

namespace kvlens::kernels {

// q: [T, Hq, D], k: [T, Hk, D] (views with unit last stride are fine); token t
// sits at position firstPosition + t. invFreq: fp32 [ropeDim / 2] on q's device.
// cos and sin are multiplied by `magnitude` (YaRN's attention scaling; 1 otherwise).
void rope(at::Tensor& q, at::Tensor& k, int64_t firstPosition, const at::Tensor& invFreq,
          int64_t ropeDim, bool halves, float magnitude = 1.0f);

}  // namespace kvlens::kernels
