// kvpress's ChunkKVPress (the port people run in kvpress; `chunkkv` is the authors' form):
// the scorer's scores (--scorer, SnapKV's pooled votes by default; NaN where the scorer itself
// always keeps: SnapKV's window, the sinks of Expected Attention, CUR, LagKV, Compactor, KVzip,
// LagKV's tail, Compactor's window; kvpress's scorers pad those with the layer's highest
// score + 1, and so here; no window is added for the other scorers, as in kvpress) summed
// over the layer's heads, then averaged per chunk of `chunk` positions from position 0 (the
// last chunk as long as the prompt leaves it, averaged over its own length); the best
// max(1, floor(chunks x B / T)) chunks (with --budget R%, floor(chunks x R)) are kept whole,
// the same positions in every head of the layer (ties to the lower chunk). So it may keep up
// to a chunk more or less than B, and the window only as far as its chunks win.
#pragma once

#include <vector>

#include "engine/compress/presses/Press.h"
#include "engine/compress/presses/PressScores.h"

namespace kvlens {

class ChunkKvKvpressPress : public Press {
public:
    // The chunks kept of `chunks` for budget B of a T-token prompt (`ratio` > 0: the kept
    // share given as a ratio), as kvpress computes it: max(1, floor(chunks x (1 - compression))).
    static int64_t keptChunks(int64_t chunks, int64_t budget, int64_t promptLength, double ratio);
    // What the chunks are ranked by: the layer's `scores` (presses::scorerScores, [head][T]) with
    // NaN as the layer's highest + 1, summed over the heads, averaged per chunk (ceil(T / chunk)).
    static std::vector<float> chunkMeans(const presses::HeadScores& scores, int64_t chunk);

protected:
    void fill(const Capture& capture, const PressParams& params, int64_t budget,
              Selection& selection) const override;
};

}  // namespace kvlens
