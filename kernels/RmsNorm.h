// RMSNorm of the fp32 residual stream, written straight into the compute
// dtype: one pass instead of six tensor ops (decode is op-overhead bound).
#pragma once

#include <ATen/ATen.h>

namespace kvlens::kernels {

// x: fp32 [T, E]; weight: fp32 [E]. Returns x * rsqrt(mean(x^2) + eps) * weight in `outType`.
at::Tensor rmsNorm(const at::Tensor& x, const at::Tensor& weight, double eps,
                   c10::ScalarType outType);

}  // namespace kvlens::kernels
