// A KV cache holding only what a selection kept: per layer and selection head
// (KV head, or query head in query-head mode) its own keys and values, so
// heads of different lengths (AdaKV) take only their own memory. Decode
// appends one entry per head per token; positions continue from the prompt.
#pragma once

#include <ATen/ATen.h>

#include <deque>
#include <memory>
#include <vector>

#include "engine/compress/Capture.h"
#include "core/Selection.h"

namespace kvlens {

class CompressedCache {
public:
    // Gathers the kept entries from the capture's full KV (or, for Finch, copies the cache its
    // own prefill left, Capture::prefilledCache, and decodes on from position B), with room for
    // `extraTokens` decode steps before any buffer grows. A selection that kept
    // every entry (FullKV, per KV head) copies nothing when the capture has that
    // much room and lends it (Capture::borrowSpare): it reads the capture's own
    // buffers and appends past the prompt; another such cache meanwhile copies.
    CompressedCache(const Capture& capture, const Selection& selection, int64_t extraTokens = 0);

    // A deep copy (tensors are not shared, nothing borrowed), to fork a decode.
    CompressedCache clone() const;
    // Whether this cache reads the capture's KV buffers rather than a copy.
    bool borrowsCapture() const { return spare_ != nullptr; }

    int64_t layers() const { return static_cast<int64_t>(keys_.size()); }
    int64_t heads() const { return lengths_.empty() ? 0 : static_cast<int64_t>(lengths_[0].size()); }
    // The cache head query head `h` reads.
    int64_t headOf(int64_t queryHead) const { return headOf_[queryHead]; }
    const std::vector<int64_t>& headMap() const { return headOf_; }
    int64_t length(int64_t layer, int64_t head) const { return lengths_[layer][head]; }
    // The sliding window of `layer` (0: global), from the capture.
    int64_t slidingWindow(int64_t layer) const { return windows_[static_cast<size_t>(layer)]; }
    // The position the next token takes: prompt length (Finch: its budget) + tokens decoded so far.
    int64_t nextPosition() const { return nextPosition_; }

    // Appends one token's k, v ([1, kvHeads, D], after RoPE) to every head of `layer`;
    // after the last layer the position advances. On a local layer (Capture::slidingWindow)
    // the rows the new position's query no longer reaches (positions at or before it minus
    // the window) leave the cache first, as a sliding-window cache drops them: what the
    // full cache's decode attends to there, and what bytes() counts.
    void append(int64_t layer, const at::Tensor& k, const at::Tensor& v);

    // Keeps only `rows` (ascending, each below the head's length) of head `head` of
    // `layer`, in that order: compression during decoding (DecodeCompressor). Throws
    // kvlens::Error on a cache that borrows the capture's buffers (clone() it first)
    // or on rows out of order or range.
    void keepRows(int64_t layer, int64_t head, const std::vector<int64_t>& rows);

    // Views of the filled rows, one per cache head: [length, D].
    std::vector<at::Tensor> keys(int64_t layer) const;
    std::vector<at::Tensor> values(int64_t layer) const;

    // Bytes of the kept entries (K and V), per layer and in total; the key channels ThinK
    // pruned in the prompt's rows are not counted (what a cache without them would hold:
    // here they are zeroed in place, so allocatedBytes() does not shrink with them).
    int64_t bytes(int64_t layer) const;
    int64_t bytes(int64_t layer, int64_t head) const;
    int64_t bytes() const;
    // Bytes of the K and V buffers allocated (room for decode steps included; the
    // capture's whole buffers when borrowed).
    int64_t allocatedBytes() const;
    // Key channels ThinK zeroed in head `head`'s prompt rows (0 without ThinK).
    int64_t prunedChannels(int64_t layer, int64_t head) const;

private:
    // Gives every head of `layer` room for at least one more row (doubling).
    void grow(int64_t layer);

    // Per layer one K and one V buffer [rows, D] holding every head's segment
    // (offset, capacity) back to back, so that a decode step appends to all
    // heads with one indexed copy: on a GPU, 2 kernels a layer instead of 2 a head.
    std::vector<at::Tensor> keys_, values_;
    std::vector<std::vector<int64_t>> offsets_, capacities_, lengths_;
    // ThinK: per head, its leading rows whose key channels are pruned, and how many channels.
    std::vector<std::vector<int64_t>> channelRows_, pruned_;
    std::vector<at::Tensor> nextRows_;  // [layer] -> int64 [heads], offsets + lengths, on the device
    std::vector<int64_t> windows_;      // [layer] -> its sliding window, 0: none
    // On a local layer, per head the position of each row, ascending (empty elsewhere).
    std::vector<std::vector<std::deque<int32_t>>> positions_;
    // Drops head `head`'s first `n` rows of `layer` (out of its window).
    void dropFront(int64_t layer, int64_t head, int64_t n);
    at::Tensor kvHeadOf_;               // int64 [heads]: the KV head each cache head copies
    std::vector<int64_t> headOf_;
    int64_t group_ = 1;        // query heads per KV head
    bool perQueryHead_ = false;
    int64_t nextPosition_ = 0;
    std::shared_ptr<void> spare_;  // the capture's room after the prompt, while borrowed
};

}  // namespace kvlens
