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

std::vector<std::vector<float>> ChunkKvPress::scores(const Capture& capture, const PressParams& p, int64_t layer) const {
    // Each ranked position shows its chunk's summed scores, what the chunk is ranked by (the
    // span it ranks: after the scorer's sinks, before the window or LagKV's tail).
    const int64_t T = capture.promptLength(), tail = p.keptTail(T), chunk = std::max<int64_t>(p.chunk, 1);
    presses::HeadScores rows;
    int64_t sinks = 0;
    if (p.scorerInEffect() == "snapkv") {
        // SnapKV's votes unpooled, summed per chunk from position 0.
        rows = presses::windowVotes(capture, layer, p.window, p.gqa);
        for (auto& row : rows) row.resize(static_cast<size_t>(T), std::nanf(""));
    } else {
        rows = presses::scorerScoresOrNone(capture, layer, p);
        if (rows.empty()) return {};
        sinks = p.usesSinks() ? std::min(p.sinks, T - tail) : 0;
    }
    const int64_t ranked = T - tail - sinks;
    for (auto& head : rows) {
        const std::vector<float> sums =
            presses::chunkSums(std::vector<float>(head.begin() + sinks, head.begin() + sinks + ranked), chunk);
        for (int64_t i = 0; i < ranked; ++i) head[sinks + i] = sums[i / chunk];
    }
    return rows;
}

}  // namespace kvlens
