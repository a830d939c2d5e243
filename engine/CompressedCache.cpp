#include "engine/CompressedCache.h"

#include <c10/core/InferenceMode.h>

#include "engine/Error.h"

namespace kvlens {

CompressedCache::CompressedCache(const Capture& capture, const Selection& selection,
                                 int64_t extraTokens)
    : nextPosition_(capture.promptLength()) {
    c10::InferenceMode guard;
    if (selection.layers() != capture.layers() || selection.promptLength != capture.promptLength()) {
        throw Error("the selection was made for another capture");
    }
    const int64_t H = capture.queryHeads(), KV = capture.kvHeads();
    group_ = H / KV;
    perQueryHead_ = selection.gqa == GqaMode::QueryHead;
    for (int64_t h = 0; h < H; ++h) headOf_.push_back(perQueryHead_ ? h : h / group_);
    const int64_t L = capture.layers(), heads = selection.headsPerLayer();
    keys_.assign(L, std::vector<at::Tensor>(heads));
    values_.assign(L, std::vector<at::Tensor>(heads));
    lengths_.assign(L, std::vector<int64_t>(heads, 0));
    for (int64_t l = 0; l < L; ++l) {
        const at::Tensor k = capture.keys(l), v = capture.values(l);  // [KV, T, D]
        for (int64_t c = 0; c < heads; ++c) {
            const std::vector<int32_t>& kept = selection.kept[l][c];
            const int64_t kvHead = perQueryHead_ ? c / group_ : c;
            const int64_t n = static_cast<int64_t>(kept.size());
            at::Tensor idx = at::tensor(std::vector<int64_t>(kept.begin(), kept.end()), at::kLong)
                                 .to(k.device());
            const int64_t D = k.size(2);
            keys_[l][c] = at::empty({n + extraTokens, D}, k.options());
            values_[l][c] = at::empty({n + extraTokens, D}, v.options());
            keys_[l][c].narrow(0, 0, n).copy_(k.select(0, kvHead).index_select(0, idx));
            values_[l][c].narrow(0, 0, n).copy_(v.select(0, kvHead).index_select(0, idx));
            lengths_[l][c] = n;
        }
    }
}

CompressedCache CompressedCache::clone() const {
    CompressedCache copy = *this;
    for (auto* store : {&copy.keys_, &copy.values_})
        for (auto& layer : *store)
            for (at::Tensor& t : layer) t = t.clone();
    return copy;
}

void CompressedCache::reserve(int64_t layer, int64_t head, int64_t rows) {
    for (auto* store : {&keys_, &values_}) {
        at::Tensor& t = (*store)[layer][head];
        if (t.size(0) >= rows) continue;
        at::Tensor bigger = at::empty({std::max(rows, 2 * t.size(0)), t.size(1)}, t.options());
        const int64_t n = lengths_[layer][head];
        bigger.narrow(0, 0, n).copy_(t.narrow(0, 0, n));
        t = bigger;
    }
}

void CompressedCache::append(int64_t layer, const at::Tensor& k, const at::Tensor& v) {
    for (int64_t c = 0; c < heads(); ++c) {
        const int64_t kvHead = perQueryHead_ ? c / group_ : c;
        const int64_t n = lengths_[layer][c];
        reserve(layer, c, n + 1);
        keys_[layer][c].narrow(0, n, 1).copy_(k.select(1, kvHead));
        values_[layer][c].narrow(0, n, 1).copy_(v.select(1, kvHead));
        lengths_[layer][c] = n + 1;
    }
    if (layer == layers() - 1) ++nextPosition_;
}

std::vector<at::Tensor> CompressedCache::keys(int64_t layer) const {
    std::vector<at::Tensor> out;
    for (int64_t c = 0; c < heads(); ++c) out.push_back(keys_[layer][c].narrow(0, 0, lengths_[layer][c]));
    return out;
}

std::vector<at::Tensor> CompressedCache::values(int64_t layer) const {
    std::vector<at::Tensor> out;
    for (int64_t c = 0; c < heads(); ++c) out.push_back(values_[layer][c].narrow(0, 0, lengths_[layer][c]));
    return out;
}

int64_t CompressedCache::bytes(int64_t layer) const {
    int64_t total = 0;
    for (int64_t c = 0; c < heads(); ++c) {
        total += 2 * lengths_[layer][c] * keys_[layer][c].size(1) * keys_[layer][c].element_size();
    }
    return total;
}

int64_t CompressedCache::bytes() const {
    int64_t total = 0;
    for (int64_t l = 0; l < layers(); ++l) total += bytes(l);
    return total;
}

}  // namespace kvlens
