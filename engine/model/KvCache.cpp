#include "engine/model/KvCache.h"

#include <algorithm>

namespace kvlens {

KvCache::KvCache(int64_t layers, int64_t kvHeads, int64_t headDim, int64_t capacity,
                 c10::ScalarType dtype, c10::Device device)
    : lengths_(layers, 0), capacity_(std::max<int64_t>(capacity, 1)) {
    const auto options = at::TensorOptions().dtype(dtype).device(device);
    keys_.resize(static_cast<size_t>(layers));
    values_.resize(static_cast<size_t>(layers));
    allocate(kvHeads, headDim, options);
}

void KvCache::allocate(int64_t kvHeads, int64_t headDim, const at::TensorOptions& options) {
    // One block for every layer's keys and values: the per-layer buffers are views.
    // (Apart, each a little over a multiple of a huge page would waste most of one.)
    const int64_t layers = static_cast<int64_t>(keys_.size());
    at::Tensor store = at::empty({layers, 2, kvHeads, capacity_, headDim}, options);
    for (int64_t l = 0; l < layers; ++l) {
        keys_[static_cast<size_t>(l)] = store[l][0];
        values_[static_cast<size_t>(l)] = store[l][1];
    }
}

void KvCache::grow(int64_t needed) {
    const std::vector<at::Tensor> oldKeys = keys_, oldValues = values_;
    capacity_ = std::max(needed, capacity_ * 2);
    allocate(oldKeys[0].size(0), oldKeys[0].size(2), oldKeys[0].options());
    for (size_t l = 0; l < keys_.size(); ++l) {
        keys_[l].narrow(1, 0, lengths_[l]).copy_(oldKeys[l].narrow(1, 0, lengths_[l]));
        values_[l].narrow(1, 0, lengths_[l]).copy_(oldValues[l].narrow(1, 0, lengths_[l]));
    }
}

void KvCache::append(int64_t layer, const at::Tensor& k, const at::Tensor& v) {
    const int64_t n = k.size(1);
    if (lengths_[layer] + n > capacity_) grow(lengths_[layer] + n);
    keys_[layer].narrow(1, lengths_[layer], n).copy_(k);
    values_[layer].narrow(1, lengths_[layer], n).copy_(v);
    lengths_[layer] += n;
}

at::Tensor KvCache::keys(int64_t layer) const { return keys_[layer].narrow(1, 0, lengths_[layer]); }

at::Tensor KvCache::values(int64_t layer) const {
    return values_[layer].narrow(1, 0, lengths_[layer]);
}

int64_t KvCache::bytes() const {
    int64_t total = 0;
    for (size_t l = 0; l < keys_.size(); ++l) {
        total += 2 * keys_[l].size(0) * lengths_[l] * keys_[l].size(2) * keys_[l].element_size();
    }
    return total;
}

}  // namespace kvlens
