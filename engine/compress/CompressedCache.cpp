#include "engine/compress/CompressedCache.h"

#include <c10/core/InferenceMode.h>

#include <algorithm>

#include "core/Error.h"
#include "kernels/Rope.h"

namespace kvlens {
namespace {

// Every head of every layer kept positions 0 .. T-1 in order.
bool keepsEverything(const Selection& s, int64_t T) {
    for (const auto& layer : s.kept)
        for (const auto& head : layer) {
            if (static_cast<int64_t>(head.size()) != T) return false;
            for (int64_t i = 0; i < T; ++i)
                if (head[static_cast<size_t>(i)] != i) return false;
        }
    return true;
}

}  // namespace

CompressedCache::CompressedCache(const Capture& capture, const Selection& selection,
                                 int64_t extraTokens)
    : nextPosition_(capture.promptLength()) {
    c10::InferenceMode guard;
    if (selection.layers() != capture.layers() ||
        selection.promptLength != capture.promptLength()) {
        throw Error("the selection was made for another capture");
    }
    const int64_t H = capture.queryHeads(), KV = capture.kvHeads();
    group_ = H / KV;
    perQueryHead_ = selection.gqa == GqaMode::QueryHead;
    for (int64_t h = 0; h < H; ++h) headOf_.push_back(perQueryHead_ ? h : h / group_);
    const int64_t L = capture.layers(), heads = selection.headsPerLayer();
    std::vector<int64_t> kvHeadOf(heads);
    for (int64_t c = 0; c < heads; ++c) kvHeadOf[c] = perQueryHead_ ? c / group_ : c;
    const c10::Device device = capture.keys(0).device();
    kvHeadOf_ = at::tensor(kvHeadOf, at::kLong).to(device);
    keys_.resize(L);
    values_.resize(L);
    nextRows_.resize(L);
    offsets_.assign(L, std::vector<int64_t>(heads, 0));
    capacities_.assign(L, std::vector<int64_t>(heads, 0));
    lengths_.assign(L, std::vector<int64_t>(heads, 0));
    channelRows_.assign(L, std::vector<int64_t>(heads, 0));
    pruned_.assign(L, std::vector<int64_t>(heads, 0));
    windows_.assign(L, 0);
    positions_.assign(L, {});
    for (int64_t l = 0; l < L; ++l) {
        windows_[l] = capture.slidingWindow(l);
        if (windows_[l] == 0) continue;
        for (int64_t c = 0; c < heads; ++c)
            positions_[l].emplace_back(selection.kept[l][c].begin(), selection.kept[l][c].end());
    }
    const bool local = std::any_of(windows_.begin(), windows_.end(), [](int64_t w) { return w > 0; });
    const bool whole = keepsEverything(selection, capture.promptLength());
    // Finch brings its own keys and values (rows 0 .. B-1 at positions 0 .. B-1).
    const PrefilledCache own = capture.prefilledCache(selection.params);
    if (own) {
        if (local)
            throw Error("Finch's own cache decodes on from position B, which a sliding window would cut wrongly");
        if (perQueryHead_ || !selection.prunedChannels.empty())
            throw Error("Finch's cache has one set of rows per KV head and no pruned channels");
        nextPosition_ = own.length();
    } else if (methods::named(selection.params.method).id == MethodId::Finch && !whole) {
        // Never the capture's rows in place of Finch's own (its cache for these settings was
        // dropped since, or never made on this capture).
        throw Error("Finch's cache for this budget, window and chunk is not kept by this capture: run its "
                    "prefill again (Capture::keepScoresFor)");
    }
    // kvpress's FinchPress turns the gathered keys to positions 0 .. B-1 by the model's RoPE.
    const bool rerotate = methods::named(selection.params.method).id == MethodId::FinchKvpress && !whole;
    if (rerotate && !capture.queryStatistics())
        throw Error("finch-kvpress re-rotates the kept keys by the model's RoPE, which tensors given with --inputs do not carry");
    if (rerotate && local)
        throw Error("finch-kvpress turns the kept keys to positions 0 .. B-1, which a sliding window would then cut wrongly");
    if (rerotate && (perQueryHead_ || !selection.prunedChannels.empty()))
        throw Error("finch-kvpress keeps one set of rows per KV head and no pruned channels");
    // Its rows sit at 0 .. B-1 and decoding goes on right after them, as kvpress's pipeline
    // sets the answer's positions from the re-rotated cache's length.
    if (rerotate) nextPosition_ = static_cast<int64_t>(selection.kept[0][0].size());
    // ThinK zeroes channels of the gathered keys: never of the capture's own buffers.
    if (!own && !perQueryHead_ && selection.prunedChannels.empty() && whole &&
        capture.spareTokens() >= extraTokens && (spare_ = capture.borrowSpare())) {
        // The capture's buffers [KV, capacity, D] are the segments back to back.
        const int64_t capacity = capture.cache().capacity();
        for (int64_t l = 0; l < L; ++l) {
            const at::Tensor& k = capture.cache().keyBuffer(l);
            keys_[l] = k.view({heads * capacity, k.size(2)});
            values_[l] = capture.cache().valueBuffer(l).view({heads * capacity, k.size(2)});
            std::vector<int64_t> next(heads);
            for (int64_t c = 0; c < heads; ++c) {
                offsets_[l][c] = c * capacity;
                capacities_[l][c] = capacity;
                lengths_[l][c] = capture.promptLength();
                next[c] = offsets_[l][c] + lengths_[l][c];
            }
            nextRows_[l] = at::tensor(next, at::kLong).to(device);
        }
        return;
    }
    for (int64_t l = 0; l < L; ++l) {
        const at::Tensor k = own ? own.keys[l] : capture.keys(l), v = own ? own.values[l] : capture.values(l);  // [KV, T, D]
        int64_t rows = 0;
        for (int64_t c = 0; c < heads; ++c) {
            offsets_[l][c] = rows;
            lengths_[l][c] = static_cast<int64_t>(selection.kept[l][c].size());
            capacities_[l][c] = std::max<int64_t>(1, lengths_[l][c] + extraTokens);
            rows += capacities_[l][c];
        }
        const int64_t D = k.size(2);
        keys_[l] = at::empty({rows, D}, k.options());
        values_[l] = at::empty({rows, D}, v.options());
        for (int64_t c = 0; c < heads; ++c) {
            const std::vector<int32_t>& kept = selection.kept[l][c];
            const int64_t n = lengths_[l][c];
            if (own) {
                // Finch's rows hold its own kept positions: a selection asking for others (another
                // device's, a stored one) cannot read them.
                const at::Tensor ownKept = own.kept[l].to(at::kCPU).contiguous();
                if (n != ownKept.size(0) ||
                    !std::equal(kept.begin(), kept.end(), ownKept.data_ptr<int64_t>()))
                    throw Error("the selection's positions in layer " + std::to_string(l) +
                                " are not those Finch's cache holds for its budget, window and chunk");
            }
            // Finch's rows are its kept positions in order; the capture's are indexed by position.
            at::Tensor idx = own ? at::arange(n, at::TensorOptions().dtype(at::kLong).device(device))
                                 : at::tensor(std::vector<int64_t>(kept.begin(), kept.end()), at::kLong).to(device);
            keys_[l]
                .narrow(0, offsets_[l][c], n)
                .copy_(k.select(0, kvHeadOf[c]).index_select(0, idx));
            values_[l]
                .narrow(0, offsets_[l][c], n)
                .copy_(v.select(0, kvHeadOf[c]).index_select(0, idx));
            if (rerotate) {
                // Row j (prompt position kept[j]) turned to position j, from fp32 so a bf16 key
                // is rounded once.
                const QueryStatistics& rope = *capture.queryStatistics();
                std::vector<int64_t> shift(static_cast<size_t>(n));
                for (int64_t j = 0; j < n; ++j) shift[static_cast<size_t>(j)] = j - kept[static_cast<size_t>(j)];
                at::Tensor rows = keys_[l].narrow(0, offsets_[l][c], n);
                at::Tensor turned = rows.to(at::kFloat).unsqueeze(1).contiguous();  // [n, 1, D]
                kernels::ropeShift(turned, shift, rope.inverseFrequencies(), rope.ropeDim(), rope.halves());
                rows.copy_(turned.squeeze(1));
            }
            if (!selection.prunedChannels.empty() && !selection.prunedChannels[l][c].empty()) {
                const std::vector<int32_t>& channels = selection.prunedChannels[l][c];
                for (int32_t ch : channels) {
                    if (ch < 0 || ch >= D)
                        throw Error("the selection prunes key channel " + std::to_string(ch) + " of layer " +
                                    std::to_string(l) + " head " + std::to_string(c) + ", which has " +
                                    std::to_string(D) + " channels");
                }
                const at::Tensor ch =
                    at::tensor(std::vector<int64_t>(channels.begin(), channels.end()), at::kLong).to(device);
                keys_[l].narrow(0, offsets_[l][c], n).index_fill_(1, ch, 0);
                channelRows_[l][c] = n;
                pruned_[l][c] = static_cast<int64_t>(channels.size());
            }
        }
        std::vector<int64_t> next(heads);
        for (int64_t c = 0; c < heads; ++c) next[c] = offsets_[l][c] + lengths_[l][c];
        nextRows_[l] = at::tensor(next, at::kLong).to(device);
    }
}

CompressedCache CompressedCache::clone() const {
    CompressedCache copy = *this;
    copy.spare_.reset();
    for (auto* store : {&copy.keys_, &copy.values_, &copy.nextRows_})
        for (at::Tensor& t : *store) t = t.clone();
    return copy;
}

void CompressedCache::grow(int64_t layer) {
    const int64_t heads = this->heads(), D = keys_[layer].size(1);
    std::vector<int64_t> offsets(heads), capacities(heads), next(heads);
    int64_t rows = 0;
    for (int64_t c = 0; c < heads; ++c) {
        offsets[c] = rows;
        capacities[c] = std::max(lengths_[layer][c] + 1, 2 * capacities_[layer][c]);
        rows += capacities[c];
        next[c] = offsets[c] + lengths_[layer][c];
    }
    for (auto* store : {&keys_, &values_}) {
        at::Tensor& old = (*store)[layer];
        at::Tensor bigger = at::empty({rows, D}, old.options());
        for (int64_t c = 0; c < heads; ++c) {
            const int64_t n = lengths_[layer][c];
            bigger.narrow(0, offsets[c], n).copy_(old.narrow(0, offsets_[layer][c], n));
        }
        old = bigger;
    }
    offsets_[layer] = offsets;
    capacities_[layer] = capacities;
    nextRows_[layer] = at::tensor(next, at::kLong).to(keys_[layer].device());
}

void CompressedCache::append(int64_t layer, const at::Tensor& k, const at::Tensor& v) {
    c10::InferenceMode guard;
    for (int64_t c = 0; c < heads(); ++c) {
        if (lengths_[layer][c] == capacities_[layer][c]) {
            grow(layer);
            break;
        }
    }
    // k, v: [1, KV, D] -> one row per cache head.
    at::Tensor kr = k.select(0, 0), vr = v.select(0, 0);
    if (perQueryHead_) {
        kr = kr.index_select(0, kvHeadOf_);
        vr = vr.index_select(0, kvHeadOf_);
    }
    keys_[layer].index_copy_(0, nextRows_[layer], kr.to(keys_[layer].scalar_type()));
    values_[layer].index_copy_(0, nextRows_[layer], vr.to(values_[layer].scalar_type()));
    nextRows_[layer].add_(1);
    for (int64_t& n : lengths_[layer]) ++n;
    if (const int64_t w = windows_[layer]; w > 0) {
        // The new row's query (at nextPosition_) reaches keys after nextPosition_ - w.
        const int64_t oldest = nextPosition_ - w + 1;
        for (int64_t c = 0; c < heads(); ++c) {
            std::deque<int32_t>& pos = positions_[layer][c];
            pos.push_back(static_cast<int32_t>(nextPosition_));
            int64_t out = 0;
            while (out < static_cast<int64_t>(pos.size()) && pos[size_t(out)] < oldest) ++out;
            if (out > 0) dropFront(layer, c, out);
        }
    }
    if (layer == layers() - 1) ++nextPosition_;
}

void CompressedCache::dropFront(int64_t layer, int64_t head, int64_t n) {
    // The segment starts n rows later; where the next row goes (offset + length) stays.
    offsets_[layer][head] += n;
    capacities_[layer][head] -= n;
    lengths_[layer][head] -= n;
    channelRows_[layer][head] = std::max<int64_t>(0, channelRows_[layer][head] - n);
    std::deque<int32_t>& pos = positions_[layer][head];
    pos.erase(pos.begin(), pos.begin() + n);
}

void CompressedCache::keepRows(int64_t layer, int64_t head, const std::vector<int64_t>& rows) {
    c10::InferenceMode guard;
    if (spare_) throw Error("a cache that borrows the capture's buffers cannot drop rows: clone it first");
    const int64_t n = lengths_[layer][head];
    for (size_t i = 0; i < rows.size(); ++i) {
        if (rows[i] < 0 || rows[i] >= n || (i > 0 && rows[i] <= rows[i - 1]))
            throw Error("keepRows: row " + std::to_string(rows[i]) + " is out of order or outside the head's " +
                        std::to_string(n) + " rows");
    }
    // The rows kept from the prompt's (ThinK's pruned ones) come first, as rows are ascending.
    channelRows_[layer][head] = std::count_if(rows.begin(), rows.end(),
                                              [&](int64_t r) { return r < channelRows_[layer][head]; });
    const at::Tensor idx = at::tensor(rows, at::kLong).to(keys_[layer].device());
    for (at::Tensor* store : {&keys_[layer], &values_[layer]}) {
        at::Tensor segment = store->narrow(0, offsets_[layer][head], n);
        const at::Tensor kept = segment.index_select(0, idx);
        segment.narrow(0, 0, static_cast<int64_t>(rows.size())).copy_(kept);
    }
    lengths_[layer][head] = static_cast<int64_t>(rows.size());
    if (!positions_[layer].empty()) {
        std::deque<int32_t>& pos = positions_[layer][head];
        std::deque<int32_t> kept;
        for (int64_t r : rows) kept.push_back(pos[size_t(r)]);
        pos = std::move(kept);
    }
    std::vector<int64_t> next(heads());
    for (int64_t c = 0; c < heads(); ++c) next[c] = offsets_[layer][c] + lengths_[layer][c];
    nextRows_[layer] = at::tensor(next, at::kLong).to(keys_[layer].device());
}

int64_t CompressedCache::allocatedBytes() const {
    int64_t total = 0;
    for (int64_t l = 0; l < layers(); ++l)
        total += (keys_[l].numel() + values_[l].numel()) * keys_[l].element_size();
    return total;
}

std::vector<at::Tensor> CompressedCache::keys(int64_t layer) const {
    std::vector<at::Tensor> out;
    for (int64_t c = 0; c < heads(); ++c)
        out.push_back(keys_[layer].narrow(0, offsets_[layer][c], lengths_[layer][c]));
    return out;
}

std::vector<at::Tensor> CompressedCache::values(int64_t layer) const {
    std::vector<at::Tensor> out;
    for (int64_t c = 0; c < heads(); ++c) {
        out.push_back(values_[layer].narrow(0, offsets_[layer][c], lengths_[layer][c]));
    }
    return out;
}

int64_t CompressedCache::bytes(int64_t layer, int64_t head) const {
    return (2 * lengths_[layer][head] * keys_[layer].size(1) - channelRows_[layer][head] * pruned_[layer][head]) *
           keys_[layer].element_size();
}

int64_t CompressedCache::bytes(int64_t layer) const {
    int64_t total = 0;
    for (int64_t c = 0; c < heads(); ++c) total += bytes(layer, c);
    return total;
}

int64_t CompressedCache::prunedChannels(int64_t layer, int64_t head) const { return pruned_[layer][head]; }

int64_t CompressedCache::bytes() const {
    int64_t total = 0;
    for (int64_t l = 0; l < layers(); ++l) total += bytes(l);
    return total;
}

}  // namespace kvlens
