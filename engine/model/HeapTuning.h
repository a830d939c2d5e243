// Keeps long prefills from fragmenting the C heap. glibc serves allocations
// below its mmap threshold from the heap, and raises that threshold (up to
// 32 MB) each time a larger mapped block is freed; a prefill's many
// different-sized temporaries of a few MB then fragment the heap, which is
// never given back. Measured: a one-layer tinyllama-1.1b prefill of 8192 tokens
// peaked at 2.94 GB resident with the default, 1.1 GB with a fixed 4 MB
// threshold, at the same speed there (665 against 724 tokens/s); but short
// prefills lost 5-8% (tinyllama 512 tokens: 66.6 against 71.6 tokens/s), so
// only a long prefill (kLongPrefill tokens or more) turns it on.
#pragma once

#include <cstdint>

namespace kvlens {

constexpr int64_t kLongPrefill = 2048;

// Fixes the mmap threshold at 4 MB (no-op outside glibc, or when the
// environment sets MALLOC_MMAP_THRESHOLD_). Idempotent; LlamaModel::forward
// calls it for prefills of kLongPrefill tokens or more.
void limitHeapFragmentation();

}  // namespace kvlens
