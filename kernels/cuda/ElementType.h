// The element types the CUDA kernels read (compute dtypes of the model), named
// without LibTorch so that launcher headers stay plain C++.
#pragma once

namespace kvlens::kernels::cuda {

enum class ElementType : int { F32, BF16, F16 };

}  // namespace kvlens::kernels::cuda
