#include "kernels/DeviceMemory.h"

#ifdef KVLENS_TORCH_HAS_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#endif

namespace kvlens::kernels {

// Index 0 of the allocator's stat arrays is the aggregate over its pools
// (StatType::AGGREGATE, whose namespace moved between LibTorch 1.13 and 2.x).
std::optional<DeviceMemory> deviceMemory(const c10::Device& device) {
#ifdef KVLENS_TORCH_HAS_CUDA
    if (device.is_cuda()) {
        const auto index = device.has_index() ? device.index() : c10::cuda::current_device();
        const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(index);
        DeviceMemory m;
        m.allocated = stats.allocated_bytes[0].current;
        m.peakAllocated = stats.allocated_bytes[0].peak;
        m.reserved = stats.reserved_bytes[0].current;
        m.peakReserved = stats.reserved_bytes[0].peak;
        return m;
    }
#endif
    (void)device;
    return std::nullopt;
}

void resetPeakDeviceMemory(const c10::Device& device) {
#ifdef KVLENS_TORCH_HAS_CUDA
    if (device.is_cuda()) {
        c10::cuda::CUDACachingAllocator::resetPeakStats(
            device.has_index() ? device.index() : c10::cuda::current_device());
    }
#endif
    (void)device;
}

void synchronizeDevice(const c10::Device& device) {
#ifdef KVLENS_TORCH_HAS_CUDA
    if (device.is_cuda()) {
        const c10::cuda::CUDAGuard guard(device);
        c10::cuda::device_synchronize();
    }
#endif
    (void)device;
}

}  // namespace kvlens::kernels
