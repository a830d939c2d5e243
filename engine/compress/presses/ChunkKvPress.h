// ChunkKV (Liu et al., 2025, "ChunkKV: Semantic-Preserving KV Cache Compression for
// Efficient Long-Context LLM Inference"): SnapKV's window votes (unpooled) summed over
// chunks of `chunk` consecutive prefix positions; each head keeps its best
// floor((B - W) / chunk) chunks whole, plus the window, as in the KVCache-Factory code
// the paper's experiments ran on (so it may keep up to chunk - 1 entries fewer than B;
// the last prefix chunk may be short). kvpress's ChunkKVPress instead sums the scores
// over a layer's heads, averages them per chunk and keeps the same chunks in every head.
// With --scorer (PressParams::scorerNames) the chunks sum that scorer's scores instead,
// over the positions between its sinks (kept) and the window: chunk i covers
// sinks + i x chunk onwards, and floor((B - W - sinks) / chunk) chunks are kept.
#pragma once

#include "engine/compress/presses/Press.h"

namespace kvlens {

class ChunkKvPress : public Press {
public:
    std::vector<std::vector<float>> scores(const Capture& capture, const PressParams& params,
                                           int64_t layer) const override;
protected:
    void fill(const Capture& capture, const PressParams& params, int64_t budget,
              Selection& selection) const override;
};

}  // namespace kvlens
