// KVzip's repeat prompt (Kim et al., 2025, "KVzip: Query-Agnostic KV Cache Compression with
// Context Reconstruction"), in one model's tokens: what the model reads after the prompt
// before it repeats a chunk of it, as kvpress's KVzipPress words it for a model without a
// chat template.
#pragma once

#include <cstdint>
#include <vector>

namespace kvlens {

class Tokenizer;

struct RepeatPrompt {
    std::vector<int32_t> first;   // "\n\nRepeat the previous context exactly."
    std::vector<int32_t> later;   // "\n\nRepeat the part of the previous context exactly, starting with"
    std::vector<int32_t> suffix;  // "\n", after which the chunk itself follows
    // The previous chunk's last tokens that follow `later` (kvpress's prev_postfix_size).
    static constexpr int64_t kCarried = 8;

    bool empty() const { return first.empty(); }
    // The texts in `tokenizer`'s ids, without BOS.
    static RepeatPrompt from(const Tokenizer& tokenizer);
};

}  // namespace kvlens
