// The CPU allocator of every LibTorch tensor once installed: blocks of 1 MB and
// more are anonymous mappings (transparent huge pages asked for) kept on free,
// up to a bound, and handed out again for the next request of about that size (or
// grown in place for one up to a third larger); smaller ones go to LibTorch's default
// allocator.
//
// Why: a forward pass allocates and frees the same few large temporaries layer
// after layer. glibc maps each one afresh above its mmap threshold, so every
// page of every temporary faults in again: measured on the TinyLlama shape
// (Q4_K_M, 2 threads), 14.4 million page faults and 44% of the CPU time in the
// kernel for one 2048-token prefill. Serving them from the heap instead (a high
// threshold) removed the faults but let the growing attention blocks of an
// 8192-token prefill fragment the heap to 4.9 GB resident. Reusing whole
// blocks does neither: sizes repeat from layer to layer and chunk to chunk.
#pragma once

#include <c10/core/Allocator.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <unordered_map>

namespace kvlens {

class CachingHostAllocator : public c10::Allocator {
public:
    static constexpr size_t kLargeBytes = size_t(1) << 20;  // from here on, cached mappings
    static constexpr size_t kDefaultCacheBytes = size_t(512) << 20;  // idle bytes kept at most

    // Makes it LibTorch's CPU allocator (once; later calls do nothing). Returns it.
    static CachingHostAllocator& install();

    c10::DataPtr allocate(size_t bytes) const override;
    // The raw interface (some LibTorch code frees through it): context == data.
    c10::DeleterFnPtr raw_deleter() const override { return &CachingHostAllocator::free; }

    // Idle bytes held for reuse, how many large requests a held block served as it was,
    // and how many it served grown (mremap) from up to a quarter smaller.
    size_t cachedBytes() const;
    int64_t reuses() const;
    int64_t grows() const;
    // Unmaps every idle block.
    void release() const;

private:
    static void free(void* data);
    void keep(void* data, size_t size) const;

    mutable std::mutex mutex_;
    mutable std::unordered_map<void*, size_t> live_;  // large blocks handed out -> mapped size
    mutable std::multimap<size_t, void*> idle_;       // mapped size -> block
    mutable size_t idleBytes_ = 0;
    mutable int64_t reuses_ = 0;
    mutable int64_t grows_ = 0;
    size_t cacheBytes_ = kDefaultCacheBytes;
};

}  // namespace kvlens
