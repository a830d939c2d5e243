#include "engine/compress/presses/ChunkKvPress.h"

#include <algorithm>

#include "engine/compress/presses/PressScores.h"

namespace kvlens {

void ChunkKvPress::fill(const Capture& capture, const PressParams& p, int64_t budget,
                        Selection& s) const {
    const int64_t T = capture.promptLength(), W = p.window, c = p.chunk, prefix = T - W;
    const int64_t keepChunks = (budget - W) / c, chunks = (prefix + c - 1) / c;
    // validate() made sure at least one chunk fits beside the window.
    for (int64_t l = 0; l < capture.layers(); ++l) {
        const presses::HeadScores votes = presses::windowVotes(capture, l, W, s.gqa);
        for (size_t h = 0; h < votes.size(); ++h) {
            std::vector<int32_t> kept;  // votes[h] holds the prefix's `prefix` positions
            for (int32_t chunk : presses::topPositions(presses::chunkSums(votes[h], c),
                                                       std::min(keepChunks, chunks)))
                for (int64_t i = chunk * c; i < std::min(prefix, (chunk + 1) * c); ++i)
                    kept.push_back(int32_t(i));
            s.kept[l][h] = presses::withWindow(std::move(kept), T, W);
        }
    }
}

}  // namespace kvlens
