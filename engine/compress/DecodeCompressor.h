// Compression during decoding, as kvpress's DecodingPress: every `every` decode steps,
// each head of a compressed cache longer than the budget keeps `budget` of its rows,
// chosen by the method's rule on what the cache holds then:
//   streamingllm  its original rolling form: the first `sinks` rows and the most recent
//   knorm         the rows of lowest key L2 norm
//   keydiff       the rows least similar to the anchor (the mean of the head's unit keys)
// (ties to the lower row). So a long output stays within the budget. Kept keys carry
// the RoPE rotation of their original positions and new tokens take the next original
// position: no re-rotation is needed while the sequence stays within the model's
// context (StreamingLLM's re-indexing to run past it is not done here).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/PressParams.h"
#include "engine/compress/CompressedCache.h"

namespace kvlens {

class DecodeCompressor {
public:
    // Throws kvlens::Error naming --decode-every for a method without a decode form,
    // an `every` below 1, or a budget that is a ratio (decoding needs entries).
    DecodeCompressor(const PressParams& params, int64_t every);
    static bool supports(const std::string& method);
    static const char* supportedList() { return "streamingllm, knorm, keydiff"; }

    // Call after each decode step on `cache` (which must not borrow the capture's
    // buffers): compresses when the step is due. Returns whether it dropped any row.
    bool afterStep(CompressedCache& cache);

    int64_t budget() const { return budget_; }
    int64_t every() const { return every_; }

private:
    // The `budget` rows head `head` of `layer` keeps of `cache` (longer than the budget),
    // ascending.
    std::vector<int64_t> keptRows(const CompressedCache& cache, int64_t layer, int64_t head) const;

    PressParams params_;
    int64_t budget_ = 0, every_ = 1, steps_ = 0;
};

}  // namespace kvlens
