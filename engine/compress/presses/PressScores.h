// Building blocks the score-based presses share: per-head scores from the
// capture (GQA group mean or per query head), 1-D pooling, top-k positions
// with ties to the lower index, and the always-kept observation window.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/compress/Capture.h"
#include "core/PressParams.h"
#include "core/Selection.h"
#include "kernels/LayerSelection.h"

namespace kvlens::presses {

using HeadScores = std::vector<std::vector<float>>;  // [head][position]

// SnapKV votes of `layer` for window W over prefix columns [0, T-W): per KV head
// (mean of its query heads) or per query head.
HeadScores windowVotes(const Capture& capture, int64_t layer, int64_t window, GqaMode mode);

// kvpress's FinchPress score of `layer` per KV head over prefix columns [0, T-W): the
// question's (the last W window queries') causal softmax, window row i (position T-W+i)
// weighted by T-W+i, averaged over the W rows and over the KV head's query heads.
HeadScores finchPressScores(const Capture& capture, int64_t layer, int64_t window);

// The kernels' description of the voting parameters.
kernels::VoteSpec voteSpec(const PressParams& params);

// SnapKV's kept positions of every head of `layer` (prefixBudget prefix
// positions, then the window): kernels::layerSelection, fused on a GPU capture,
// or its CPU steps on the capture's cached votes.
std::vector<std::vector<int32_t>> voteSelection(const Capture& capture, int64_t layer,
                                                const PressParams& params, int64_t prefixBudget);

// The pooled votes of `layer` per head over every position, NaN in the window (what SnapKV
// and PyramidKV rank); empty for a window the capture cannot vote with.
HeadScores windowRankedVotes(const Capture& capture, int64_t layer, const PressParams& params);

// The pooled votes of `layer` per head (what voteSelection ranks), for AdaKV.
HeadScores pooledVotes(const Capture& capture, int64_t layer, const PressParams& params);

// H2O's accumulated attention over prefix columns [0, T-W), grouped the same way.
HeadScores accumulatedAttention(const Capture& capture, int64_t layer, int64_t window,
                                GqaMode mode);

// The key-only scores of keys [..., n, D] (any dtype) as fp32 [..., n], on their device:
// minus the L2 norm (KNorm), and minus the cosine with the anchor, the mean of the unit
// keys over the n rows (KeyDiff). The capture's and the decoding cache's alike.
at::Tensor negativeKeyNorms(const at::Tensor& keys);
at::Tensor negativeAnchorCosines(const at::Tensor& keys);

// KNorm's score per KV head over all T positions: minus the key's L2 norm (the
// keys are after RoPE, which keeps each key's norm).
HeadScores keyNormScores(const Capture& capture, int64_t layer);

// KeyDiff's score per KV head over all T positions: minus the cosine similarity of
// each key with the anchor, the mean of the head's unit-normalised keys.
HeadScores keyDiffScores(const Capture& capture, int64_t layer);

// TOVA's score over all T positions: the last prompt query's attention (softmax of
// q_last . k / sqrt(D) over every key), averaged over all query heads of the layer.
std::vector<float> lastQueryAttention(const Capture& capture, int64_t layer);

// Expected Attention's score per KV head over all T positions (NaN for the first
// `params.sinks`, which are always kept): with the pre-RoPE queries of positions
// sinks .. T-1 as a Gaussian (mean mu, covariance S, divided by the count) and RoPE's
// rotation averaged over the next `params.future` positions (R), each query head's
// softmax over keys of  (R mu).k / sqrt(D) + k.(R S R^T).k / (2D),  averaged over the
// KV head's query heads, times ||v||. Needs Capture::queryStatistics().
HeadScores expectedAttentionScores(const Capture& capture, int64_t layer, const PressParams& params);

// LagKV's score per KV head over all T positions: after `params.sinks`, partitions of
// `params.lag` positions; each but the last full one is scored against the next: keys
// and values min-max normalised per channel by the next partition's range, the
// channels' standard deviation (n - 1), a softmax over the partition's positions, the
// key's and value's summed. NaN for the sinks and for the last full partition with the
// remainder (always kept).
HeadScores lagKvScores(const Capture& capture, int64_t layer, const PressParams& params);
// The same score of keys and values [KV, n, D] (any dtype) with `params`' sinks and lag:
// fp32 [KV, n] on their device, NaN where it is always kept. The capture's prompt and the
// decoding cache's rows alike.
at::Tensor lagLocalScores(const at::Tensor& keys, const at::Tensor& values, const PressParams& params);
// LagKV as kvpress's LagKVPress scores by default (cross_scoring=False), what --scorer lagkv
// ranks by under --convention kvpress: each scored partition's lagKvScores become their rank
// in it over lag (0, 1/lag, ..., (lag-1)/lag; equal scores: the lower position ranks lower),
// NaN (always kept; kvpress: 1) for the sinks and the tail. A prompt shorter than
// sinks + 2 x lag: kvpress's ramp, (t - sinks) / (T - sinks) after the sinks, NaN before.
HeadScores lagKvRanks(const Capture& capture, int64_t layer, const PressParams& params);

// CUR (CurDKV, as kvpress's CURPress scores by default): per KV head, each position's
// squared key norm and squared value norm, each divided by its sum over the aligned
// window of kCurWindow positions the position falls in (the last window as long as
// the prompt leaves it), multiplied. NaN for the sinks (always kept).
constexpr int64_t kCurWindow = 16;
HeadScores curScores(const Capture& capture, int64_t layer, const PressParams& params);
// The same score of keys and values [KV, n, D] (any dtype), groups aligned from row 0:
// fp32 [KV, n] on their device. The capture's prompt and the decoding cache's rows alike.
at::Tensor curLocalScores(const at::Tensor& keys, const at::Tensor& values);

// KVzip's score per KV head over all T positions (NaN for the first `params.sinks`, always
// kept): the highest attention of the prompt's reconstruction (Capture::reconstructionScores,
// which keepScoresFor must have made).
HeadScores reconstructionScores(const Capture& capture, int64_t layer, const PressParams& params);

// CAKE (Qin et al., ICLR 2025) on `layer`, from the attention A[h, i, j] of the last
// `params.window` prompt queries i (causal, fp32) over the prefix keys j < T - W:
// the layer's spatial dispersion, the entropy -sum A log(A + 1e-10) over every query
// head, row and prefix column, and its temporal shift, the sum over heads and columns
// of A's variance over the rows (n - 1), as the authors' code measures them.
struct CakeDispersion {
    double entropy = 0.0, variance = 0.0;
};
CakeDispersion cakeDispersion(const Capture& capture, int64_t layer, const PressParams& params);

// CAKE's eviction indicator per KV head over all T positions (NaN for the window, always
// kept): per query head, the mean over the window's rows plus params.gamma times their
// variance (n - 1), average-pooled over kCakeKernel positions (zeros padding, counted),
// averaged over the KV head's query heads.
constexpr int64_t kCakeKernel = 5;
HeadScores cakeIndicator(const Capture& capture, int64_t layer, const PressParams& params);

// CAKE's layer budgets: `total` entries shared out in proportion to each layer's
// preference entropy^(1/tau1) x variance^(1/tau2) (equally when every preference is 0),
// truncated to integers, each held to `available` with the excess given to the layers
// below it, and the rounding's difference spread one by one from the first layer, as
// the authors' adjust_budgets does. A layer's budget may still exceed `available`
// after the spread; its selection keeps `available` then.
std::vector<int64_t> cakeLayerBudgets(const std::vector<double>& preferences, int64_t total, int64_t available);

// CAKE's and per-layer's selection: the layers share L x (B - W - sinks) in proportion
// to `weights` (cakeLayerBudgets, each held to what the layer can rank), and each keeps
// per head its window, its scorer's sinks and the best of its share by scorerScores;
// sets the selection's kept positions and layer budgets.
void keepLayerShares(const Capture& capture, const PressParams& params, const std::vector<double>& weights,
                     int64_t budget, Selection& selection);

// The scores of the method a press ranks by (a wrapper's scorer, or a scorer method itself),
// as scorerScores gives a wrapper, or empty where the capture lacks what they need (query
// statistics, a replay or reconstruction not run, a window or sinks that leave nothing to
// rank): what the views show, where scorerScores would throw.
HeadScores scorerScoresOrNone(const Capture& capture, int64_t layer, const PressParams& params);

// The scores a method that takes --scorer ranks by (PressParams::scorerInEffect): per
// row (KV head, or query head for SnapKV's votes in query-head mode) over all T
// positions, NaN where it always keeps (the window, the scorer's sinks; for
// chunkkv-kvpress, as kvpress's scorers, the window only where the scorer keeps it: SnapKV's
// votes, Compactor's ends). SnapKV's are its pooled votes; TOVA's the last query's attention
// (the same on every KV head).
HeadScores scorerScores(const Capture& capture, int64_t layer, const PressParams& params);

// Per row of `scores`: the NaN positions and the `k` best others (ties to the lower
// position), ascending.
std::vector<int32_t> keptWithNaNs(const std::vector<float>& scores, int64_t k);
// How many positions of a row of scores are always kept (NaN): what a budget holds beside
// what it ranks.
int64_t alwaysKept(const std::vector<float>& scores);

// ChunkKV's chunk scores: `scores` summed over consecutive chunks of `chunk` positions
// (the last one may be short), one sum per chunk.
std::vector<float> chunkSums(const std::vector<float>& scores, int64_t chunk);

// pool1d with stride 1 and padding kernel/2: max (padding never wins) or avg
// (padding counts as zeros in the mean, count_include_pad=True).
std::vector<float> pool1d(const std::vector<float>& scores, int64_t kernel, Pooling pooling);

// Indices of the k largest scores, ascending; equal scores prefer the lower index.
std::vector<int32_t> topPositions(const std::vector<float>& scores, int64_t k);
std::vector<int32_t> topPositions(const std::vector<double>& scores, int64_t k);

// `prefix` (ascending, all < T - W) followed by the window T-W .. T-1.
std::vector<int32_t> withWindow(std::vector<int32_t> prefix, int64_t promptLength, int64_t window);

}  // namespace kvlens::presses
