// The architecture table and the mixture-of-experts check.
#include "engine/model/ArchitectureTraits.h"

#include "core/Error.h"
#include "engine/gguf/GgufFile.h"

namespace kvlens {

namespace {

// Gemma 2 as llama.cpp c392e50 builds it (build_gemma2): NEOX RoPE, GeGLU, norms before
// and after attention and the MLP, scaled embeddings, both soft-caps, a window on even layers.
ArchitectureTraits gemma2() {
    ArchitectureTraits a;
    a.name = "gemma2";
    a.ropeStyle = RopeStyle::Halves;
    a.slidingWindow = true;
    a.windowPeriod = 2;
    a.defaultWindow = 4096;
    a.activation = Activation::GeluTanhGate;
    a.postNorms = true;
    a.scaledEmbedding = true;
    a.softcaps = true;
    return a;
}

const std::vector<ArchitectureTraits>& table() {
    static const std::vector<ArchitectureTraits> t = {
        {"llama", RopeStyle::Adjacent, false, false},
        {"mistral", RopeStyle::Adjacent, false, false},
        {"qwen2", RopeStyle::Halves, true, false},
        {"qwen3", RopeStyle::Halves, false, true},
        {"phi3", RopeStyle::Halves, false, false, true, true, true},
        gemma2(),
    };
    return t;
}

// Architectures llama.cpp knows as mixture-of-experts, named so in the message.
bool knownMoe(const std::string& a) {
    for (const char* m : {"qwen2moe", "qwen3moe", "mixtral", "deepseek2", "dbrx", "grok", "arctic",
                          "olmoe", "granitemoe", "deepseek"})
        if (a == m) return true;
    return false;
}

}  // namespace

std::vector<std::string> ArchitectureTraits::names() {
    std::vector<std::string> out;
    for (const ArchitectureTraits& a : table()) out.push_back(a.name);
    return out;
}

const ArchitectureTraits& ArchitectureTraits::of(const std::string& architecture,
                                                 const std::string& file) {
    for (const ArchitectureTraits& a : table())
        if (a.name == architecture) return a;
    std::string list;
    for (const std::string& n : names()) list += (list.empty() ? "" : ", ") + n;
    throw Error(file + ": unknown architecture '" + architecture + "' in general.architecture" +
                (knownMoe(architecture)
                     ? " (a mixture-of-experts architecture; KV Lens runs dense models)"
                     : "") +
                " (supported: " + list + ")");
}

void ArchitectureTraits::refuseMixtureOfExperts(const GgufFile& file) {
    const std::string arch = file.getStringOr("general.architecture", "");
    const std::string key = arch + ".expert_count";
    if (file.has(key) && file.getUIntOr(key, 0) > 0) {
        throw Error(file.path() + ": a mixture-of-experts model (" + key + " = " +
                    std::to_string(file.getUIntOr(key, 0)) + "); KV Lens runs dense models only");
    }
    for (const char* t :
         {"blk.0.ffn_gate_exps.weight", "blk.0.ffn_up_exps.weight", "blk.0.ffn_gate_inp.weight"}) {
        if (file.findTensor(t)) {
            throw Error(file.path() + ": a mixture-of-experts model (tensor " + t +
                        "); KV Lens runs dense models only");
        }
    }
}

}  // namespace kvlens
