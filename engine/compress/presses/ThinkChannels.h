// ThinK (Xu et al., 2024, "ThinK: Thinner Key Cache by Query-Driven Pruning"), as kvpress's
// ThinKPress composes it after any method: per selection head, the key channels whose
// energy the window's queries and the kept keys share least are pruned. kvpress zeroes
// them in place (no memory saved), as CompressedCache does; the bytes counted as kept
// leave them out, and the allocated bytes say what is really held.
#pragma once

#include <cstdint>
#include <vector>

#include "core/Selection.h"
#include "engine/compress/Capture.h"

namespace kvlens::presses {

// For every layer and head of `selection` (made with params.think > 0): the
// floor(D x think) channels c of lowest mean_i(q_ic^2) x mean_t(k_tc^2), where q runs over
// the last params.window prompt queries (after RoPE; at most the capture's 64) of the head's query heads (their
// means averaged over a KV head's group) and k over the prompt positions the head keeps;
// ties prune the lower channel; ascending. Empty when floor(D x think) is 0.
std::vector<std::vector<std::vector<int32_t>>> thinkPrunedChannels(const Capture& capture,
                                                                   const Selection& selection);

}  // namespace kvlens::presses
