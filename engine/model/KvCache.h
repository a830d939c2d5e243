// The full KV cache of one sequence: per layer, keys (after RoPE) and values
// laid out [kv_heads, capacity, head_dim], grown by doubling as tokens arrive.
#pragma once

#include <ATen/ATen.h>

#include <vector>

namespace kvlens {

class KvCache {
public:
    KvCache(int64_t layers, int64_t kvHeads, int64_t headDim, int64_t capacity,
            c10::ScalarType dtype, c10::Device device);

    // Appends k, v of shape [kv_heads, n, head_dim] to `layer`.
    void append(int64_t layer, const at::Tensor& k, const at::Tensor& v);

    // Views of the cached entries, [kv_heads, length(layer), head_dim].
    at::Tensor keys(int64_t layer) const;
    at::Tensor values(int64_t layer) const;

    int64_t length(int64_t layer) const { return lengths_[layer]; }
    // Tokens cached in every layer (the position the next token takes).
    int64_t length() const { return lengths_.empty() ? 0 : lengths_.back(); }
    int64_t layers() const { return static_cast<int64_t>(keys_.size()); }
    int64_t capacity() const { return capacity_; }

    // The whole buffers, [kv_heads, capacity, head_dim]: rows past length(layer)
    // are room, which a FullKV compressed cache may borrow (Capture::borrowSpare).
    const at::Tensor& keyBuffer(int64_t layer) const { return keys_[layer]; }
    const at::Tensor& valueBuffer(int64_t layer) const { return values_[layer]; }

    // Bytes of the cached entries (not of the reserved capacity).
    int64_t bytes() const;

private:
    void grow(int64_t needed);
    void allocate(int64_t kvHeads, int64_t headDim, const at::TensorOptions& options);

    std::vector<at::Tensor> keys_, values_;
    std::vector<int64_t> lengths_;
    int64_t capacity_;
};

}  // namespace kvlens
