// CriticalKV's projected value norms: ||W_o^(h) v_t||_1, a value through query head h's
// slice of the output projection (columns h D .. (h + 1) D of W_o [E, H D]), L1 over E.
// Used for the prompt's values (Capture) and for rows decoded since (DecodeCompressor).
#pragma once

#include <ATen/ATen.h>

#include "kernels/Weight.h"

namespace kvlens::kernels {

// The weight as fp32 [rows, cols] on its own device (a quantised one dequantised on the CPU).
at::Tensor floatWeight(const Weight& w);

// ||W_o^(h) v_t||_1 for each row t of `values` [n, D], through query head `head`'s slice of
// `woFloat` [E, H D] (floatWeight of W_o): fp32 [n] on the values' device, in products of at
// most 2048 rows ([2048, E] fp32 at a time).
at::Tensor projectedValueNorms(const at::Tensor& woFloat, const at::Tensor& values, int64_t head);

}  // namespace kvlens::kernels
