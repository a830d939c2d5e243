// What sets one Llama-family architecture apart, in one table instead of
// `arch == "qwen2"` branches: RoPE pairing, q/k/v bias, per-head q/k RMSNorm,
// fused projections, a sliding window from the file, Gemma 2's norms, GeGLU and soft-caps.
// An architecture not in the table, or a mixture-of-experts file, is refused
// with one line before any weight is read.
#pragma once

#include <string>
#include <vector>

namespace kvlens {

class GgufFile;

enum class RopeStyle {
    Adjacent,  // llama.cpp "normal": rotates pairs (x[2i], x[2i+1]) — llama, mistral
    Halves,    // "neox": rotates pairs (x[i], x[i + n/2]) — qwen2, qwen3, phi3
};

// The MLP's gate over the fused [gate | up] projection.
enum class Activation {
    SiluGate,      // SwiGLU: silu(gate) * up
    GeluTanhGate,  // GeGLU with the tanh approximation of GELU: gelu_tanh(gate) * up (gemma2, gemma3)
};

struct ArchitectureTraits {
    std::string name;
    RopeStyle ropeStyle = RopeStyle::Adjacent;
    bool qkvBias = false;  // attn_q/k/v.bias (qwen2)
    bool qkNorm = false;   // attn_q_norm/attn_k_norm: RMSNorm of each head before RoPE (qwen3)
    bool fusedQkv = false;     // one attn_qkv tensor [q | k | v] (phi3)
    bool fusedGateUp = false;  // ffn_up holds [gate | up], 2 x feed_forward_length rows (phi3)
    bool slidingWindow = false;  // attention.sliding_window is applied (phi3, gemma2, as llama.cpp does)
    // With slidingWindow: 0, the window on every layer; n, layer l is global (no window) when
    // (l + 1) % n == 0 and local otherwise (gemma2: 2, even layers local, as llama.cpp's il % 2 == 0).
    int64_t windowPeriod = 0;
    // attention.sliding_window when the file lacks the key (gemma2: 4096, as llama.cpp); 0: phi3's rules.
    int64_t defaultWindow = 0;
    Activation activation = Activation::SiluGate;
    bool postNorms = false;        // post_attention_norm / post_ffw_norm before each residual add (gemma2)
    bool scaledEmbedding = false;  // embeddings multiplied by sqrt(embedding_length) (gemma2)
    bool softcaps = false;         // attn_logit_softcapping and final_logit_softcapping (gemma2)

    // Throws kvlens::Error naming the file for an architecture not in the table.
    static const ArchitectureTraits& of(const std::string& architecture, const std::string& file);
    static std::vector<std::string> names();
    // Throws kvlens::Error naming the file, and the key or tensor that says so,
    // when the file is a mixture-of-experts model (dense models only).
    static void refuseMixtureOfExperts(const GgufFile& file);
};

}  // namespace kvlens
