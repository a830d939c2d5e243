// Safetensors -> ModelWeights, checked against config.json tensor by tensor.
#include "engine/hf/HfWeightLoader.h"

#include <cstring>
#include <map>

#include "core/Error.h"
#include "engine/gguf/Dequantize.h"
#include "engine/hf/HfFolder.h"

namespace kvlens {
namespace {

std::string shapeText(const std::vector<int64_t>& shape) {
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + "]";
}

c10::ScalarType torchType(const std::string& dtype) {
    if (dtype == "F32") return at::kFloat;
    if (dtype == "F16") return at::kHalf;
    return at::kBFloat16;
}

uint32_t ggmlType(const std::string& dtype) {
    return static_cast<uint32_t>(dtype == "F16" ? GgmlType::F16 : GgmlType::BF16);
}

// On the CPU, F16/BF16 matrices are read in place (rows of 32-multiples, 2-byte aligned data).
bool inPlace(const SafetensorsTensor& t, const uint8_t* data, c10::Device device) {
    return device.is_cpu() && (t.dtype == "F16" || t.dtype == "BF16") && t.shape.size() == 2 &&
           t.shape[1] % 32 == 0 && reinterpret_cast<uintptr_t>(data) % 2 == 0;
}

void dequantizeRow(uint32_t type, const void* src, float* dst, int64_t n) { dequantize(type, src, dst, n); }

class Loader {
public:
    Loader(const HfFolder& folder, c10::Device device, c10::ScalarType dtype)
        : folder_(folder), device_(device), dtype_(dtype) {}

    struct Piece {
        std::string name;
        std::vector<int64_t> shape;  // torch order, as config.json implies
        std::string because;
    };

    at::Tensor load(const Piece& p, bool keepFp32) {
        std::shared_ptr<const SafetensorsFile> shard;
        const SafetensorsTensor& t = check(p, &shard);
        at::Tensor raw = at::empty(t.shape, torchType(t.dtype));
        std::memcpy(raw.data_ptr(), shard->data(t), static_cast<size_t>(t.end - t.begin));
        return raw.to(device_, keepFp32 ? at::kFloat : dtype_);
    }

    // Rows of one or more tensors stacked ([q | k | v], [gate | up]).
    kernels::Weight matrix(const std::vector<Piece>& pieces) {
        std::vector<std::pair<const SafetensorsTensor*, std::shared_ptr<const SafetensorsFile>>> found;
        bool allInPlace = true;
        for (const Piece& p : pieces) {
            std::shared_ptr<const SafetensorsFile> shard;
            const SafetensorsTensor& t = check(p, &shard);
            allInPlace = allInPlace && inPlace(t, shard->data(t), device_);
            found.emplace_back(&t, shard);
        }
        if (!allInPlace) {
            std::vector<at::Tensor> dense;
            for (const Piece& p : pieces) dense.push_back(load(p, false));
            return dense.size() == 1 ? dense[0] : at::cat(dense);
        }
        std::vector<kernels::QuantMatrix::Part> parts;
        const int64_t cols = pieces[0].shape[1];
        std::vector<std::shared_ptr<const SafetensorsFile>> owners;
        for (const auto& [t, shard] : found) {
            const uint32_t type = ggmlType(t->dtype);
            parts.push_back({kernels::QuantMatrix::formatOf(type), type, shard->data(*t), t->shape[0], cols * 2});
            owners.push_back(shard);
        }
        return kernels::Weight(std::make_shared<const kernels::QuantMatrix>(
            cols, std::move(parts), &dequantizeRow,
            std::make_shared<std::vector<std::shared_ptr<const SafetensorsFile>>>(std::move(owners))));
    }

    bool has(const std::string& name) const { return folder_.findTensor(name) != nullptr; }

    std::vector<std::pair<std::string, int>> types() const { return {types_.begin(), types_.end()}; }

private:
    const SafetensorsTensor& check(const Piece& p, std::shared_ptr<const SafetensorsFile>* shard) {
        const SafetensorsTensor* t = folder_.findTensor(p.name, shard);
        if (!t) {
            throw Error(folder_.dir() + ": tensor '" + p.name + "' is missing from the weights (" +
                        std::to_string(folder_.shards().size()) + " safetensors file" +
                        (folder_.shards().size() == 1 ? "" : "s") + ")");
        }
        const std::string& where = (*shard)->path();
        if (t->shape != p.shape) {
            throw Error(where + ": tensor '" + p.name + "' has shape " + shapeText(t->shape) + ", expected " +
                        shapeText(p.shape) + " from config.json (" + p.because + ")");
        }
        if (t->dtype != "F32" && t->dtype != "F16" && t->dtype != "BF16") {
            throw Error(where + ": tensor '" + p.name + "' has dtype " + t->dtype +
                        ", which KV Lens does not read (supported: F32, F16, BF16)");
        }
        types_[t->dtype]++;
        return *t;
    }

    const HfFolder& folder_;
    c10::Device device_;
    c10::ScalarType dtype_;
    std::map<std::string, int> types_;
};

}  // namespace

int64_t HfWeightLoader::denseBytes(const HfFolder& folder, c10::Device device, c10::ScalarType dtype) {
    int64_t total = 0;
    for (const auto& shard : folder.shards()) {
        for (const SafetensorsTensor& t : shard->tensors()) {
            if (t.shape.size() == 2 && !inPlace(t, shard->data(t), device)) {
                total += t.numel() * static_cast<int64_t>(c10::elementSize(dtype));
            }
        }
    }
    return total;
}

ModelWeights HfWeightLoader::load(const HfFolder& folder, c10::Device device, c10::ScalarType dtype,
                                  const ProgressFn& progress) {
    const HfConfig& h = folder.config();
    const ModelConfig& c = h.model;
    Loader loader(folder, device, dtype);
    ModelWeights w;
    const int64_t E = c.embedDim, qd = c.nHeads * c.headDim, kvd = c.nKvHeads * c.headDim;
    const std::string embedWhy = "hidden_size=" + std::to_string(E);
    const std::string vocabWhy = embedWhy + ", vocab_size=" + std::to_string(c.vocabSize);
    const std::string qWhy = embedWhy + ", num_attention_heads=" + std::to_string(c.nHeads) +
                             ", head_dim=" + std::to_string(c.headDim);
    const std::string kvWhy = embedWhy + ", num_key_value_heads=" + std::to_string(c.nKvHeads) +
                              ", head_dim=" + std::to_string(c.headDim);
    const std::string ffnWhy = embedWhy + ", intermediate_size=" + std::to_string(c.ffnDim);

    const bool phi3 = c.architecture == "phi3";
    // Where the text model's tensors are: "model." or, in a multimodal checkpoint, under the
    // language model (transformers 4.52+ writes model.language_model., earlier ones
    // language_model.model.).
    std::string root = "model.";
    if (h.multimodal) {
        root = loader.has("language_model.model.embed_tokens.weight") ? "language_model.model." : "model.language_model.";
    }
    // Gemma's norms are applied as (1 + w): loaded so, as llama.cpp's converter stores them.
    auto norm = [&](const std::string& name, int64_t n, const std::string& why) {
        at::Tensor t = loader.load({name, {n}, why}, true);
        return h.normPlusOne ? t.add_(1.0f) : t;
    };
    w.tokenEmbedding = loader.matrix({{root + "embed_tokens.weight", {c.vocabSize, E}, vocabWhy}});
    for (int64_t l = 0; l < c.nLayers; ++l) {
        if (progress) progress(double(l) / double(c.nLayers), "loading layer " + std::to_string(l));
        const std::string p = root + "layers." + std::to_string(l) + ".";
        LayerWeights L;
        L.attnNorm = norm(p + "input_layernorm.weight", E, embedWhy);
        if (phi3) {  // Phi3ForCausalLM fuses [q | k | v] and [gate | up]
            L.wqkv = loader.matrix({{p + "self_attn.qkv_proj.weight", {qd + 2 * kvd, E}, qWhy + ", num_key_value_heads=" + std::to_string(c.nKvHeads)}});
        } else {
            L.wqkv = loader.matrix({{p + "self_attn.q_proj.weight", {qd, E}, qWhy},
                                    {p + "self_attn.k_proj.weight", {kvd, E}, kvWhy},
                                    {p + "self_attn.v_proj.weight", {kvd, E}, kvWhy}});
        }
        L.wo = loader.matrix({{p + "self_attn.o_proj.weight", {E, qd}, qWhy}});
        if (c.qkvBias) {
            L.bqkv = at::cat({loader.load({p + "self_attn.q_proj.bias", {qd}, qWhy}, false),
                              loader.load({p + "self_attn.k_proj.bias", {kvd}, kvWhy}, false),
                              loader.load({p + "self_attn.v_proj.bias", {kvd}, kvWhy}, false)});
        }
        if (c.qkNorm) {
            const std::string headWhy = "head_dim=" + std::to_string(c.headDim);
            L.qNorm = norm(p + "self_attn.q_norm.weight", c.headDim, headWhy);
            L.kNorm = norm(p + "self_attn.k_norm.weight", c.headDim, headWhy);
        }
        if (c.postNorms) {  // Gemma: post_attention_layernorm follows attention, a pre_feedforward one leads the MLP
            L.attnPostNorm = norm(p + "post_attention_layernorm.weight", E, embedWhy);
            L.ffnNorm = norm(p + "pre_feedforward_layernorm.weight", E, embedWhy);
            L.ffnPostNorm = norm(p + "post_feedforward_layernorm.weight", E, embedWhy);
        } else {
            L.ffnNorm = norm(p + "post_attention_layernorm.weight", E, embedWhy);
        }
        if (phi3) {
            L.wGateUp = loader.matrix({{p + "mlp.gate_up_proj.weight", {2 * c.ffnDim, E}, ffnWhy + " (gate and up fused)"}});
        } else {
            L.wGateUp = loader.matrix({{p + "mlp.gate_proj.weight", {c.ffnDim, E}, ffnWhy},
                                       {p + "mlp.up_proj.weight", {c.ffnDim, E}, ffnWhy}});
        }
        L.wDown = loader.matrix({{p + "mlp.down_proj.weight", {E, c.ffnDim}, ffnWhy}});
        w.layers.push_back(std::move(L));
    }
    w.outputNorm = norm(root + "norm.weight", E, embedWhy);
    if (!h.ropeFreqFactors.empty()) {
        w.ropeFreqFactors = at::from_blob(const_cast<float*>(h.ropeFreqFactors.data()),
                                          {static_cast<int64_t>(h.ropeFreqFactors.size())}, at::kFloat)
                                .clone()
                                .to(device);
    }
    if (h.tiedEmbeddings) {
        w.output = w.tokenEmbedding;
        w.tiedOutput = true;
    } else {
        if (!loader.has("lm_head.weight")) {
            throw Error(folder.dir() + ": tensor 'lm_head.weight' is missing and config.json's "
                                       "tie_word_embeddings is false");
        }
        w.output = loader.matrix({{"lm_head.weight", {c.vocabSize, E}, vocabWhy}});
    }
    w.sourceTypes = loader.types();
    if (progress) progress(1.0, "loaded");
    return w;
}

}  // namespace kvlens
