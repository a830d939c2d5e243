#include "engine/model/KvCache.h"

#include <algorithm>

namespace kvlens {

KvCache::KvCache(int64_t layers, int64_t kvHeads, int64_t headDim, int64_t capacity,
                 c10::ScalarType dtype, c10::Device device)
    : lengths_(layers, 0), capacity_(std::max<int64_t>(capacity, 1)) {
    const auto options = at::TensorOptions().dtype(dtype).device(device);
    for (int64_t l = 0; l < layers; ++l) {
        keys_.push_back(at::empty({kvHeads, capacity_, headDim}, options));
        values_.push_back(at::empty({kvHeads, capacity_, headDim}, options));
    }
}

void KvCache::grow(int64_t needed) {
    const int64_t newCapacity = std::max(needed, capacity_ * 2);
    for (size_t l = 0; l < keys_.size(); ++l) {
        for (at::Tensor* t : {&keys_[l], &values_[l]}) {
            at::Tensor bigger = at::empty({t->size(0), newCapacity, t->size(2)}, t->options());
            bigger.narrow(1, 0, lengths_[l]).copy_(t->narrow(1, 0, lengths_[l]));
            *t = bigger;
        }
    }
    capacity_ = newCapacity;
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
