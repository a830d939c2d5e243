// A model's rotary frequencies and the magnitude its cos/sin carry, from its metadata:
// pair i of the ropeDim rotated dimensions turns at base^(-2i/ropeDim) radians per
// position, divided by Llama 3.1's frequency factor of that pair (rope_freqs.weight),
// then scaled as rope.scaling.type says:
//   linear: every frequency divided by the factor;
//   yarn:   NTK-by-parts (YaRN): a pair that turns more than beta_fast = 32 times over
//           the original context keeps its frequency, one that turns fewer than
//           beta_slow = 1 times is divided by the factor, a linear ramp between (the
//           ramp's ends floored/ceiled to whole pairs); cos and sin are multiplied by
//           attn_factor * (1 + 0.1 ln factor), so attention logits grow by its square.
// The same computation as llama.cpp's ggml_rope_yarn_corr_dims and rope_yarn, in
// single precision as there.
#pragma once

#include <vector>

namespace kvlens {

struct ModelConfig;

struct RopeFrequencies {
    std::vector<float> inverse;  // radians per position, one per pair (ropeDim / 2)
    float magnitude = 1.0f;      // cos and sin are multiplied by it

    // `factors`: one per pair (empty: all 1).
    static RopeFrequencies of(const ModelConfig& config, const std::vector<float>& factors);
};

}  // namespace kvlens
