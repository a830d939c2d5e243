// Rotary position embedding applied in place to query and key heads, in fp32
// whatever the storage dtype: adjacent pairs (llama) or halves (neox, qwen2).
#pragma once

#include <ATen/ATen.h>

#include <vector>

namespace kvlens::kernels {

// q: [T, Hq, D], k: [T, Hk, D] (views with unit last stride are fine); token t
// sits at position firstPosition + t. invFreq: fp32 [ropeDim / 2] on q's device.
// cos and sin are multiplied by `magnitude` (YaRN's attention scaling; 1 otherwise).
void rope(at::Tensor& q, at::Tensor& k, int64_t firstPosition, const at::Tensor& invFreq,
          int64_t ropeDim, bool halves, float magnitude = 1.0f);

// Moves keys already rotated for their positions to other positions: row t of k
// ([T, heads, D], unit last stride) turns by shift[t] positions (negative: earlier), with
// no magnitude (the one it got when first rotated stays). Finch re-rotates the entries it
// keeps to the positions 0 .. n-1 this way.
void ropeShift(at::Tensor& k, const std::vector<int64_t>& shift, const at::Tensor& invFreq, int64_t ropeDim,
               bool halves);

}  // namespace kvlens::kernels
