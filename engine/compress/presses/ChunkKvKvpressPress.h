// kvpress's ChunkKVPress (the port people run in kvpress; `chunkkv` is the authors' form):
// the scorer's scores as kvpress's scorer press gives them (kvpressScores), summed over the
// layer's heads, averaged per chunk of `chunk` positions from position 0 (the last chunk as
// long as the prompt leaves it, averaged over its own length); the best
// max(1, floor(chunks x B / T)) chunks (with --budget R%, floor(chunks x (1 - (1 - R))), as
// kvpress computes 1 - compression_ratio) are kept whole, the same positions in every head of
// the layer (ties to the lower chunk). So it may keep up to a chunk more or less than B, and
// the window only as far as its chunks win.
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
    // The scorer's scores of `layer` per head over all T positions, in kvpress's convention,
    // no NaN: presses::scorerScores (no window added), then where the scorer always keeps
    // (NaN there) the value kvpress's press pads with: the layer's highest + 1 (SnapKV's
    // window, Expected Attention's sinks, TOVA's last position, which kvpress's TOVAPress
    // keeps; also KVzip's sinks, H2O's and CAKE's window, which kvpress cannot wrap), the
    // highest (Compactor's ends), 1.0 (CUR's and LagKV's sinks, LagKV's tail). SnapKV's votes
    // are divided by the window (kvpress averages the window's rows), LagKV's halved (kvpress's
    // cross_scoring form, (key + value) / 2; under --convention kvpress its default form, each
    // score's rank in its partition / lag); a prompt shorter than sinks + 2 lag, where LagKV
    // scores nothing, gets kvpress's ramp (t - sinks) / (T - sinks) after sinks of 1.0.
    static presses::HeadScores kvpressScores(const Capture& capture, int64_t layer, const PressParams& params);
    // What the chunks are ranked by: `scores` ([head][T], no NaN) summed over the heads,
    // averaged per chunk (ceil(T / chunk) of them).
    static std::vector<float> chunkMeans(const presses::HeadScores& scores, int64_t chunk);

public:
    std::vector<std::vector<float>> scores(const Capture& capture, const PressParams& params,
                                           int64_t layer) const override;
protected:
    void fill(const Capture& capture, const PressParams& params, int64_t budget,
              Selection& selection) const override;
};

}  // namespace kvlens
