// The GeGLU gate of Gemma 2 and 3: gelu_tanh(gate) * up from the fused [gate | up]
// projection, with GELU's tanh approximation (Hugging Face's gelu_pytorch_tanh,
// llama.cpp's ggml_gelu), computed in fp32 and stored in the compute dtype.
#pragma once

#include <ATen/ATen.h>

namespace kvlens::kernels {

// gateUp: [T, 2F] (gate in the first F columns). Returns [T, F] of gateUp's dtype.
at::Tensor geluMul(const at::Tensor& gateUp);

}  // namespace kvlens::kernels
