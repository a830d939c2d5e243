#include "engine/compress/presses/ChunkKvPress.h"

#include <algorithm>

#include "engine/compress/presses/PressScores.h"

namespace kvlens {

void ChunkKvPress::fill(const Capture& capture, const PressParams& p, int64_t budget,
                        Selection& s) const {
    // The window, or with --scorer lagkv LagKV's tail when longer: kept whole.
    const int64_t T = capture.promptLength(), W = p.keptTail(T), c = p.chunk;
    const bool votes = p.scorerInEffect() == "snapkv";
    const int64_t sinks = votes ? 0 : (p.usesSinks() ? std::min(p.sinks, T - W) : 0);
    const int64_t ranked = T - W - sinks;
    const int64_t keepChunks = (budget - W - sinks) / c, chunks = (ranked + c - 1) / c;
    // validate() made sure at least one chunk fits beside the window and the sinks.
    for (int64_t l = 0; l < capture.layers(); ++l) {
        presses::HeadScores scores;
        if (votes) {
            scores = presses::windowVotes(capture, l, W, s.gqa);  // the prefix's T - W positions
        } else {
            scores = presses::scorerScores(capture, l, p);
            for (auto& row : scores) row = std::vector<float>(row.begin() + sinks, row.begin() + sinks + ranked);
        }
        for (size_t h = 0; h < scores.size(); ++h) {
            std::vector<int32_t> kept;
            for (int64_t i = 0; i < sinks; ++i) kept.push_back(int32_t(i));
            std::vector<int32_t> top = presses::topPositions(presses::chunkSums(scores[h], c),
                                                             std::min(keepChunks, chunks));
            for (int32_t chunk : top)
                for (int64_t i = chunk * c; i < std::min(ranked, (chunk + 1) * c); ++i)
                    kept.push_back(int32_t(sinks + i));
            s.kept[l][h] = presses::withWindow(std::move(kept), T, W);
        }
    }
}

}  // namespace kvlens
