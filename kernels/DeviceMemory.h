// GPU memory as LibTorch's CUDA caching allocator counts it (what our tensors
// hold and the allocator keeps), with resettable peaks, for the benchmarks.
#pragma once

#include <c10/core/Device.h>

#include <cstdint>
#include <optional>

namespace kvlens::kernels {

struct DeviceMemory {
    int64_t allocated = 0, peakAllocated = 0;  // bytes in live tensors
    int64_t reserved = 0, peakReserved = 0;    // bytes the allocator holds from the driver
};

// The allocator's counts for a CUDA device; nullopt on the CPU or in a build
// whose LibTorch has no CUDA.
std::optional<DeviceMemory> deviceMemory(const c10::Device& device);

// Starts the peaks again from the current counts (no-op where deviceMemory is nullopt).
void resetPeakDeviceMemory(const c10::Device& device);

// Waits for the device's queued work (no-op on the CPU), so wall-clock timings
// cover the kernels and not only their launch.
void synchronizeDevice(const c10::Device& device);

}  // namespace kvlens::kernels
