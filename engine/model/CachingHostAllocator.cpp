#include "engine/model/CachingHostAllocator.h"

#include <c10/core/CPUAllocator.h>
#include <c10/core/impl/alloc_cpu.h>
#include <sys/mman.h>

#include <iterator>
#include <new>

namespace kvlens {
namespace {

constexpr size_t kPage = size_t(2) << 20;  // a huge page: mappings are whole ones

size_t roundUp(size_t n) { return (n + kPage - 1) / kPage * kPage; }

const CachingHostAllocator* installed = nullptr;

}  // namespace

CachingHostAllocator& CachingHostAllocator::install() {
    static CachingHostAllocator* const instance = [] {
        auto* a = new CachingHostAllocator();  // lives as long as any tensor may
        installed = a;
        c10::SetCPUAllocator(a, /*priority=*/1);
        return a;
    }();
    return *instance;
}

c10::DataPtr CachingHostAllocator::allocate(size_t bytes) const {
    if (bytes < kLargeBytes) {
        void* p = c10::alloc_cpu(bytes);
        return c10::DataPtr(p, p, &CachingHostAllocator::free, c10::Device(c10::kCPU));
    }
    const size_t size = roundUp(bytes);
    void* p = nullptr;
    size_t mapped = size;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        // The smallest idle block that fits, unless it would waste more than a quarter.
        auto it = idle_.lower_bound(size);
        if (it != idle_.end() && it->first <= size + size / 4) {
            p = it->second;
            mapped = it->first;
            idleBytes_ -= it->first;
            idle_.erase(it);
            ++reuses_;
            live_.emplace(p, mapped);
        }
    }
    if (p == nullptr) {
        // A request a little larger than an idle block (the attention's blocks grow by
        // a few keys at a time) grows that block: its pages stay, only the new tail
        // faults in.
        void* grown = nullptr;
        size_t from = 0;
        {
            std::lock_guard<std::mutex> lock(mutex_);
            auto it = idle_.lower_bound(size);
            if (it != idle_.begin() && std::prev(it)->first >= size - size / 4) {
                --it;
                grown = it->second;
                from = it->first;
                idleBytes_ -= it->first;
                idle_.erase(it);
            }
        }
        if (grown != nullptr) {
            void* moved = mremap(grown, from, size, MREMAP_MAYMOVE);
            if (moved == MAP_FAILED) {
                munmap(grown, from);
            } else {
                std::lock_guard<std::mutex> lock(mutex_);
                ++grows_;
                live_.emplace(moved, size);
                return c10::DataPtr(moved, moved, &CachingHostAllocator::free, c10::Device(c10::kCPU));
            }
        }
        p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) throw std::bad_alloc();
#ifdef MADV_HUGEPAGE
        madvise(p, size, MADV_HUGEPAGE);
#endif
        std::lock_guard<std::mutex> lock(mutex_);
        live_.emplace(p, size);
    }
    return c10::DataPtr(p, p, &CachingHostAllocator::free, c10::Device(c10::kCPU));
}

void CachingHostAllocator::free(void* data) {
    if (data == nullptr) return;
    size_t size = 0;
    {
        std::lock_guard<std::mutex> lock(installed->mutex_);
        auto it = installed->live_.find(data);
        if (it != installed->live_.end()) {
            size = it->second;
            installed->live_.erase(it);
        }
    }
    if (size == 0) {
        c10::free_cpu(data);  // a small block (c10::alloc_cpu)
        return;
    }
    installed->keep(data, size);
}

void CachingHostAllocator::keep(void* data, size_t size) const {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        if (idleBytes_ + size <= cacheBytes_) {
            idle_.emplace(size, data);
            idleBytes_ += size;
            return;
        }
    }
    munmap(data, size);
}

size_t CachingHostAllocator::cachedBytes() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return idleBytes_;
}

int64_t CachingHostAllocator::reuses() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return reuses_;
}

int64_t CachingHostAllocator::grows() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return grows_;
}

void CachingHostAllocator::release() const {
    std::multimap<size_t, void*> idle;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        idle.swap(idle_);
        idleBytes_ = 0;
    }
    for (auto& [size, data] : idle) munmap(data, size);
}

}  // namespace kvlens
