// The full causal attention of one query head over the prompt (T x T), never
// held whole: computed in blocks of query rows from the capture's kept queries
// and keys (fp32, scaled by 1/sqrt(D), softmax over the keys each query sees)
// and handed to a sink, e.g. viz::TilePyramid::addRows, which reduces it to
// tiles so a 32K-token prompt draws at any zoom. Exact cells of any region are
// recomputed on demand for zooms finer than the tiles.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "engine/model/ModelWeights.h"

namespace kvlens {

class Capture;

class AttentionMap {
public:
    // Receives rows [row0, row0 + rows) of the map, row-major, T values each
    // (zero above the diagonal). The pointer is valid during the call only.
    using RowSink = std::function<void(int64_t row0, int64_t rows, const float* probs)>;

    // Needs the capture to have kept the queries of (layer, head): ask the
    // prefill (Capture::fromPrefill's fullQueryHeads) or recompute them later
    // (Capture::keepQueries); throws kvlens::Error otherwise.
    static void streamRows(const Capture& capture, int64_t layer, int64_t head, int64_t blockRows,
                           const RowSink& sink, const ProgressFn& progress = {});

    // Exact probabilities of query rows [row0, row1) over key columns
    // [col0, col1), row-major.
    static std::vector<float> region(const Capture& capture, int64_t layer, int64_t head, int64_t row0,
                                     int64_t row1, int64_t col0, int64_t col1);
};

}  // namespace kvlens
