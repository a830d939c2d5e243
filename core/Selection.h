// What a press keeps: per layer, per head (KV head or query head, as the GQA
// mode says), the kept prompt positions in ascending order. Plain C++ so that
// viz/ and sessions/ can take it without LibTorch.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/PressParams.h"

namespace kvlens {

struct Selection {
    PressParams params;
    int64_t promptLength = 0;
    int64_t queryHeads = 0;
    int64_t kvHeads = 0;
    GqaMode gqa = GqaMode::KvHead;              // how heads index: KV heads or query heads
    // Entries per head each layer holds (its heads' mean, rounded half up: AdaKV's and KVzip's
    // heads hold different counts): what the funnel draws, ChunkKV's whole chunks included.
    std::vector<int64_t> layerBudgets;
    std::vector<std::vector<std::vector<int32_t>>> kept;  // [layer][head] -> positions
    // ThinK (params.think > 0): [layer][head] -> the key channels zeroed in every kept
    // prompt key of that head, ascending; empty when no channel is pruned.
    std::vector<std::vector<std::vector<int32_t>>> prunedChannels;

    int64_t layers() const { return static_cast<int64_t>(kept.size()); }
    int64_t headsPerLayer() const { return gqa == GqaMode::KvHead ? kvHeads : queryHeads; }
    // The selection head that query head `h` reads.
    int64_t headOf(int64_t queryHead) const {
        return gqa == GqaMode::KvHead ? queryHead / (queryHeads / kvHeads) : queryHead;
    }
    int64_t entries() const {
        int64_t n = 0;
        for (const auto& layer : kept)
            for (const auto& head : layer) n += static_cast<int64_t>(head.size());
        return n;
    }
    // Key channels pruned in `layer`'s head `head` (0 without ThinK).
    int64_t pruned(int64_t layer, int64_t head) const {
        return prunedChannels.empty() ? 0 : static_cast<int64_t>(prunedChannels[layer][head].size());
    }
    // K and V bytes of the kept entries of `layer` at `bytesPerValue` per element and head
    // dim `headDim`: the channels ThinK prunes are not counted (what a cache without them holds).
    int64_t bytes(int64_t layer, int64_t headDim, int64_t bytesPerValue) const {
        int64_t n = 0;
        for (size_t h = 0; h < kept[layer].size(); ++h)
            n += static_cast<int64_t>(kept[layer][h].size()) * (2 * headDim - pruned(layer, int64_t(h)));
        return n * bytesPerValue;
    }
    int64_t entries(int64_t layer) const {
        int64_t n = 0;
        for (const auto& head : kept[layer]) n += static_cast<int64_t>(head.size());
        return n;
    }
};

}  // namespace kvlens
