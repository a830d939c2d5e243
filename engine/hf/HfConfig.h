// A Hugging Face checkpoint's config.json as KV Lens runs it: LlamaForCausalLM,
// MistralForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM, Phi3ForCausalLM,
// Gemma2ForCausalLM, Gemma3ForCausalLM and the text model of
// Gemma3ForConditionalGeneration (its text_config), mapped onto the
// engine's ModelConfig (the same shape a GGUF of that model gives), plus what
// only the folder says: tied embeddings, Llama 3's RoPE frequency factors
// (rope_scaling type llama3, computed here as transformers computes them), the
// sliding window, the EOS ids. Hugging Face keeps q and k in rotate-half order,
// so every folder model runs with RoPE on halves (RopeStyle::Halves): the same
// attention scores as a GGUF's permuted rows with adjacent pairs.
//
// Anything else (another architecture, a RoPE type, a bias the engine does not
// have, a missing or mistyped field) is one line naming the file and field.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/model/ModelConfig.h"

namespace kvlens {

struct HfConfig {
    ModelConfig model;
    std::string hfArchitecture;  // "LlamaForCausalLM", ...
    bool tiedEmbeddings = false;
    std::vector<float> ropeFreqFactors;  // rope_scaling llama3: one per rotated pair; else empty
    std::string ropeScalingType;         // "llama3", "linear", "yarn", or empty
    int64_t slidingWindow = 0;           // 0: none (else also in model.slidingWindow, which LlamaModel guards)
    std::string torchDtype;              // torch_dtype / dtype, when given
    int32_t bosId = -1;
    std::vector<int32_t> eosIds;         // eos_token_id (a number or a list)
    // Gemma 2/3: the norms' weights are stored as w and applied as (1 + w) (HfWeightLoader adds 1).
    bool normPlusOne = false;
    // Gemma3ForConditionalGeneration: the text model's tensors under "model.language_model."
    // or "language_model.model." (HfWeightLoader takes whichever the weights hold).
    bool multimodal = false;

    // Parses config.json's text; `source` names the file in messages.
    static HfConfig parse(const std::string& text, const std::string& source);
    static std::vector<std::string> architectures();
};

}  // namespace kvlens
