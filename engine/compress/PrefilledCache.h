// The cache a method builds by its own prefill rather than by gathering from the capture's
// KV (Finch: the context prefilled chunk by chunk, evicting as it goes, keys re-rotated):
// what CompressedCache copies in place of the gather, and the logits it leaves after the
// prompt (the first answer token is the method's own).
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <vector>

namespace kvlens {

struct PrefilledCache {
    std::vector<at::Tensor> keys, values;  // per layer [KV, B, D], after RoPE at positions 0 .. B-1
    std::vector<at::Tensor> kept;          // per layer int64 [B]: the prompt position each row holds, ascending
    at::Tensor lastLogits;                 // fp32 [vocab] after the prompt's last token
    // Rows per head, and the position the first decoded token takes (the rows sit at 0 .. B-1).
    int64_t length() const { return kept.empty() ? 0 : kept[0].size(0); }
    explicit operator bool() const { return !keys.empty(); }
};

}  // namespace kvlens
