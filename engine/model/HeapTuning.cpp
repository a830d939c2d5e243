#include "engine/model/HeapTuning.h"

#include <cstdlib>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace kvlens {

void limitHeapFragmentation() {
#if defined(__GLIBC__)
    // A threshold the user set (MALLOC_MMAP_THRESHOLD_) is theirs to keep.
    static const bool done = [] {
        return std::getenv("MALLOC_MMAP_THRESHOLD_") != nullptr || mallopt(M_MMAP_THRESHOLD, 4 << 20) == 1;
    }();
    (void)done;
#endif
}

}  // namespace kvlens
