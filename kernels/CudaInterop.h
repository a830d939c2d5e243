// What the at::Tensor-level dispatch needs to call a CUDA launcher: the
// element type, the current stream of a device, and errors as exceptions.
// Compiled only where LibTorch has CUDA (KVLENS_WITH_CUDA_KERNELS).
#pragma once

#ifdef KVLENS_WITH_CUDA_KERNELS

#include <ATen/ATen.h>
#include <c10/cuda/CUDAStream.h>

#include <optional>
#include <stdexcept>
#include <string>

#include "kernels/cuda/ElementType.h"

namespace kvlens::kernels::cuda {

inline std::optional<ElementType> elementTypeOf(c10::ScalarType type) {
    switch (type) {
        case at::kFloat:
            return ElementType::F32;
        case at::kBFloat16:
            return ElementType::BF16;
        case at::kHalf:
            return ElementType::F16;
        default:
            return std::nullopt;
    }
}

// The stream LibTorch queues work on for `device`, as the launchers take it.
inline void* currentStream(const c10::Device& device) {
    return static_cast<void*>(c10::cuda::getCurrentCUDAStream(device.index()).stream());
}

// A launcher's error text (nullptr: none) as an exception naming the kernel.
inline void check(const char* error, const char* kernel) {
    if (error) throw std::runtime_error(std::string(kernel) + ": " + error);
}

}  // namespace kvlens::kernels::cuda

#endif  // KVLENS_WITH_CUDA_KERNELS
