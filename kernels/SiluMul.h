// The SwiGLU gate: silu(gate) * up from the fused [gate | up] projection,
// computed in fp32 and stored in the compute dtype, in one pass.
#pragma once

#include <ATen/ATen.h>

namespace kvlens::kernels {

// gateUp: [T, 2F] (gate in the first F columns). Returns [T, F] of gateUp's dtype.
at::Tensor siluMul(const at::Tensor& gateUp);

}  // namespace kvlens::kernels
