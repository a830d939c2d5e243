#include "engine/model/ModelConfig.h"

#include <cmath>
#include <utility>

#include "core/Error.h"
#include "engine/gguf/GgufFile.h"

namespace kvlens {

ModelConfig ModelConfig::fromGguf(const GgufFile& file) {
    ModelConfig c;
    const std::string arch = file.getString("general.architecture");
    const ArchitectureTraits& traits = ArchitectureTraits::of(arch, file.path());
    ArchitectureTraits::refuseMixtureOfExperts(file);
    c.architecture = arch;
    c.name = file.getStringOr("general.name", "");
    const std::string p = arch + ".";
    c.nLayers = static_cast<int64_t>(file.getUInt(p + "block_count"));
    c.embedDim = static_cast<int64_t>(file.getUInt(p + "embedding_length"));
    c.ffnDim = static_cast<int64_t>(file.getUInt(p + "feed_forward_length"));
    c.nHeads = static_cast<int64_t>(file.getUInt(p + "attention.head_count"));
    c.nKvHeads = static_cast<int64_t>(file.getUIntOr(p + "attention.head_count_kv", c.nHeads));
    c.contextLength = static_cast<int64_t>(file.getUIntOr(p + "context_length", 2048));
    c.rmsEps = file.getFloatOr(p + "attention.layer_norm_rms_epsilon", 1e-5);
    c.ropeTheta = file.getFloatOr(p + "rope.freq_base", 10000.0);
    if (c.nHeads <= 0) {
        throw Error(file.path() + ": metadata key '" + p + "attention.head_count' is 0");
    }
    c.headDim = static_cast<int64_t>(
        file.getUIntOr(p + "attention.key_length", static_cast<uint64_t>(c.embedDim / c.nHeads)));
    c.ropeDim = static_cast<int64_t>(file.getUIntOr(p + "rope.dimension_count", c.headDim));
    c.ropeStyle = traits.ropeStyle;
    c.qkvBias = traits.qkvBias;
    c.qkNorm = traits.qkNorm;
    // RoPE scaling from the metadata (RopeFrequencies): Llama 3's frequency factors
    // come as the rope_freqs.weight tensor (ModelWeights); linear and YaRN scaling
    // as rope.scaling.type with its factor (absent or 0: 1, as llama.cpp reads it).
    const std::string scaling = file.getStringOr(p + "rope.scaling.type", "none");
    if (scaling == "linear" || scaling == "yarn") {
        c.ropeScaling = scaling == "linear" ? RopeScaling::Linear : RopeScaling::Yarn;
        c.ropeScaleFactor = file.getFloatOr(p + "rope.scaling.factor", 0.0);
        if (c.ropeScaleFactor == 0.0) c.ropeScaleFactor = 1.0;
        if (!(c.ropeScaleFactor >= 1.0)) {
            throw Error(file.path() + ": " + p + "rope.scaling.factor must be at least 1 for " + scaling +
                        " scaling");
        }
        c.ropeOriginalContext = static_cast<int64_t>(
            file.getUIntOr(p + "rope.scaling.original_context_length", static_cast<uint64_t>(c.contextLength)));
        if (c.ropeOriginalContext <= 0) c.ropeOriginalContext = c.contextLength;
        c.ropeAttnFactor = file.getFloatOr(p + "rope.scaling.attn_factor", 1.0);
        if (!(c.ropeAttnFactor > 0.0)) {
            throw Error(file.path() + ": " + p + "rope.scaling.attn_factor must be positive");
        }
    } else if (scaling != "none" && scaling != "llama3") {
        throw Error(file.path() + ": " + p + "rope.scaling.type '" + scaling +
                    "' is not supported (none, linear, yarn and Llama 3's rope_freqs are)");
    }
    if (traits.slidingWindow) {
        // As llama.cpp c392e50 reads phi3 and gemma2: the key, else the architecture's default
        // (gemma2: 4096; phi3: its defaults for the files written before the key existed, else
        // the file is refused; 0 in the key: no window).
        int64_t window = traits.defaultWindow;
        if (window == 0) {
            if (c.contextLength == 4096 && (c.nLayers == 32 || c.nLayers == 40)) window = 2047;
            if (c.contextLength == 131072 && c.nLayers == 32 && c.nKvHeads == 32) window = 262144;
            if (c.contextLength == 131072 && c.nLayers == 40) window = 131072;
        }
        const std::string key = p + "attention.sliding_window";
        if (file.has(key)) {
            window = static_cast<int64_t>(file.getUInt(key));
        } else if (window == 0) {
            throw Error(file.path() + ": " + key + " is missing (llama.cpp refuses such a " + arch + " file too)");
        }
        c.slidingWindow = window;
        c.windowPeriod = traits.windowPeriod;
    }
    c.activation = traits.activation;
    c.postNorms = traits.postNorms;
    if (traits.scaledEmbedding) c.embedScale = static_cast<double>(std::sqrt(static_cast<float>(c.embedDim)));
    if (traits.softcaps) {
        // llama.cpp's defaults when a key is absent (Gemma 2's published values).
        c.attnSoftcap = file.getFloatOr(p + "attn_logit_softcapping", 50.0);
        c.finalSoftcap = file.getFloatOr(p + "final_logit_softcapping", 30.0);
        for (const auto& [key, v] : {std::pair<std::string, double>{p + "attn_logit_softcapping", c.attnSoftcap},
                                     {p + "final_logit_softcapping", c.finalSoftcap}}) {
            if (!(v > 0.0 && v < 1e6)) throw Error(file.path() + ": " + key + " must be in (0, 1e6), is " + std::to_string(v));
        }
    }
    if (arch == "gemma2") {
        // llama.cpp scales the queries by 1/sqrt(embedding_length / head_count) for the 46-layer
        // (27B) model and by 1/sqrt(head dimension) otherwise (Gemma 2's query_pre_attn_scalar;
        // the GGUF has no key for it).
        const double scalar = c.nLayers == 46 ? double(c.embedDim / c.nHeads) : double(c.headDim);
        c.queryScale = 1.0 / std::sqrt(scalar);
    }
    if (const GgufValue* tokens = file.find("tokenizer.ggml.tokens")) {
        c.vocabSize = static_cast<int64_t>(tokens->array.size());
    }
    if (const GgufTensorInfo* emb = file.findTensor("token_embd.weight")) {
        if (emb->shape.size() == 2 && c.vocabSize == 0) c.vocabSize = emb->shape[1];
    }
    c.validate(file.path());
    return c;
}

ModelShape ModelConfig::shape() const {
    ModelShape s;
    s.architecture = architecture;
    s.name = name;
    s.layers = nLayers;
    s.heads = nHeads;
    s.kvHeads = nKvHeads;
    s.headDim = headDim;
    s.embedDim = embedDim;
    s.ffnDim = ffnDim;
    s.vocabSize = vocabSize;
    s.contextLength = contextLength;
    s.ropeTheta = ropeTheta;
    return s;
}

void ModelConfig::validate(const std::string& source) const {
    auto bad = [&](const std::string& what) { throw Error(source + ": " + what); };
    auto positive = [&](int64_t v, const char* field) {
        if (v <= 0 || v > (int64_t(1) << 31)) bad(std::string(field) + " is " + std::to_string(v));
    };
    positive(nLayers, "block_count");
    positive(embedDim, "embedding_length");
    positive(ffnDim, "feed_forward_length");
    positive(nHeads, "attention.head_count");
    positive(nKvHeads, "attention.head_count_kv");
    positive(headDim, "head dimension");
    positive(vocabSize, "vocabulary size");
    positive(contextLength, "context_length");
    if (nHeads % nKvHeads != 0) {
        bad("attention.head_count " + std::to_string(nHeads) +
            " is not a multiple of attention.head_count_kv " + std::to_string(nKvHeads));
    }
    if (ropeDim <= 0 || ropeDim > headDim || ropeDim % 2 != 0) {
        bad("rope.dimension_count " + std::to_string(ropeDim) +
            " must be even and at most the head dimension " + std::to_string(headDim));
    }
    if (!(ropeTheta > 0.0)) bad("rope.freq_base must be positive");
    if (!(rmsEps > 0.0)) bad("attention.layer_norm_rms_epsilon must be positive");
    if (slidingWindow < 0 || slidingWindow > (int64_t(1) << 31)) bad("attention.sliding_window is " + std::to_string(slidingWindow));
    if (windowPeriod < 0 || windowPeriod == 1 || windowPeriod > (int64_t(1) << 31))
        bad("the sliding-window layer period is " + std::to_string(windowPeriod));
    if (!(embedScale > 0.0 && std::isfinite(embedScale))) bad("the embedding scale must be positive");
    if (!(queryScale >= 0.0 && std::isfinite(queryScale))) bad("the query scale must be positive");
    if (!(attnSoftcap >= 0.0 && attnSoftcap < 1e6)) bad("attn_logit_softcapping must be in (0, 1e6)");
    if (!(finalSoftcap >= 0.0 && finalSoftcap < 1e6)) bad("final_logit_softcapping must be in (0, 1e6)");
    if (!(localRopeTheta >= 0.0 && localRopeTheta <= 1e12)) bad("the local layers' RoPE base must be positive");
}

}  // namespace kvlens
