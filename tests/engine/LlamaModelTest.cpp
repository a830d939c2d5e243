// The forward pass against an independent double-precision reference written
// here from the definitions, and decode against prefill.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "engine/gguf/Dequantize.h"
#include "core/Error.h"
#include "engine/model/Generator.h"
#include "engine/gguf/GgufFile.h"
#include "engine/model/ModelLoader.h"
#include "support/GgufBuilder.h"
#include "support/TinyModelFile.h"

namespace kvlens {
namespace {

using test::TinyModelFile;
using test::TinyModelShape;
using Vec = std::vector<double>;

// y[o] = sum_i W[o * in + i] x[i], W in ggml order [in, out].
Vec matvec(const std::vector<float>& w, int64_t in, int64_t out, const Vec& x) {
    Vec y(out, 0.0);
    for (int64_t o = 0; o < out; ++o) {
        double s = 0.0;
        for (int64_t i = 0; i < in; ++i) s += double(w[o * in + i]) * x[i];
        y[o] = s;
    }
    return y;
}

Vec rmsNorm(const Vec& x, const std::vector<float>& w) {
    double ss = 0.0;
    for (double v : x) ss += v * v;
    const double r = 1.0 / std::sqrt(ss / double(x.size()) + 1e-5);
    Vec y(x.size());
    for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] * r * double(w[i]);
    return y;
}

void rope(double* v, int64_t headDim, int64_t ropeDim, double theta, int64_t pos, bool halves,
          const std::vector<float>* factors = nullptr) {
    for (int64_t i = 0; i < ropeDim / 2; ++i) {
        // Llama 3.1: each pair's frequency divided by its factor (rope_freqs.weight).
        const double factor = factors ? double((*factors)[size_t(i)]) : 1.0;
        const double angle = double(pos) * std::pow(theta, -2.0 * double(i) / double(ropeDim)) / factor;
        const int64_t a = halves ? i : 2 * i, b = halves ? i + ropeDim / 2 : 2 * i + 1;
        const double x0 = v[a], x1 = v[b];
        v[a] = x0 * std::cos(angle) - x1 * std::sin(angle);
        v[b] = x0 * std::sin(angle) + x1 * std::cos(angle);
    }
    (void)headDim;
}

// Logits of every position, computed token by token from the definitions.
std::vector<Vec> referenceForward(const TinyModelFile& m, const std::vector<int32_t>& tokens) {
    const TinyModelShape& s = m.shape;
    const int64_t E = s.embed, hd = E / s.heads, G = s.heads / s.kvHeads, T = tokens.size();
    const int64_t R = s.ropeDim > 0 ? s.ropeDim : hd;
    const bool halves = s.architecture == "qwen2" || s.architecture == "qwen3";
    const std::vector<float>* factors = s.llama3Rope ? &m.weights.at("rope_freqs.weight") : nullptr;
    auto W = [&](const std::string& n) -> const std::vector<float>& { return m.weights.at(n); };
    std::vector<Vec> x(T);
    for (int64_t t = 0; t < T; ++t) {
        const auto& emb = W("token_embd.weight");
        x[t].assign(emb.begin() + tokens[t] * E, emb.begin() + (tokens[t] + 1) * E);
    }
    for (int64_t l = 0; l < s.layers; ++l) {
        const std::string p = "blk." + std::to_string(l) + ".";
        std::vector<Vec> q(T), k(T), v(T);
        for (int64_t t = 0; t < T; ++t) {
            const Vec h = rmsNorm(x[t], W(p + "attn_norm.weight"));
            q[t] = matvec(W(p + "attn_q.weight"), E, s.heads * hd, h);
            k[t] = matvec(W(p + "attn_k.weight"), E, s.kvHeads * hd, h);
            v[t] = matvec(W(p + "attn_v.weight"), E, s.kvHeads * hd, h);
            if (s.architecture == "qwen2") {
                for (size_t i = 0; i < q[t].size(); ++i) q[t][i] += W(p + "attn_q.bias")[i];
                for (size_t i = 0; i < k[t].size(); ++i) k[t][i] += W(p + "attn_k.bias")[i];
                for (size_t i = 0; i < v[t].size(); ++i) v[t][i] += W(p + "attn_v.bias")[i];
            }
            if (s.architecture == "qwen3") {
                // Qwen3: RMSNorm of each head of q and k (own weights) before RoPE.
                auto normHeads = [&](Vec& x, int64_t heads, const std::vector<float>& w) {
                    for (int64_t h2 = 0; h2 < heads; ++h2) {
                        const Vec head(x.begin() + h2 * hd, x.begin() + (h2 + 1) * hd);
                        const Vec n = rmsNorm(head, w);
                        std::copy(n.begin(), n.end(), x.begin() + h2 * hd);
                    }
                };
                normHeads(q[t], s.heads, W(p + "attn_q_norm.weight"));
                normHeads(k[t], s.kvHeads, W(p + "attn_k_norm.weight"));
            }
            for (int64_t h2 = 0; h2 < s.heads; ++h2) rope(&q[t][h2 * hd], hd, R, s.ropeTheta, t, halves, factors);
            for (int64_t h2 = 0; h2 < s.kvHeads; ++h2) rope(&k[t][h2 * hd], hd, R, s.ropeTheta, t, halves, factors);
        }
        for (int64_t t = 0; t < T; ++t) {
            Vec attn(s.heads * hd, 0.0);
            for (int64_t h2 = 0; h2 < s.heads; ++h2) {
                const int64_t kv = h2 / G;
                Vec scores(t + 1);
                double mx = -1e300;
                for (int64_t j = 0; j <= t; ++j) {
                    double d = 0.0;
                    for (int64_t i = 0; i < hd; ++i) d += q[t][h2 * hd + i] * k[j][kv * hd + i];
                    scores[j] = d / std::sqrt(double(hd));
                    mx = std::max(mx, scores[j]);
                }
                double z = 0.0;
                for (double& sc : scores) z += (sc = std::exp(sc - mx));
                for (int64_t j = 0; j <= t; ++j) {
                    for (int64_t i = 0; i < hd; ++i) attn[h2 * hd + i] += scores[j] / z * v[j][kv * hd + i];
                }
            }
            const Vec o = matvec(W(p + "attn_output.weight"), s.heads * hd, E, attn);
            for (int64_t i = 0; i < E; ++i) x[t][i] += o[i];
            const Vec h = rmsNorm(x[t], W(p + "ffn_norm.weight"));
            Vec g = matvec(W(p + "ffn_gate.weight"), E, s.ffn, h);
            const Vec u = matvec(W(p + "ffn_up.weight"), E, s.ffn, h);
            for (int64_t i = 0; i < s.ffn; ++i) g[i] = g[i] / (1.0 + std::exp(-g[i])) * u[i];
            const Vec d = matvec(W(p + "ffn_down.weight"), s.ffn, E, g);
            for (int64_t i = 0; i < E; ++i) x[t][i] += d[i];
        }
    }
    std::vector<Vec> logits(T);
    const auto& out = s.tiedOutput ? W("token_embd.weight") : W("output.weight");
    for (int64_t t = 0; t < T; ++t) logits[t] = matvec(out, E, m.vocab, rmsNorm(x[t], W("output_norm.weight")));
    return logits;
}

std::unique_ptr<LlamaModel> loadTiny(const TinyModelFile& m, const std::string& name) {
    const std::string path = test::testOutputPath(name);
    m.builder.writeFile(path);
    LoadedModel loaded = loadModel(path, c10::Device(c10::kCPU), c10::kFloat);
    return std::move(loaded.model);
}

struct ShapeCase {
    const char* label;
    TinyModelShape shape;
};

void PrintTo(const ShapeCase& c, std::ostream* os) { *os << c.label; }

class ForwardMatchesReference : public ::testing::TestWithParam<ShapeCase> {};

TEST_P(ForwardMatchesReference, AllPositionsWithinTolerance) {
    const TinyModelFile m = test::makeTinyModelFile(GetParam().shape);
    auto model = loadTiny(m, std::string("forward_") + GetParam().label + ".gguf");
    const std::vector<int32_t> tokens = {1, 260, 17, 270, 5, 99, 42, 262, 8, 3, 211, 64};
    const std::vector<Vec> expected = referenceForward(m, tokens);
    // Small blocks so the blocked attention runs several query blocks.
    model->setAttentionBlockBytes(int64_t(GetParam().shape.heads) * 12 * 4 * 3);
    ASSERT_LT(model->queryBlockSize(12), 12);
    KvCache cache = model->makeCache(4);  // grows while prefilling
    at::Tensor logits = model->forward(tokens, cache, /*allLogits=*/true);
    ASSERT_EQ(logits.size(0), int64_t(tokens.size()));
    double worst = 0.0;
    for (size_t t = 0; t < tokens.size(); ++t) {
        for (int64_t i = 0; i < m.vocab; ++i) {
            worst = std::max(worst, std::abs(double(logits[t][i].item<float>()) - expected[t][i]));
        }
    }
    EXPECT_LT(worst, 2e-4) << GetParam().label;
}

TinyModelShape shapeOf(const char* arch, int64_t heads, int64_t kvHeads, int64_t ropeDim, bool tied) {
    TinyModelShape s;
    s.architecture = arch;
    s.heads = heads;
    s.kvHeads = kvHeads;
    s.ropeDim = ropeDim;
    s.tiedOutput = tied;
    return s;
}

INSTANTIATE_TEST_SUITE_P(
    Architectures, ForwardMatchesReference,
    ::testing::Values(ShapeCase{"llama_gqa", shapeOf("llama", 4, 2, 0, false)},
                      ShapeCase{"llama_mha_tied", shapeOf("llama", 4, 4, 0, true)},
                      ShapeCase{"mistral_mqa_partial_rope", shapeOf("mistral", 4, 1, 4, false)},
                      ShapeCase{"qwen2_bias_neox", shapeOf("qwen2", 4, 2, 0, false)},
                      ShapeCase{"qwen3_qk_norm_neox", shapeOf("qwen3", 4, 2, 0, false)},
                      ShapeCase{"llama3_rope_freqs", [] {
                                    TinyModelShape s = shapeOf("llama", 4, 2, 0, false);
                                    s.llama3Rope = true;
                                    return s;
                                }()}),
    [](const ::testing::TestParamInfo<ShapeCase>& info) { return std::string(info.param.label); });

// Every projection stored in a quantised type: random quants with sane scales,
// so the reference runs on exactly the values the file holds.
class QuantisedWeights : public ::testing::TestWithParam<GgmlType> {};

std::vector<uint8_t> randomBlocks(GgmlType type, int64_t numel, std::mt19937_64& rng) {
    const int64_t blocks = numel / ggmlBlockSize(uint32_t(type));
    const size_t blockBytes = ggmlBlockBytes(uint32_t(type));
    std::vector<uint8_t> bytes(blocks * blockBytes);
    for (uint8_t& b : bytes) b = uint8_t(rng());
    auto putHalf = [&](size_t at, float v) {
        const uint16_t h = test::floatToHalf(v);
        bytes[at] = uint8_t(h & 0xff);
        bytes[at + 1] = uint8_t(h >> 8);
    };
    for (int64_t i = 0; i < blocks; ++i) {
        const size_t base = i * blockBytes;
        switch (type) {
            case GgmlType::Q8_0: putHalf(base, 0.004f); break;                    // d, 32 x int8
            case GgmlType::Q4_0: putHalf(base, 0.05f); break;                     // d, 16 bytes
            case GgmlType::Q4_K: putHalf(base, 0.01f); putHalf(base + 2, 0.004f); break;  // d, dmin
            case GgmlType::Q6_K: putHalf(base + 208, 0.002f); break;              // ..., d last
            case GgmlType::F16:
                for (size_t j = 0; j < blockBytes; j += 2) putHalf(base + j, float(int(rng() % 2001) - 1000) / 4000.0f);
                break;
            case GgmlType::BF16: {
                const uint16_t v = test::floatToBf16(float(int(rng() % 2001) - 1000) / 4000.0f);
                bytes[base] = uint8_t(v & 0xff);
                bytes[base + 1] = uint8_t(v >> 8);
                break;
            }
            default: break;
        }
    }
    return bytes;
}

TEST_P(QuantisedWeights, LoadAndForwardOnTheDequantisedValues) {
    TinyModelShape s;
    s.embed = 256;  // K-quant rows are multiples of 256
    s.heads = 4;
    s.kvHeads = 2;
    s.ffn = 256;
    s.layers = 1;
    TinyModelFile m = test::makeTinyModelFile(s);
    const GgmlType type = GetParam();
    std::mt19937_64 rng(5);
    for (size_t i = 0; i < m.builder.tensorCount(); ++i) {
        test::GgufBuilder::Tensor& t = m.builder.tensor(i);
        if (t.shape.size() != 2) continue;  // norms stay F32, as converters keep them
        int64_t numel = t.shape[0] * t.shape[1];
        t.type = uint32_t(type);
        t.data = randomBlocks(type, numel, rng);
    }
    const std::string path = test::testOutputPath(std::string("quant_") + ggmlTypeName(uint32_t(type)) + ".gguf");
    m.builder.writeFile(path);
    GgufFile file(path);
    for (const GgufTensorInfo& t : file.tensors()) m.weights[t.name] = file.dequantize(t);

    LoadedModel loaded = loadModel(path, c10::Device(c10::kCPU), c10::kFloat);
    const std::vector<int32_t> tokens = {1, 260, 17, 99, 5};
    KvCache cache = loaded.model->makeCache(8);
    at::Tensor logits = loaded.model->forward(tokens, cache, true);
    const std::vector<Vec> expected = referenceForward(m, tokens);
    double worst = 0.0, scale = 0.0;
    for (size_t t = 0; t < tokens.size(); ++t) {
        for (int64_t i = 0; i < m.vocab; ++i) {
            worst = std::max(worst, std::abs(double(logits[t][i].item<float>()) - expected[t][i]));
            scale = std::max(scale, std::abs(expected[t][i]));
        }
    }
    EXPECT_GT(scale, 0.1);  // the weights really did something
    EXPECT_LT(worst, 1e-4 * std::max(1.0, scale));
}

INSTANTIATE_TEST_SUITE_P(Types, QuantisedWeights,
                         ::testing::Values(GgmlType::F16, GgmlType::BF16, GgmlType::Q8_0,
                                           GgmlType::Q4_0, GgmlType::Q4_K, GgmlType::Q6_K),
                         [](const ::testing::TestParamInfo<GgmlType>& info) {
                             return std::string(ggmlTypeName(uint32_t(info.param)));
                         });

TEST(LlamaModel, DecodeStepsEqualOnePrefill) {
    LoadedModel loaded = loadModel("random:tiny:layers=2", c10::Device(c10::kCPU), c10::kFloat);
    LlamaModel& model = *loaded.model;
    std::vector<int32_t> tokens;
    for (int i = 0; i < 40; ++i) tokens.push_back(3 + (i * 37) % 500);
    KvCache full = model.makeCache(40);
    at::Tensor all = model.forward(tokens, full, true);

    KvCache cache = model.makeCache(8);
    model.forward(std::vector<int32_t>(tokens.begin(), tokens.begin() + 25), cache);
    for (size_t t = 25; t < tokens.size(); ++t) {
        at::Tensor step = model.forward({tokens[t]}, cache);
        EXPECT_LT((step - all[t]).abs().max().item<float>(), 1e-4) << "position " << t;
    }
    EXPECT_EQ(cache.length(), 40);
    EXPECT_TRUE(at::allclose(cache.keys(1), full.keys(1), 1e-5, 1e-5));
}

TEST(LlamaModel, Bf16TracksF32) {
    LoadedModel f32 = loadModel("random:tiny:layers=2", c10::Device(c10::kCPU), c10::kFloat);
    LoadedModel bf16 = loadModel("random:tiny:layers=2", c10::Device(c10::kCPU), c10::kBFloat16);
    std::vector<int32_t> tokens;
    for (int i = 0; i < 64; ++i) tokens.push_back(3 + (i * 91) % 500);
    KvCache c1 = f32.model->makeCache(64), c2 = bf16.model->makeCache(64);
    at::Tensor a = f32.model->forward(tokens, c1), b = bf16.model->forward(tokens, c2);
    EXPECT_EQ(c2.keys(0).scalar_type(), c10::kBFloat16);
    const double rel = ((a - b).norm() / a.norm()).item<double>();
    EXPECT_LT(rel, 0.05);
    EXPECT_GT(rel, 0.0);  // really ran in another precision
}

TEST(LlamaModel, RandomPresetLayersArePrefixOfFullModel) {
    LoadedModel two = loadModel("random:tiny:layers=2:seed=7", c10::Device(c10::kCPU), c10::kFloat);
    LoadedModel four = loadModel("random:tiny:seed=7", c10::Device(c10::kCPU), c10::kFloat);
    EXPECT_TRUE(at::equal(two.model->weights().layers[1].wqkv.dense(), four.model->weights().layers[1].wqkv.dense()));
    LoadedModel other = loadModel("random:tiny:layers=2:seed=8", c10::Device(c10::kCPU), c10::kFloat);
    EXPECT_FALSE(at::equal(two.model->weights().layers[1].wqkv.dense(), other.model->weights().layers[1].wqkv.dense()));
}

// --- load errors --------------------------------------------------------------

std::string loadError(test::GgufBuilder& b, const std::string& name) {
    const std::string path = test::testOutputPath(name);
    b.writeFile(path);
    try {
        loadModel(path, c10::Device(c10::kCPU), c10::kFloat);
    } catch (const Error& e) {
        return e.what();
    }
    return "no error";
}

TEST(LlamaModelLoad, UnknownArchitectureNamesIt) {
    test::GgufBuilder b;
    b.addString("general.architecture", "mamba");
    const std::string msg = loadError(b, "arch_mamba.gguf");
    EXPECT_NE(msg.find("arch_mamba.gguf"), std::string::npos) << msg;
    EXPECT_NE(msg.find("unknown architecture 'mamba'"), std::string::npos) << msg;
}

// Mixture-of-experts files are refused before a weight is read: by their
// expert count, by an expert tensor, or by an architecture that is one.
// The phi3 test file copied with one thing changed: what KV Lens cannot run faithfully is
// one line naming the key or tensor (LongRoPE's factors; no sliding window where llama.cpp
// requires one), and a window of 0 is none (Phi-4).
TEST(LlamaModelLoad, Phi3FilesKvLensCannotRunAreOneLine) {
    const GgufFile phi3(std::string(KVLENS_SOURCE_DIR) + "/tests/data/gguf/tiny-phi3-F16.gguf");
    auto copy = [&](const std::string& skipKey, uint32_t window) {
        test::GgufBuilder b;
        for (const auto& [key, value] : phi3.metadata()) {
            if (key == "general.alignment" || key == skipKey) continue;
            if (key == "phi3.attention.sliding_window") {
                b.addUInt32(key, window);
            } else {
                b.addValue(key, value);
            }
        }
        for (const GgufTensorInfo& t : phi3.tensors()) b.addTensorF32(t.name, t.shape, phi3.dequantize(t));
        return b;
    };
    test::GgufBuilder longRope = copy("", 64);
    longRope.addTensorF32("rope_factors_long.weight", {16}, std::vector<float>(16, 1.0f));
    EXPECT_EQ(loadError(longRope, "phi3_longrope.gguf"),
              test::testOutputPath("phi3_longrope.gguf") +
                  ": tensor 'rope_factors_long.weight': LongRoPE scaling is not supported (none, linear, yarn and "
                  "Llama 3's rope_freqs are)");
    test::GgufBuilder noWindow = copy("phi3.attention.sliding_window", 0);
    EXPECT_EQ(loadError(noWindow, "phi3_nowindow.gguf"),
              test::testOutputPath("phi3_nowindow.gguf") +
                  ": phi3.attention.sliding_window is missing (llama.cpp refuses such a phi3 file too)");
    const std::string none = test::testOutputPath("phi3_window0.gguf");
    copy("", 0).writeFile(none);
    EXPECT_EQ(loadModel(none, c10::Device(c10::kCPU), c10::kFloat).model->config().slidingWindow, 0);
}

TEST(LlamaModelLoad, MixtureOfExpertsIsOneLineNamingWhatSaysSo) {
    {
        TinyModelFile m = test::makeTinyModelFile({});
        m.builder.addUInt32("llama.expert_count", 8);
        EXPECT_EQ(loadError(m.builder, "moe_count.gguf"),
                  test::testOutputPath("moe_count.gguf") +
                      ": a mixture-of-experts model (llama.expert_count = 8); KV Lens runs dense models only");
    }
    {
        TinyModelFile m = test::makeTinyModelFile({});
        m.builder.addTensorF32("blk.0.ffn_gate_exps.weight", {4}, {0, 0, 0, 0});
        EXPECT_EQ(loadError(m.builder, "moe_tensor.gguf"),
                  test::testOutputPath("moe_tensor.gguf") +
                      ": a mixture-of-experts model (tensor blk.0.ffn_gate_exps.weight); KV Lens runs dense "
                      "models only");
    }
    test::GgufBuilder b;
    b.addString("general.architecture", "qwen2moe");
    const std::string msg = loadError(b, "arch_qwen2moe.gguf");
    EXPECT_NE(msg.find("unknown architecture 'qwen2moe' in general.architecture (a mixture-of-experts "
                       "architecture; KV Lens runs dense models) (supported: llama, mistral, qwen2, qwen3, phi3, gemma2)"),
              std::string::npos)
        << msg;
}

TEST(LlamaModelLoad, UnsupportedRopeScalingNamesIt) {
    TinyModelFile m = test::makeTinyModelFile({});
    m.builder.addString("llama.rope.scaling.type", "longrope");
    const std::string msg = loadError(m.builder, "rope_longrope.gguf");
    EXPECT_NE(msg.find("llama.rope.scaling.type 'longrope' is not supported (none, linear, yarn and Llama 3's "
                       "rope_freqs are)"),
              std::string::npos)
        << msg;
}

TEST(LlamaModelLoad, ShapeDisagreeingWithMetadataNamesTensor) {
    TinyModelShape s;
    TinyModelFile m = test::makeTinyModelFile(s);
    // A model file whose q projection is half as wide as the head count says.
    test::GgufBuilder b = m.builder;
    for (size_t i = 0;; ++i) {
        if (b.tensor(i).name == "blk.1.attn_q.weight") {
            b.tensor(i).shape = {s.embed, s.embed / 2};
            b.tensor(i).data.resize(b.tensor(i).data.size() / 2);
            break;
        }
    }
    const std::string msg = loadError(b, "shape_mismatch.gguf");
    EXPECT_NE(msg.find("'blk.1.attn_q.weight' has shape [32, 16], expected [32, 32]"),
              std::string::npos)
        << msg;
}

TEST(LlamaModelLoad, UnsupportedTensorTypeNamesTensorAndType) {
    TinyModelFile m = test::makeTinyModelFile({});
    test::GgufBuilder b = m.builder;
    for (size_t i = 0;; ++i) {
        if (b.tensor(i).name == "blk.0.ffn_up.weight") {
            b.tensor(i).type = 26;  // I32: 4 bytes per value, no weight type
            b.tensor(i).data.assign(32 * 48 * 4, 0);
            break;
        }
    }
    const std::string msg = loadError(b, "unsupported_type.gguf");
    EXPECT_NE(msg.find("blk.0.ffn_up.weight"), std::string::npos) << msg;
    EXPECT_NE(msg.find("unsupported type I32"), std::string::npos) << msg;
}

TEST(LlamaModelLoad, MissingTensorNamesIt) {
    TinyModelFile m = test::makeTinyModelFile({});
    test::GgufBuilder b = m.builder;
    for (size_t i = 0;; ++i) {
        if (b.tensor(i).name == "blk.1.ffn_down.weight") {
            b.tensor(i).name = "blk.1.ffn_down.renamed";
            break;
        }
    }
    const std::string msg = loadError(b, "missing_tensor.gguf");
    EXPECT_NE(msg.find("tensor 'blk.1.ffn_down.weight' is missing"), std::string::npos) << msg;
}

TEST(LlamaModelLoad, RandomPresetTooBigForMemoryIsRefusedBeforeAllocating) {
    try {
        loadModel("random:llama2-7b:ctx=8192", c10::Device(c10::kCPU), c10::kFloat);
        if (availableMemoryBytes() < 27'000'000'000) FAIL() << "expected a refusal";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("the weights need 27.0 GB"), std::string::npos) << e.what();
    }
}

// --- generation ---------------------------------------------------------------

TEST(Generator, StopsAtEosUnlessIgnored) {
    LoadedModel loaded = loadModel("random:tiny:layers=1", c10::Device(c10::kCPU), c10::kFloat);
    Generator gen(*loaded.model);
    GenerationOptions o;
    o.maxNewTokens = 5;
    const std::vector<int32_t> prompt = {1, 50, 60, 70};
    const GenerationResult first = gen.generate(prompt, o);
    ASSERT_EQ(first.tokens.size(), 5u);
    o.stopIds = {first.tokens[2]};  // pretend the third greedy token is EOS
    const GenerationResult stopped = gen.generate(prompt, o);
    EXPECT_TRUE(stopped.stoppedAtEos);
    EXPECT_EQ(stopped.tokens, std::vector<int32_t>(first.tokens.begin(), first.tokens.begin() + 2));
    o.ignoreEos = true;
    EXPECT_EQ(gen.generate(prompt, o).tokens, first.tokens);
}

TEST(Generator, StreamsEachTokenAndCanBeStopped) {
    LoadedModel loaded = loadModel("random:tiny:layers=1", c10::Device(c10::kCPU), c10::kFloat);
    Generator gen(*loaded.model);
    GenerationOptions o;
    o.maxNewTokens = 10;
    std::vector<int32_t> seen;
    const GenerationResult r = gen.generate({1, 2, 3}, o, [&](int32_t t) {
        seen.push_back(t);
        return seen.size() < 4;
    });
    EXPECT_EQ(seen, r.tokens);
    EXPECT_EQ(r.tokens.size(), 4u);
}

TEST(Generator, StopsAtTheContext) {
    LoadedModel loaded = loadModel("random:tiny:layers=1:ctx=20", c10::Device(c10::kCPU), c10::kFloat);
    Generator gen(*loaded.model);
    GenerationOptions o;
    o.maxNewTokens = 10;
    const GenerationResult r = gen.generate(std::vector<int32_t>(16, 40), o);
    EXPECT_EQ(r.tokens.size(), 4u);
    EXPECT_TRUE(r.stoppedAtContext);
}

TEST(Generator, RejectsEmptyAndOverlongPrompts) {
    LoadedModel loaded = loadModel("random:tiny:layers=1:ctx=20", c10::Device(c10::kCPU), c10::kFloat);
    Generator gen(*loaded.model);
    GenerationOptions o;
    EXPECT_THROW(
        {
            try {
                gen.generate({}, o);
            } catch (const Error& e) {
                EXPECT_STREQ(e.what(), "the prompt is empty");
                throw;
            }
        },
        Error);
    try {
        gen.generate(std::vector<int32_t>(21, 40), o);
        FAIL();
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "the prompt is 21 tokens, longer than the model's context of 20 tokens");
    }
}

TEST(Generator, SeededSamplingRepeatsAndDiffersFromGreedy) {
    LoadedModel loaded = loadModel("random:tiny:layers=1", c10::Device(c10::kCPU), c10::kFloat);
    Generator gen(*loaded.model);
    GenerationOptions o;
    o.maxNewTokens = 12;
    const auto greedy = gen.generate({1, 9, 8}, o).tokens;
    o.sampling.temperature = 1.5;
    o.sampling.seed = 11;
    const auto a = gen.generate({1, 9, 8}, o).tokens;
    EXPECT_EQ(a, gen.generate({1, 9, 8}, o).tokens);
    EXPECT_NE(a, greedy);
    o.sampling.topK = 1;  // top-1 sampling is greedy whatever the temperature
    EXPECT_EQ(gen.generate({1, 9, 8}, o).tokens, greedy);
}

}  // namespace
}  // namespace kvlens
