// The weights of a Hugging Face folder (HfFolder's safetensors shards) as the
// engine's ModelWeights: model.embed_tokens, model.layers.N.{input_layernorm,
// self_attn.{q,k,v,o}_proj (+ q/k/v bias for Qwen2, q_norm/k_norm for Qwen3),
// post_attention_layernorm, mlp.{gate,up,down}_proj}, model.norm, lm_head.
// On the CPU, F16 and BF16 matrices are read in place from the mapping (as a
// GGUF's F16/BF16 tensors are); F32 matrices, norms and every GPU tensor are
// copied as dense tensors in the compute dtype. q and k stay in Hugging Face's
// rotate-half order (HfConfig runs the model with RoPE on halves).
#pragma once

#include "engine/model/ModelWeights.h"

namespace kvlens {

class HfFolder;

class HfWeightLoader {
public:
    // Throws kvlens::Error naming the file and tensor when one is missing, has a
    // dtype other than F32/F16/BF16, or a shape that disagrees with config.json.
    static ModelWeights load(const HfFolder& folder, c10::Device device, c10::ScalarType dtype,
                             const ProgressFn& progress = {});
    // Bytes a load allocates beyond the mappings (the dense matrices).
    static int64_t denseBytes(const HfFolder& folder, c10::Device device, c10::ScalarType dtype);
};

}  // namespace kvlens
