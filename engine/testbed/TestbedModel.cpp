#include "engine/testbed/TestbedModel.h"

#include <cmath>

#include "core/Error.h"
#include "engine/gguf/GgufFile.h"
#include "engine/gguf/GgufWriter.h"

namespace kvlens {
namespace {

at::Tensor rmsNorm(const at::Tensor& x, const at::Tensor& w, double eps) {
    return x * at::rsqrt(x.pow(2).mean(-1, true) + eps) * w;
}

std::vector<float> floats(const at::Tensor& t) {
    const at::Tensor c = t.detach().to(at::kFloat).contiguous();
    return std::vector<float>(c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
}

}  // namespace

TestbedModel::TestbedModel(const TestbedShape& s, int64_t vocabSize, uint64_t seed) : shape_(s), vocab_(vocabSize) {
    if (s.embed % s.heads != 0 || s.heads % s.kvHeads != 0 || s.headDim() % 2 != 0) {
        throw Error("testbed: " + std::to_string(s.heads) + " heads, " + std::to_string(s.kvHeads) +
                    " KV heads and width " + std::to_string(s.embed) + " do not divide");
    }
    at::Generator gen = at::detail::createCPUGenerator(seed);
    const int64_t E = s.embed, D = s.headDim();
    if (vocabSize < 1) throw Error("testbed: an empty vocabulary");
    const double resid = 0.02 / std::sqrt(2.0 * double(s.layers));
    auto normal = [&](const std::string& name, std::vector<int64_t> size, double std) {
        return register_parameter(name, at::normal(0.0, std, size, gen));
    };
    auto ones = [&](const std::string& name) { return register_parameter(name, at::ones({E})); };
    embedding_ = normal("token_embd", {vocabSize, E}, 0.02);
    for (int64_t l = 0; l < s.layers; ++l) {
        const std::string p = "blk" + std::to_string(l) + "_";  // module names take no '.'
        Layer L;
        L.attnNorm = ones(p + "attn_norm");
        L.wq = normal(p + "attn_q", {s.heads * D, E}, 0.02);
        L.wk = normal(p + "attn_k", {s.kvHeads * D, E}, 0.02);
        L.wv = normal(p + "attn_v", {s.kvHeads * D, E}, 0.02);
        L.wo = normal(p + "attn_output", {E, s.heads * D}, resid);
        L.ffnNorm = ones(p + "ffn_norm");
        L.wGate = normal(p + "ffn_gate", {s.ffn, E}, 0.02);
        L.wUp = normal(p + "ffn_up", {s.ffn, E}, 0.02);
        L.wDown = normal(p + "ffn_down", {E, s.ffn}, resid);
        layers_.push_back(L);
    }
    outputNorm_ = ones("output_norm");
}

int64_t TestbedModel::parameterCount() const {
    int64_t n = 0;
    for (const at::Tensor& p : parameters()) n += p.numel();
    return n;
}

at::Tensor TestbedModel::rope(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) const {
    // x [B, T, h, D]; pairs (2i, 2i+1) rotated by position * theta^(-2i/D).
    const auto sizes = x.sizes().vec();
    const at::Tensor xs = x.reshape({sizes[0], sizes[1], sizes[2], sizes[3] / 2, 2});
    const at::Tensor a = xs.select(-1, 0), b = xs.select(-1, 1);
    return at::stack({a * cos - b * sin, a * sin + b * cos}, -1).reshape(sizes);
}

at::Tensor TestbedModel::forward(const at::Tensor& ids) {
    const TestbedShape& s = shape_;
    const int64_t B = ids.size(0), T = ids.size(1), D = s.headDim(), H = s.heads, KV = s.kvHeads;
    if (T > s.context) throw Error("testbed: " + std::to_string(T) + " tokens exceed its context of " +
                                   std::to_string(s.context));
    const at::Tensor pos = at::arange(T, at::kDouble).unsqueeze(1);
    const at::Tensor inv = at::pow(s.ropeTheta, -2.0 * at::arange(D / 2, at::kDouble) / double(D)).unsqueeze(0);
    const at::Tensor angle = (pos * inv).to(at::kFloat).view({1, T, 1, D / 2});
    const at::Tensor cos = angle.cos(), sin = angle.sin();
    const at::Tensor mask = at::full({T, T}, -INFINITY).triu(1);
    at::Tensor x = embedding_.index_select(0, ids.reshape({-1})).view({B, T, s.embed});
    for (const Layer& L : layers_) {
        const at::Tensor h = rmsNorm(x, L.attnNorm, s.rmsEps);
        at::Tensor q = rope(at::linear(h, L.wq).view({B, T, H, D}), cos, sin);
        at::Tensor k = rope(at::linear(h, L.wk).view({B, T, KV, D}), cos, sin);
        at::Tensor v = at::linear(h, L.wv).view({B, T, KV, D});
        k = k.repeat_interleave(H / KV, 2);
        v = v.repeat_interleave(H / KV, 2);
        q = q.transpose(1, 2);  // [B, H, T, D]
        k = k.transpose(1, 2);
        v = v.transpose(1, 2);
        const at::Tensor p = at::softmax(at::matmul(q, k.transpose(2, 3)) / std::sqrt(double(D)) + mask, -1);
        const at::Tensor o = at::matmul(p, v).transpose(1, 2).reshape({B, T, H * D});
        x = x + at::linear(o, L.wo);
        const at::Tensor f = rmsNorm(x, L.ffnNorm, s.rmsEps);
        x = x + at::linear(at::silu(at::linear(f, L.wGate)) * at::linear(f, L.wUp), L.wDown);
    }
    return at::linear(rmsNorm(x, outputNorm_, s.rmsEps), embedding_);
}

void TestbedModel::forEachTensor(const std::function<void(const std::string&, at::Tensor&)>& fn) {
    fn("token_embd.weight", embedding_);
    for (size_t l = 0; l < layers_.size(); ++l) {
        Layer& L = layers_[l];
        const std::string p = "blk." + std::to_string(l) + ".";
        fn(p + "attn_norm.weight", L.attnNorm);
        fn(p + "attn_q.weight", L.wq);
        fn(p + "attn_k.weight", L.wk);
        fn(p + "attn_v.weight", L.wv);
        fn(p + "attn_output.weight", L.wo);
        fn(p + "ffn_norm.weight", L.ffnNorm);
        fn(p + "ffn_gate.weight", L.wGate);
        fn(p + "ffn_up.weight", L.wUp);
        fn(p + "ffn_down.weight", L.wDown);
    }
    fn("output_norm.weight", outputNorm_);
}

void TestbedModel::loadGguf(const std::string& path) {
    GgufFile file(path);
    at::NoGradGuard ng;
    auto load = [&](const std::string& name, at::Tensor& into) {
        const GgufTensorInfo* t = file.findTensor(name);
        if (!t) throw Error(path + ": no tensor '" + name + "' (not a testbed of this shape)");
        const std::vector<int64_t> want(into.sizes().rbegin(), into.sizes().rend());
        if (t->type != 0 || t->shape != want)
            throw Error(path + ": tensor '" + name + "' is not f32 of the testbed's shape");
        const at::Tensor src = at::from_blob(const_cast<uint8_t*>(file.tensorData(*t)), into.sizes(), at::kFloat);
        into.copy_(src);
    };
    forEachTensor([&](const std::string& name, at::Tensor& t) { load(name, t); });
}

void TestbedModel::writeGguf(const std::string& path, const LlamaVocab& vocab,
                             const std::vector<std::pair<std::string, std::string>>& metadata) const {
    if (static_cast<int64_t>(vocab.tokens.size()) != vocab_) {
        throw Error("testbed: a vocabulary of " + std::to_string(vocab.tokens.size()) + " tokens for a model of " +
                    std::to_string(vocab_));
    }
    const TestbedShape& s = shape_;
    GgufWriter w;
    w.addString("general.architecture", "llama");
    w.addString("general.name", "kvlens-testbed");
    w.addUInt32("llama.block_count", static_cast<uint32_t>(s.layers));
    w.addUInt32("llama.context_length", static_cast<uint32_t>(s.context));
    w.addUInt32("llama.embedding_length", static_cast<uint32_t>(s.embed));
    w.addUInt32("llama.feed_forward_length", static_cast<uint32_t>(s.ffn));
    w.addUInt32("llama.attention.head_count", static_cast<uint32_t>(s.heads));
    w.addUInt32("llama.attention.head_count_kv", static_cast<uint32_t>(s.kvHeads));
    w.addUInt32("llama.rope.dimension_count", static_cast<uint32_t>(s.headDim()));
    w.addFloat32("llama.rope.freq_base", static_cast<float>(s.ropeTheta));
    w.addFloat32("llama.attention.layer_norm_rms_epsilon", static_cast<float>(s.rmsEps));
    w.addString("tokenizer.ggml.model", "llama");
    w.addStringArray("tokenizer.ggml.tokens", vocab.tokens);
    w.addFloat32Array("tokenizer.ggml.scores", vocab.scores);
    std::vector<int32_t> types;
    for (LlamaTokenType t : vocab.types) types.push_back(static_cast<int32_t>(t));
    w.addInt32Array("tokenizer.ggml.token_type", types);
    w.addUInt32("tokenizer.ggml.bos_token_id", static_cast<uint32_t>(vocab.bosId));
    w.addUInt32("tokenizer.ggml.eos_token_id", static_cast<uint32_t>(vocab.eosId));
    w.addUInt32("tokenizer.ggml.unknown_token_id", static_cast<uint32_t>(vocab.unkId));
    w.addBool("tokenizer.ggml.add_bos_token", vocab.addBos);
    w.addBool("tokenizer.ggml.add_space_prefix", vocab.addSpacePrefix);
    for (const auto& [k, v] : metadata) w.addString("kvlens.testbed." + k, v);
    auto add = [&](const std::string& name, const at::Tensor& t) {
        std::vector<int64_t> shape(t.sizes().rbegin(), t.sizes().rend());  // ggml order
        w.addTensor(name, shape, GgufWriter::F32, floats(t));
    };
    const_cast<TestbedModel*>(this)->forEachTensor([&](const std::string& name, at::Tensor& t) { add(name, t); });
    w.write(path);
}

}  // namespace kvlens
