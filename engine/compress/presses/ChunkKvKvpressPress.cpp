#include "engine/compress/presses/ChunkKvKvpressPress.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "engine/compress/presses/PressScores.h"

namespace kvlens {

int64_t ChunkKvKvpressPress::keptChunks(int64_t chunks, int64_t budget, int64_t promptLength, double ratio) {
    const int64_t n = ratio > 0.0 ? static_cast<int64_t>(std::floor(double(chunks) * ratio))
                                  : chunks * budget / promptLength;
    return std::clamp<int64_t>(n, 1, chunks);
}

std::vector<float> ChunkKvKvpressPress::chunkMeans(const presses::HeadScores& scores, int64_t c) {
    const int64_t T = scores.empty() ? 0 : static_cast<int64_t>(scores[0].size());
    const int64_t chunks = (T + c - 1) / c;
    // The always-kept positions score the layer's highest + 1, as kvpress pads them.
    float top = -std::numeric_limits<float>::infinity();
    for (const auto& row : scores)
        for (float v : row)
            if (!std::isnan(v)) top = std::max(top, v);
    const float pad = std::isfinite(top) ? top + 1.0f : 1.0f;
    std::vector<double> sum(static_cast<size_t>(T), 0.0);
    for (const auto& row : scores)
        for (int64_t t = 0; t < T; ++t) sum[t] += std::isnan(row[t]) ? pad : row[t];
    std::vector<float> mean(static_cast<size_t>(chunks), 0.0f);
    for (int64_t i = 0; i < chunks; ++i) {
        const int64_t from = i * c, to = std::min(T, from + c);
        double m = 0.0;
        for (int64_t t = from; t < to; ++t) m += sum[t];
        mean[i] = static_cast<float>(m / double(to - from));
    }
    return mean;
}

void ChunkKvKvpressPress::fill(const Capture& capture, const PressParams& p, int64_t budget, Selection& s) const {
    const int64_t T = capture.promptLength(), c = p.chunk;
    const int64_t chunks = (T + c - 1) / c;
    const int64_t keep = keptChunks(chunks, budget, T, p.budget > 0 ? 0.0 : p.budgetRatio);
    for (int64_t l = 0; l < capture.layers(); ++l) {
        const std::vector<float> mean = chunkMeans(presses::scorerScores(capture, l, p), c);
        std::vector<int32_t> kept;
        for (int32_t chunk : presses::topPositions(mean, keep))
            for (int64_t t = chunk * c; t < std::min(T, (chunk + 1) * c); ++t) kept.push_back(int32_t(t));
        for (auto& head : s.kept[l]) head = kept;
        s.layerBudgets[l] = static_cast<int64_t>(kept.size());
    }
}

}  // namespace kvlens
