#include "engine/compress/presses/ChunkKvKvpressPress.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/Methods.h"

namespace kvlens {

int64_t ChunkKvKvpressPress::keptChunks(int64_t chunks, int64_t budget, int64_t promptLength, double ratio) {
    // kvpress: int(chunks * (1 - compression_ratio)), compression_ratio = 1 - R in double.
    const int64_t n = ratio > 0.0 ? static_cast<int64_t>(std::floor(double(chunks) * (1.0 - (1.0 - ratio))))
                                  : chunks * budget / promptLength;
    return std::clamp<int64_t>(n, 1, chunks);
}

presses::HeadScores ChunkKvKvpressPress::kvpressScores(const Capture& capture, int64_t layer, const PressParams& p) {
    const std::string scorer = p.scorerInEffect();
    const int64_t T = capture.promptLength();
    if (methods::named(scorer).id == MethodId::LagKv && (p.convention == Convention::Kvpress || T < p.sinks + 2 * p.lag)) {
        // LagKVPress's default (cross_scoring=False): ranks in each partition, or its ramp on a
        // prompt too short for two partitions; the sinks and the tail 1.
        presses::HeadScores rows = presses::lagKvRanks(capture, layer, p);
        for (auto& row : rows)
            for (float& v : row)
                if (std::isnan(v)) v = 1.0f;
        return rows;
    }
    presses::HeadScores rows = presses::scorerScores(capture, layer, p);
    if (scorer == "tova")
        for (auto& row : rows) row.back() = std::numeric_limits<float>::quiet_NaN();  // TOVAPress keeps it
    const float scale = scorer == "snapkv" ? 1.0f / float(p.window) : scorer == "lagkv" ? 0.5f : 1.0f;
    float top = -std::numeric_limits<float>::infinity();
    for (auto& row : rows)
        for (float& v : row)
            if (!std::isnan(v)) top = std::max(top, v *= scale);
    if (!std::isfinite(top)) top = 0.0f;
    const float pad = scorer == "cur" || scorer == "lagkv" ? 1.0f : scorer == "compactor" ? top : top + 1.0f;
    for (auto& row : rows)
        for (float& v : row)
            if (std::isnan(v)) v = pad;
    return rows;
}

std::vector<float> ChunkKvKvpressPress::chunkMeans(const presses::HeadScores& scores, int64_t c) {
    const int64_t T = scores.empty() ? 0 : static_cast<int64_t>(scores[0].size());
    const int64_t chunks = (T + c - 1) / c;
    std::vector<double> sum(static_cast<size_t>(T), 0.0);
    for (const auto& row : scores)
        for (int64_t t = 0; t < T; ++t) sum[t] += row[t];
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
    // Under --convention kvpress the ratio is kvpress's 1 - compression_ratio itself: int(chunks x it).
    const int64_t keep = p.convention == Convention::Kvpress && p.budget <= 0
                             ? std::clamp<int64_t>(static_cast<int64_t>(std::floor(double(chunks) * p.budgetRatio)), 1, chunks)
                             : keptChunks(chunks, budget, T, p.budget > 0 ? 0.0 : p.budgetRatio);
    for (int64_t l = 0; l < capture.layers(); ++l) {
        const std::vector<float> mean = chunkMeans(kvpressScores(capture, l, p), c);
        std::vector<int32_t> kept;
        for (int32_t chunk : presses::topPositions(mean, keep))
            for (int64_t t = chunk * c; t < std::min(T, (chunk + 1) * c); ++t) kept.push_back(int32_t(t));
        for (auto& head : s.kept[l]) head = kept;
    }
}

std::vector<std::vector<float>> ChunkKvKvpressPress::scores(const Capture& capture, const PressParams& p,
                                                            int64_t layer) const {
    // Every head shows each position's chunk mean of the layer's summed scores, what the
    // chunks are ranked by (the same on every head).
    if (presses::scorerScoresOrNone(capture, layer, p).empty()) return {};
    const int64_t chunk = std::max<int64_t>(p.chunk, 1);
    presses::HeadScores rows = kvpressScores(capture, layer, p);
    const std::vector<float> means = chunkMeans(rows, chunk);
    for (auto& head : rows)
        for (size_t t = 0; t < head.size(); ++t) head[t] = means[t / size_t(chunk)];
    return rows;
}

}  // namespace kvlens
