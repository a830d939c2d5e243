// SnapKV-style selection of one layer in one call: window votes (the last W
// queries against all keys, causal inside the window, fp32 softmax), the GQA
// group mean, pooling along positions and top-k per head (ties: lower position).
// The CPU body is the reference, built from the steps below, which the presses
// also use on the capture's cached votes; the CUDA body (kernels/cuda/) fuses
// the steps without writing any W x T probabilities to global memory.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <vector>

namespace kvlens::kernels {

enum class VotePooling { Max, Avg };

struct VoteSpec {
    int64_t window = 32;  // W: the last W window queries vote; the window is always kept
    int64_t kernel = 7;   // odd pooling width, stride 1, padding kernel / 2
    VotePooling pooling = VotePooling::Max;
    bool perQueryHead = false;  // false: one row per KV head, the mean of its query heads' votes
    int64_t slidingWindow = 0;  // the layer's sliding window (a query at p sees keys after p - it); 0: none
    double softcap = 0.0;       // Gemma 2's attention logit soft-cap (kernels::softcapLogits); 0: none
};


// Which keys each of `rows` queries at positions first .. first + rows - 1 does not attend
// to among keys 0 .. keys - 1: those after it (causal) and, with a sliding window w > 0,
// those at or before its position - w. bool [rows, keys] on `device`, true where masked.
at::Tensor attentionMask(int64_t first, int64_t rows, int64_t keys, int64_t slidingWindow,
                         const at::Device& device);

// Sum over the last `window` rows of `windowQueries` ([H, Wc >= window, D],
// fp32, positions T - window .. T - 1) of their causal softmax over all T keys
// ([KV, T, D], scaled by 1/sqrt(D), in fp32), for prefix columns:
// [H, T - window] fp32 on the keys' device. LibTorch ops, any device. With `rowWeights`
// (fp32 [window]), window row i's softmax counts rowWeights[i] times. With a
// `slidingWindow`, each query's softmax is over the keys inside it (attentionMask); with a
// `softcap`, over the soft-capped logits (softcapLogits).
at::Tensor windowVotes(const at::Tensor& windowQueries, const at::Tensor& keys, int64_t window,
                       const at::Tensor& rowWeights = {}, int64_t slidingWindow = 0, double softcap = 0.0);

// votes [H, n] -> [KV, n], each KV head the mean of its group's H / KV rows;
// unchanged when `perQueryHead`.
at::Tensor groupVotes(const at::Tensor& votes, int64_t kvHeads, bool perQueryHead);

// pool1d of one row with stride 1 and padding kernel / 2: max (padding never
// wins) or avg (padding counts as zeros, count_include_pad=True).
std::vector<float> pool1d(const float* scores, int64_t n, int64_t kernel, VotePooling pooling);

// Indices of the k largest of n scores, ascending; equal scores prefer the
// lower index; NaN ranks below everything.
std::vector<int32_t> topPositions(const float* scores, int64_t n, int64_t k);
// The same on doubles (decode-time H2O and TOVA accumulate in double: a cast to float would
// make ties of scores that differ, and hand them to the older row).
std::vector<int32_t> topPositions(const double* scores, int64_t n, int64_t k);

// Per row of `scores` ([rows, n], any device): the k largest (ties: lower
// index; NaN lowest) in ascending order, then the window positions n .. n + W - 1:
// [rows, min(k, n) + window] int32 on the CPU.
at::Tensor keptPositions(const at::Tensor& scores, int64_t k, int64_t window);

// Pooled, grouped votes: [heads, T - W] fp32 on the keys' device (heads = KV,
// or H when perQueryHead). AdaKV ranks these across heads.
at::Tensor layerScores(const at::Tensor& windowQueries, const at::Tensor& keys,
                       const VoteSpec& spec);

// The kept positions of every head of the layer: [heads, min(k, T - W) + W]
// int32 on the CPU, each row ascending: the top k prefix positions by pooled
// score, then the window T - W .. T - 1. keptPositions(layerScores(...), k, W).
at::Tensor layerSelection(const at::Tensor& windowQueries, const at::Tensor& keys,
                          const VoteSpec& spec, int64_t prefixBudget);

// The CPU steps after the votes, on grouped votes [heads, T - W] (any device,
// e.g. the capture's cache): pooling, top-k, window. Same rows as layerSelection.
at::Tensor selectFromVotes(const at::Tensor& groupedVotes, const VoteSpec& spec,
                           int64_t prefixBudget);

// Whether this build links the CUDA bodies (KVLENS_CUDA against a LibTorch with CUDA).
bool hasCudaBodies();

}  // namespace kvlens::kernels
