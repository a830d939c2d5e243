// The scores of Compactor (Chari & Van Durme, 2025) and of its two parts, as kvpress's
// LeverageScorePress, NonCausalAttnPress and CompactorPress compute them: approximate
// leverage of the keys, non-causal chunked attention, and their blend. Each is z-scored
// over the whole layer (all KV heads and ranked positions), so AdaKV can compare heads.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>

#include "core/PressParams.h"
#include "engine/compress/Capture.h"
#include "engine/compress/presses/PressScores.h"

namespace kvlens::presses {

// Compactor's Gaussian sketch of a KV head's keys: [rows, cols] fp64, entries N(0, 1) / sqrt(cols)
// drawn by Box-Muller from mt19937_64 seeded by (seed, layer, head), written out so every
// standard library draws the same (saved sessions select again the same).
at::Tensor leverageSketch(int64_t rows, int64_t cols, uint64_t seed, int64_t layer, int64_t head);

// LeverageScore over params.rankedSpan (NaN outside it, always kept): per KV head, the
// pre-RoPE keys K of the span centred over it, X = K Phi (leverageSketch, params.sketch
// columns, params.seed), each position's ridge leverage x_i^T (X^T X + lambda I)^-1 x_i
// (lambda = 1e-2, raised tenfold while the Cholesky factorisation fails, as kvpress),
// clamped at 0; then z-scored over the layer (unbiased deviation, at least 1e-6).
// Needs Capture::queryStatistics() (the RoPE to undo).
HeadScores leverageScores(const Capture& capture, int64_t layer, const PressParams& params);

// Non-causal attention over params.rankedSpan (NaN outside): Capture::nonCausalAttention
// (chunks of params.attnChunk) times each position's value norm, average-pooled over 3
// positions (zeros padding, counted), z-scored over the layer. Needs keepScoresFor.
HeadScores nonCausalScores(const Capture& capture, int64_t layer, const PressParams& params);

// Compactor: params.blendFor(T) x leverage + non-causal attention over the span between the
// sinks and the window (NaN there: always kept).
HeadScores compactorScores(const Capture& capture, int64_t layer, const PressParams& params);

}  // namespace kvlens::presses
