#include "engine/model/ModelWeights.h"

#include <ATen/CPUGeneratorImpl.h>

#include <cmath>
#include <map>

#include "engine/gguf/Dequantize.h"
#include "core/Error.h"
#include "engine/gguf/GgufFile.h"

namespace kvlens {
namespace {

std::string shapeText(const std::vector<int64_t>& shape) {
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + "]";
}

// Drops trailing 1s: a GGUF writer may store [E] as [E, 1].
std::vector<int64_t> trimmed(std::vector<int64_t> shape) {
    while (shape.size() > 1 && shape.back() == 1) shape.pop_back();
    return shape;
}

void dequantizeRow(uint32_t type, const void* src, float* dst, int64_t n) { dequantize(type, src, dst, n); }

// On the CPU, a matrix of a type other than F32 is read in place.
bool keptInFormat(uint32_t type, int64_t cols, c10::Device device) {
    return device.is_cpu() && type != static_cast<uint32_t>(GgmlType::F32) && cols % 32 == 0;
}

class GgufTensorLoader {
public:
    GgufTensorLoader(const std::shared_ptr<const GgufFile>& file, c10::Device device, c10::ScalarType dtype)
        : file_(file), device_(device), dtype_(dtype) {}

    // One tensor of a matrix: its name, the shape the metadata implies in ggml order
    // (fastest first), and which metadata says so.
    struct Piece {
        std::string name;
        std::vector<int64_t> ggmlShape;
        std::string because;
    };

    // `ggmlShape` is what the metadata implies, in ggml order (fastest first).
    at::Tensor load(const std::string& name, std::vector<int64_t> ggmlShape, bool keepFp32,
                    const std::string& because) {
        const GgufTensorInfo& info = check({name, ggmlShape, because});
        std::vector<int64_t> torchShape(ggmlShape.rbegin(), ggmlShape.rend());
        at::Tensor t = at::empty(torchShape, at::kFloat);
        dequantize(info.type, file_->tensorData(info), t.data_ptr<float>(), info.numel());
        return t.to(device_, keepFp32 ? at::kFloat : dtype_);
    }

    // A matrix of one or more tensors stacked by rows ([q | k | v], [gate | up]).
    kernels::Weight matrix(const std::vector<Piece>& pieces) {
        std::vector<const GgufTensorInfo*> infos;
        bool inFormat = true;
        for (const Piece& p : pieces) {
            infos.push_back(&check(p));
            inFormat = inFormat && keptInFormat(infos.back()->type, p.ggmlShape[0], device_);
        }
        if (!inFormat) {
            std::vector<at::Tensor> dense;
            for (const Piece& p : pieces) dense.push_back(load(p.name, p.ggmlShape, false, p.because));
            return dense.size() == 1 ? dense[0] : at::cat(dense);
        }
        std::vector<kernels::QuantMatrix::Part> parts;
        const int64_t cols = pieces[0].ggmlShape[0];
        for (size_t i = 0; i < pieces.size(); ++i) {
            const uint32_t type = infos[i]->type;
            const int64_t rowBytes = cols / ggmlBlockSize(type) * static_cast<int64_t>(ggmlBlockBytes(type));
            parts.push_back({kernels::QuantMatrix::formatOf(type), type, file_->tensorData(*infos[i]),
                             pieces[i].ggmlShape[1], rowBytes});
        }
        return kernels::Weight(std::make_shared<const kernels::QuantMatrix>(
            cols, std::move(parts), &dequantizeRow, std::shared_ptr<const void>(file_)));
    }

    std::vector<std::pair<std::string, int>> types() const {
        return {types_.begin(), types_.end()};
    }

private:
    const GgufTensorInfo& check(const Piece& p) {
        const GgufTensorInfo* info = file_->findTensor(p.name);
        if (!info) throw Error(file_->path() + ": tensor '" + p.name + "' is missing");
        if (trimmed(info->shape) != trimmed(p.ggmlShape)) {
            throw Error(file_->path() + ": tensor '" + p.name + "' has shape " + shapeText(info->shape) +
                        ", expected " + shapeText(p.ggmlShape) + " from metadata (" + p.because + ")");
        }
        if (!ggmlTypeSupported(info->type)) {
            throw Error(file_->path() + ": tensor '" + p.name + "' has unsupported type " +
                        ggmlTypeName(info->type) + " (supported: " + ggmlSupportedTypeList() + ")");
        }
        types_[ggmlTypeName(info->type)]++;
        return *info;
    }

    std::shared_ptr<const GgufFile> file_;
    c10::Device device_;
    c10::ScalarType dtype_;
    std::map<std::string, int> types_;
};

}  // namespace

int64_t ModelWeights::bytes() const {
    int64_t total = 0;
    auto add = [&](const at::Tensor& t) {
        if (t.defined()) total += t.numel() * t.element_size();
    };
    total += tokenEmbedding.bytes();
    add(outputNorm);
    if (!tiedOutput) total += output.bytes();
    for (const LayerWeights& l : layers) {
        for (const at::Tensor* t : {&l.attnNorm, &l.ffnNorm, &l.bqkv, &l.qNorm, &l.kNorm, &l.attnPostNorm, &l.ffnPostNorm})
            add(*t);
        for (const kernels::Weight* w : {&l.wqkv, &l.wo, &l.wGateUp, &l.wDown}) total += w->bytes();
    }
    return total;
}

int64_t ModelWeights::estimateBytes(const ModelConfig& c, c10::ScalarType dtype) {
    const int64_t qd = c.nHeads * c.headDim, kvd = c.nKvHeads * c.headDim;
    const int64_t perLayer = c.embedDim * (qd + 2 * kvd) + qd * c.embedDim + 3 * c.embedDim * c.ffnDim;
    return (c.nLayers * perLayer + 2 * c.vocabSize * c.embedDim) *
           static_cast<int64_t>(c10::elementSize(dtype));
}

bool ModelWeights::readsInPlace(const GgufFile& file, c10::Device device) {
    for (const GgufTensorInfo& t : file.tensors())
        if (t.shape.size() >= 2 && keptInFormat(t.type, t.shape[0], device)) return true;
    return false;
}

int64_t ModelWeights::denseBytes(const GgufFile& file, const ModelConfig& c, c10::Device device,
                                 c10::ScalarType dtype) {
    if (!device.is_cpu()) return estimateBytes(c, dtype);
    int64_t total = 0;
    for (const GgufTensorInfo& t : file.tensors()) {
        if (t.shape.size() >= 2 && !keptInFormat(t.type, t.shape[0], device))
            total += t.numel() * static_cast<int64_t>(c10::elementSize(dtype));
    }
    return total;
}

ModelWeights ModelWeights::fromGguf(const std::shared_ptr<const GgufFile>& filePtr, const ModelConfig& c,
                                    c10::Device device, c10::ScalarType dtype, const ProgressFn& progress) {
    const GgufFile& file = *filePtr;
    GgufTensorLoader loader(filePtr, device, dtype);
    ModelWeights w;
    const int64_t E = c.embedDim, qd = c.nHeads * c.headDim, kvd = c.nKvHeads * c.headDim;
    const std::string embedWhy = "embedding_length=" + std::to_string(E);
    const std::string vocabWhy = embedWhy + ", vocabulary=" + std::to_string(c.vocabSize);
    const std::string qWhy = embedWhy + ", head_count=" + std::to_string(c.nHeads) +
                             ", head_dim=" + std::to_string(c.headDim);
    const std::string kvWhy = embedWhy + ", head_count_kv=" + std::to_string(c.nKvHeads) +
                              ", head_dim=" + std::to_string(c.headDim);
    const std::string ffnWhy = embedWhy + ", feed_forward_length=" + std::to_string(c.ffnDim);

    const ArchitectureTraits& traits = ArchitectureTraits::of(c.architecture, file.path());
    // Phi-3's LongRoPE (the 128k files' per-frequency factors, long and short) is not implemented.
    for (const char* t : {"rope_factors_long.weight", "rope_factors_short.weight"}) {
        if (file.findTensor(t)) {
            throw Error(file.path() + ": tensor '" + t + "': LongRoPE scaling is not supported (none, linear, yarn and Llama 3's rope_freqs are)");
        }
    }
    w.tokenEmbedding = loader.matrix({{"token_embd.weight", {E, c.vocabSize}, vocabWhy}});
    for (int64_t l = 0; l < c.nLayers; ++l) {
        if (progress) progress(double(l) / double(c.nLayers), "loading layer " + std::to_string(l));
        const std::string p = "blk." + std::to_string(l) + ".";
        LayerWeights L;
        L.attnNorm = loader.load(p + "attn_norm.weight", {E}, true, embedWhy);
        if (traits.fusedQkv) {
            L.wqkv = loader.matrix({{p + "attn_qkv.weight", {E, qd + 2 * kvd}, qWhy + ", head_count_kv=" + std::to_string(c.nKvHeads)}});
        } else {
            L.wqkv = loader.matrix({{p + "attn_q.weight", {E, qd}, qWhy},
                                    {p + "attn_k.weight", {E, kvd}, kvWhy},
                                    {p + "attn_v.weight", {E, kvd}, kvWhy}});
        }
        L.wo = loader.matrix({{p + "attn_output.weight", {qd, E}, qWhy}});
        if (c.postNorms) {  // gemma2
            L.attnPostNorm = loader.load(p + "post_attention_norm.weight", {E}, true, embedWhy);
            L.ffnPostNorm = loader.load(p + "post_ffw_norm.weight", {E}, true, embedWhy);
        }
        if (c.qkvBias) {
            L.bqkv = at::cat({loader.load(p + "attn_q.bias", {qd}, false, qWhy),
                              loader.load(p + "attn_k.bias", {kvd}, false, kvWhy),
                              loader.load(p + "attn_v.bias", {kvd}, false, kvWhy)});
        }
        if (c.qkNorm) {
            const std::string headWhy = "head_dim=" + std::to_string(c.headDim);
            L.qNorm = loader.load(p + "attn_q_norm.weight", {c.headDim}, true, headWhy);
            L.kNorm = loader.load(p + "attn_k_norm.weight", {c.headDim}, true, headWhy);
        }
        L.ffnNorm = loader.load(p + "ffn_norm.weight", {E}, true, embedWhy);
        if (traits.fusedGateUp) {  // [gate | up] in one tensor, gate first (llama.cpp's LLM_FFN_SWIGLU split)
            L.wGateUp = loader.matrix({{p + "ffn_up.weight", {E, 2 * c.ffnDim}, ffnWhy + " (gate and up fused)"}});
        } else {
            L.wGateUp = loader.matrix({{p + "ffn_gate.weight", {E, c.ffnDim}, ffnWhy},
                                       {p + "ffn_up.weight", {E, c.ffnDim}, ffnWhy}});
        }
        L.wDown = loader.matrix({{p + "ffn_down.weight", {c.ffnDim, E}, ffnWhy}});
        w.layers.push_back(std::move(L));
    }
    w.outputNorm = loader.load("output_norm.weight", {E}, true, embedWhy);
    if (file.findTensor("rope_freqs.weight")) {
        w.ropeFreqFactors = loader.load("rope_freqs.weight", {c.ropeDim / 2}, true,
                                        "rope.dimension_count=" + std::to_string(c.ropeDim));
        if (!(w.ropeFreqFactors.to(at::kCPU).min().item<float>() > 0.0f)) {
            throw Error(file.path() + ": rope_freqs.weight holds a factor that is not positive");
        }
    }
    if (file.findTensor("output.weight")) {
        w.output = loader.matrix({{"output.weight", {E, c.vocabSize}, vocabWhy}});
    } else {
        w.output = w.tokenEmbedding;
        w.tiedOutput = true;
    }
    w.sourceTypes = loader.types();
    if (progress) progress(1.0, "loaded");
    return w;
}

ModelWeights ModelWeights::random(const ModelConfig& c, uint64_t seed, c10::Device device,
                                  c10::ScalarType dtype, const ProgressFn& progress) {
    // Each tensor gets its own generator seeded from (seed, layer, slot).
    auto draw = [&](std::vector<int64_t> shape, double stddev, uint64_t layer, uint64_t slot) {
        at::Generator gen =
            at::detail::createCPUGenerator(seed * 0x9E3779B97F4A7C15ull + layer * 64 + slot + 1);
        const double a = std::sqrt(3.0) * stddev;
        at::Tensor t = at::empty(shape, at::kFloat);
        t.uniform_(-a, a, gen);
        return t.to(device, dtype);
    };
    const int64_t E = c.embedDim, qd = c.nHeads * c.headDim, kvd = c.nKvHeads * c.headDim;
    const auto fp32 = at::TensorOptions().dtype(at::kFloat).device(device);
    const uint64_t top = 1u << 20;
    ModelWeights w;
    w.tokenEmbedding = draw({c.vocabSize, E}, 1.0, top, 0);
    for (int64_t l = 0; l < c.nLayers; ++l) {
        if (progress) progress(double(l) / double(c.nLayers), "drawing layer " + std::to_string(l));
        LayerWeights L;
        const uint64_t u = static_cast<uint64_t>(l);
        L.attnNorm = at::ones({E}, fp32);
        L.ffnNorm = at::ones({E}, fp32);
        if (c.postNorms) {
            L.attnPostNorm = at::ones({E}, fp32);
            L.ffnPostNorm = at::ones({E}, fp32);
        }
        const double inE = 1.0 / std::sqrt(double(E));
        L.wqkv = at::cat({draw({qd, E}, inE, u, 1), draw({kvd, E}, inE, u, 2),
                          draw({kvd, E}, inE, u, 3)});
        L.wo = draw({E, qd}, 1.0 / std::sqrt(double(qd)), u, 4);
        L.wGateUp = at::cat({draw({c.ffnDim, E}, inE, u, 5), draw({c.ffnDim, E}, inE, u, 6)});
        L.wDown = draw({E, c.ffnDim}, 1.0 / std::sqrt(double(c.ffnDim)), u, 7);
        if (c.qkvBias) {
            L.bqkv = at::cat({draw({qd}, 0.1, u, 8), draw({kvd}, 0.1, u, 9), draw({kvd}, 0.1, u, 10)});
        }
        w.layers.push_back(std::move(L));
    }
    w.outputNorm = at::ones({E}, fp32);
    w.output = draw({c.vocabSize, E}, 1.0 / std::sqrt(double(E)), top, 1);
    w.sourceTypes = {{"random", 0}};
    if (progress) progress(1.0, "drawn");
    return w;
}

}  // namespace kvlens
