// Gemma 2 and Gemma 3.
//
// Gemma 3 has no reference in the llama.cpp snapshot: a tiny Gemma3ForCausalLM folder of
// random weights (local and global layers, a window of 8, its own RoPE base on local layers,
// linear RoPE scaling on global ones, q/k norms, query_pre_attn_scalar unlike the head
// dimension) runs against a double-precision forward pass written here from the published
// definitions (transformers' modeling_gemma3), prompts past the window, every position's
// logits within 1e-4; the same weights as the text model of a Gemma3ForConditionalGeneration
// checkpoint give the same logits. Gemma 2's parity with llama.cpp is in QuantParityTest; here
// its soft-caps are shown to matter. The compression methods run on both: the window votes cap
// their logits (a double-precision reference), FullKV's compressed decode gives the full
// cache's logits past the window, and what turns by the global RoPE base (Gemma 3) or computes
// an attention without the cap (Gemma 2) is refused in one line.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <utility>
#include <nlohmann/json.hpp>

#include "engine/compress/Capture.h"
#include "engine/compress/CompressedCache.h"
#include "engine/compress/presses/Press.h"
#include "engine/model/Sampler.h"
#include "engine/gguf/GgufFile.h"
#include "engine/hf/HfFolder.h"
#include "engine/hf/HfWeightLoader.h"
#include "engine/model/LlamaModel.h"
#include "engine/model/ModelLoader.h"
#include "support/GgufBuilder.h"
#include "support/HfFolderWriter.h"
#include "support/OneLineError.h"
#include "support/TinyModelFile.h"
#include "VoteReference.h"

namespace kvlens {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

constexpr int64_t kE = 32, kH = 2, kKV = 1, kD = 16, kF = 48, kV = 64, kLayers = 4, kWindow = 8, kPeriod = 3;
constexpr double kQueryScalar = 24.0, kTheta = 1e6, kLocalTheta = 1e4, kFactor = 2.0, kEps = 1e-6;

json gemma3TextConfig() {
    return {{"hidden_size", kE},
            {"intermediate_size", kF},
            {"num_hidden_layers", kLayers},
            {"num_attention_heads", kH},
            {"num_key_value_heads", kKV},
            {"head_dim", kD},
            {"vocab_size", kV},
            {"max_position_embeddings", 512},
            {"sliding_window", kWindow},
            {"sliding_window_pattern", kPeriod},
            {"query_pre_attn_scalar", kQueryScalar},
            {"rope_theta", kTheta},
            {"rope_local_base_freq", kLocalTheta},
            {"rope_scaling", {{"rope_type", "linear"}, {"factor", kFactor}}},
            {"rms_norm_eps", kEps},
            {"torch_dtype", "float32"}};
}

// The weights, by their name in a Gemma3ForCausalLM checkpoint (fp64 masters, written as F32).
std::map<std::string, at::Tensor> gemma3Weights() {
    at::manual_seed(7);
    std::map<std::string, at::Tensor> w;
    auto matrix = [](int64_t rows, int64_t cols) { return at::randn({rows, cols}, at::kDouble) / std::sqrt(double(cols)); };
    auto norm = [](int64_t n) { return at::randn({n}, at::kDouble) * 0.2; };  // applied as 1 + w
    w["model.embed_tokens.weight"] = at::randn({kV, kE}, at::kDouble) / std::sqrt(double(kE));
    for (int64_t l = 0; l < kLayers; ++l) {
        const std::string p = "model.layers." + std::to_string(l) + ".";
        w[p + "input_layernorm.weight"] = norm(kE);
        w[p + "self_attn.q_proj.weight"] = matrix(kH * kD, kE);
        w[p + "self_attn.k_proj.weight"] = matrix(kKV * kD, kE);
        w[p + "self_attn.v_proj.weight"] = matrix(kKV * kD, kE);
        w[p + "self_attn.o_proj.weight"] = matrix(kE, kH * kD);
        w[p + "self_attn.q_norm.weight"] = norm(kD);
        w[p + "self_attn.k_norm.weight"] = norm(kD);
        w[p + "post_attention_layernorm.weight"] = norm(kE);
        w[p + "pre_feedforward_layernorm.weight"] = norm(kE);
        w[p + "post_feedforward_layernorm.weight"] = norm(kE);
        w[p + "mlp.gate_proj.weight"] = matrix(kF, kE);
        w[p + "mlp.up_proj.weight"] = matrix(kF, kE);
        w[p + "mlp.down_proj.weight"] = matrix(kE, kF);
    }
    w["model.norm.weight"] = norm(kE);
    // The masters are what F32 holds: rounded once, so the reference reads the same numbers.
    for (auto& [name, t] : w) t = t.to(at::kFloat).to(at::kDouble);
    return w;
}

// The folder `dir` holding `weights` under `prefix` ("model." replaced by it), with `config`.
void writeFolder(const std::string& dir, const json& config, const std::map<std::string, at::Tensor>& weights,
                 const std::string& prefix = "model.", const std::vector<test::SafetensorsEntry>& extra = {}) {
    fs::remove_all(dir);
    fs::create_directories(dir);
    std::vector<test::SafetensorsEntry> entries = extra;
    for (const auto& [name, t] : weights) {
        const at::Tensor f = t.to(at::kFloat).contiguous();
        std::vector<float> values(f.data_ptr<float>(), f.data_ptr<float>() + f.numel());
        entries.push_back({prefix + name.substr(6), "F32", t.sizes().vec(), test::encodeValues(values, "F32")});
    }
    test::writeBytes(dir + "/model.safetensors", test::buildSafetensors(entries, "{\"format\": \"pt\"}"));
    test::writeText(dir + "/config.json", config.dump(2));
}

at::Tensor rms(const at::Tensor& x, const at::Tensor& w) {  // x [..., n], Gemma's (1 + w)
    return x / (x.pow(2).mean(-1, true) + kEps).sqrt() * (1.0 + w);
}

// Rotate-half RoPE of x [T, heads, D] at positions 0.. with base `theta`, frequencies / `factor`.
at::Tensor rope(const at::Tensor& x, double theta, double factor) {
    const int64_t T = x.size(0), half = kD / 2;
    const at::Tensor inv = at::pow(theta, -at::arange(0, half, at::kDouble) * 2.0 / double(kD)) / factor;
    const at::Tensor angle = at::arange(0, T, at::kDouble).unsqueeze(1) * inv.unsqueeze(0);  // [T, half]
    const at::Tensor c = angle.cos().unsqueeze(1), s = angle.sin().unsqueeze(1);
    const at::Tensor x0 = x.narrow(2, 0, half), x1 = x.narrow(2, half, half);
    return at::cat({x0 * c - x1 * s, x1 * c + x0 * s}, 2);
}

// transformers' Gemma3ForCausalLM forward, in fp64: logits [T, vocab].
at::Tensor referenceLogits(std::map<std::string, at::Tensor>& w, const std::vector<int64_t>& ids) {
    const int64_t T = static_cast<int64_t>(ids.size());
    const at::Tensor embed = w["model.embed_tokens.weight"];
    at::Tensor x = embed.index_select(0, at::tensor(ids, at::kLong)) * double(std::sqrt(float(kE)));
    for (int64_t l = 0; l < kLayers; ++l) {
        const std::string p = "model.layers." + std::to_string(l) + ".";
        const bool local = (l + 1) % kPeriod != 0;
        at::Tensor h = rms(x, w[p + "input_layernorm.weight"]);
        at::Tensor q = at::matmul(h, w[p + "self_attn.q_proj.weight"].t()).view({T, kH, kD});
        at::Tensor k = at::matmul(h, w[p + "self_attn.k_proj.weight"].t()).view({T, kKV, kD});
        const at::Tensor v = at::matmul(h, w[p + "self_attn.v_proj.weight"].t()).view({T, kKV, kD});
        q = rms(q, w[p + "self_attn.q_norm.weight"]);
        k = rms(k, w[p + "self_attn.k_norm.weight"]);
        q = local ? rope(q, kLocalTheta, 1.0) : rope(q, kTheta, kFactor);
        k = local ? rope(k, kLocalTheta, 1.0) : rope(k, kTheta, kFactor);
        at::Tensor out = at::zeros({T, kH, kD}, at::kDouble);
        for (int64_t head = 0; head < kH; ++head) {
            const int64_t kvh = head / (kH / kKV);
            at::Tensor scores = at::matmul(q.select(1, head), k.select(1, kvh).t()) / std::sqrt(kQueryScalar);  // [T, T]
            for (int64_t i = 0; i < T; ++i)
                for (int64_t j = 0; j < T; ++j)
                    if (j > i || (local && i - j >= kWindow)) scores[i][j] = -std::numeric_limits<double>::infinity();
            out.select(1, head).copy_(at::matmul(at::softmax(scores, -1), v.select(1, kvh)));
        }
        const at::Tensor attn = at::matmul(out.reshape({T, kH * kD}), w[p + "self_attn.o_proj.weight"].t());
        x = x + rms(attn, w[p + "post_attention_layernorm.weight"]);
        h = rms(x, w[p + "pre_feedforward_layernorm.weight"]);
        const at::Tensor g = at::matmul(h, w[p + "mlp.gate_proj.weight"].t());
        const at::Tensor gelu = 0.5 * g * (1.0 + at::tanh(std::sqrt(2.0 / M_PI) * (g + 0.044715 * g.pow(3))));
        const at::Tensor mlp = at::matmul(gelu * at::matmul(h, w[p + "mlp.up_proj.weight"].t()), w[p + "mlp.down_proj.weight"].t());
        x = x + rms(mlp, w[p + "post_feedforward_layernorm.weight"]);
    }
    return at::matmul(rms(x, w["model.norm.weight"]), embed.t());
}

std::unique_ptr<LlamaModel> folderModel(const std::string& dir) {
    const HfFolder folder(dir);
    return std::make_unique<LlamaModel>(folder.config().model, HfWeightLoader::load(folder, at::kCPU, at::kFloat),
                                        at::kCPU, at::kFloat);
}

std::vector<int64_t> promptIds() {
    std::vector<int64_t> ids;
    for (int64_t i = 0; i < 21; ++i) ids.push_back((i * 37 + 11) % kV);
    return ids;
}

TEST(Gemma3, LogitsEqualADoublePrecisionReferencePastTheWindow) {
    auto w = gemma3Weights();
    json config = gemma3TextConfig();
    config["architectures"] = {"Gemma3ForCausalLM"};
    const std::string dir = test::testOutputPath("gemma3_tiny");
    writeFolder(dir, config, w);
    std::unique_ptr<LlamaModel> model = folderModel(dir);
    const ModelConfig& c = model->config();
    EXPECT_EQ(c.windowPeriod, kPeriod);
    EXPECT_EQ(c.slidingWindow, kWindow);
    EXPECT_EQ(c.windowAt(0), kWindow);
    EXPECT_EQ(c.windowAt(2), 0);
    EXPECT_EQ(c.windowAt(3), kWindow);
    EXPECT_TRUE(c.localRope(1));
    EXPECT_FALSE(c.localRope(2));

    const std::vector<int64_t> ids = promptIds();
    ASSERT_GT(int64_t(ids.size()), 2 * kWindow);
    const at::Tensor expected = referenceLogits(w, ids);
    const std::vector<int32_t> tokens(ids.begin(), ids.end());
    KvCache cache = model->makeCache(int64_t(tokens.size()));
    const at::Tensor all = model->forward(tokens, cache, true).to(at::kDouble);
    ASSERT_EQ(all.sizes(), expected.sizes());
    const double diff = (all - expected).abs().max().item<double>();
    RecordProperty("largest_difference", std::to_string(diff));
    EXPECT_LT(diff, 1e-4) << "of " << expected.abs().max().item<double>();

    // A prefill of 10 then one token at a time (the decode path, the window cutting in).
    KvCache stepped = model->makeCache(int64_t(tokens.size()));
    model->forward(std::vector<int32_t>(tokens.begin(), tokens.begin() + 10), stepped, false);
    for (size_t t = 10; t < tokens.size(); ++t) {
        const at::Tensor last = model->forward({tokens[t]}, stepped, false).to(at::kDouble);
        EXPECT_LT((last - expected[int64_t(t)]).abs().max().item<double>(), 1e-4) << "position " << t;
    }

    // Each Gemma 3 feature matters at this size: without the window, with one RoPE base, or
    // with the head dimension's query scale, the logits move.
    auto moved = [&](const std::function<void(ModelConfig&)>& change) {
        ModelConfig changed = c;
        change(changed);
        LlamaModel other(changed, model->weights(), at::kCPU, at::kFloat);
        KvCache k2 = other.makeCache(int64_t(tokens.size()));
        return (other.forward(tokens, k2, true).to(at::kDouble) - expected).abs().max().item<double>();
    };
    EXPECT_GT(moved([](ModelConfig& m) { m.slidingWindow = 0; }), 1e-2);
    EXPECT_GT(moved([](ModelConfig& m) { m.localRopeTheta = 0.0; }), 1e-2);
    EXPECT_GT(moved([](ModelConfig& m) { m.queryScale = 0.0; }), 1e-2);
}

TEST(Gemma3, TheTextModelOfAMultimodalCheckpointGivesTheSameLogits) {
    auto w = gemma3Weights();
    json text = gemma3TextConfig();
    // Fields a multimodal config leaves in text_config's defaults (Gemma3TextConfig's).
    text.erase("rope_local_base_freq");
    json config = {{"architectures", {"Gemma3ForConditionalGeneration"}}, {"text_config", text}, {"eos_token_id", {1, 2}}};
    // A vision tower with more layers than the text model: not the text model's layer count.
    const std::vector<float> zeros(4, 0.0f);
    const std::vector<test::SafetensorsEntry> vision = {
        {"model.vision_tower.vision_model.encoder.layers.26.mlp.fc1.weight", "F32", {2, 2}, test::encodeValues(zeros, "F32")}};
    const std::string a = test::testOutputPath("gemma3_text"), b = test::testOutputPath("gemma3_multimodal"),
                      older = test::testOutputPath("gemma3_multimodal_older");
    json plain = gemma3TextConfig();
    plain.erase("rope_local_base_freq");
    plain["architectures"] = {"Gemma3ForCausalLM"};
    writeFolder(a, plain, w);
    writeFolder(b, config, w, "model.language_model.", vision);
    writeFolder(older, config, w, "language_model.model.", vision);  // transformers before 4.52
    const HfFolder folder(b);
    EXPECT_EQ(folder.config().model.localRopeTheta, 10000.0);
    EXPECT_EQ(folder.config().eosIds, (std::vector<int32_t>{1, 2}));
    const std::vector<int64_t> ids64 = promptIds();
    const std::vector<int32_t> ids(ids64.begin(), ids64.end());
    auto logits = [&](const std::string& dir) {
        std::unique_ptr<LlamaModel> m = folderModel(dir);
        KvCache cache = m->makeCache(int64_t(ids.size()));
        return m->forward(ids, cache, true);
    };
    const at::Tensor base = logits(a);
    EXPECT_TRUE(at::equal(base, logits(b)));
    EXPECT_TRUE(at::equal(base, logits(older)));

    json missing = config;
    missing.erase("text_config");
    test::writeText(b + "/config.json", missing.dump());
    EXPECT_NE(test::errorOf([&] { HfFolder f(b); }).find("field 'text_config' is missing"), std::string::npos);
    json fewer = config;
    fewer["text_config"]["num_hidden_layers"] = 3;
    test::writeText(b + "/config.json", fewer.dump());
    EXPECT_NE(test::errorOf([&] { HfFolder f(b); }).find("text_config.num_hidden_layers is 3, but the weights hold layers 0-3"),
              std::string::npos);
}

// FullKV's compressed decode on a prompt past the window (the local layers keep their last 7
// positions, the global ones all 21) gives the full cache's logits; the methods that turn
// queries or keys by the global RoPE base are refused in one line.
TEST(Gemma3, CompressionRunsAndWhatTurnsByTheGlobalBaseIsRefused) {
    auto w = gemma3Weights();
    json config = gemma3TextConfig();
    config["architectures"] = {"Gemma3ForCausalLM"};
    const std::string dir = test::testOutputPath("gemma3_compressed");
    writeFolder(dir, config, w);
    std::unique_ptr<LlamaModel> model = folderModel(dir);
    const std::vector<int64_t> ids64 = promptIds();
    const std::vector<int32_t> ids(ids64.begin(), ids64.end());
    const auto capture = Capture::fromPrefill(*model, ids);
    EXPECT_TRUE(capture->localRope());
    EXPECT_TRUE(capture->windowed());
    PressParams full;
    full.method = "full";
    const Selection kept = Press::create("full")->select(*capture, full);
    for (int64_t l = 0; l < kLayers; ++l)
        EXPECT_EQ(int64_t(kept.kept[l][0].size()), model->config().windowAt(l) > 0 ? kWindow - 1 : 21) << l;
    CompressedCache compressed(*capture, kept, 4);
    KvCache plain = model->makeCache(64);
    model->forward(ids, plain);
    int32_t token = Sampler::argmax(capture->lastLogits().data_ptr<float>(), capture->lastLogits().numel());
    for (int step = 0; step < 12; ++step) {
        const at::Tensor a = model->forward({token}, plain);
        ASSERT_LE((a - model->decode(token, compressed)).abs().max().item<float>(), 1e-5f) << "step " << step;
        token = static_cast<int32_t>((token * 5 + 3) % kV);
    }
    PressParams expected;
    expected.method = "expected";
    expected.budget = 10;
    EXPECT_EQ(test::errorOf([&] { Press::create("expected")->select(*capture, expected); }),
              "--method expected: it turns queries or keys by the model's RoPE, and the model's local layers rotate "
              "with a base of their own, which it does not apply yet");
    PressParams snap;
    snap.method = "snapkv";
    snap.budget = 10;
    snap.window = 4;
    EXPECT_EQ(Press::create("snapkv")->select(*capture, snap).layerBudgets,
              std::vector<int64_t>({kWindow - 1, kWindow - 1, 10, kWindow - 1}));
}

const std::string kGemma2 = std::string(KVLENS_SOURCE_DIR) + "/tests/data/gguf/tiny-gemma2-F16.gguf";

TEST(Gemma2, TheFileReadsAsLlamaCppReadsIt) {
    LoadedModel loaded = loadModel(kGemma2, at::kCPU, at::kFloat);
    const ModelConfig& c = loaded.model->config();
    EXPECT_EQ(c.architecture, "gemma2");
    EXPECT_EQ(c.headDim, 32);  // attention.key_length, not 64 / 4
    EXPECT_EQ(c.slidingWindow, 64);
    EXPECT_EQ(c.windowPeriod, 2);
    EXPECT_EQ(c.windowAt(0), 64);  // even layers local (llama.cpp's il % 2 == 0)
    EXPECT_EQ(c.windowAt(1), 0);
    EXPECT_DOUBLE_EQ(c.attnSoftcap, 4.0);
    EXPECT_DOUBLE_EQ(c.finalSoftcap, 5.0);
    EXPECT_DOUBLE_EQ(c.embedScale, 8.0);
    EXPECT_DOUBLE_EQ(c.queryScale, 1.0 / std::sqrt(32.0));
    EXPECT_EQ(c.activation, Activation::GeluTanhGate);
    EXPECT_TRUE(loaded.model->weights().tiedOutput);
}

// The first step's eight best logits against llama.cpp's (first_step_top8 in the reference
// run). llama.cpp rounds the activations a matrix product reads (to fp16 for F16 weights, to
// Q8 for quantised ones) and reads GELU from a table at fp16 inputs; KV Lens keeps them in
// fp32. Measured: 0.0038 (F16; 0.0032 with GELU emulated at fp16, so the activations' rounding
// is most of it) and 0.041 (Q4_K_M; the other architectures' quantised files: 0.017-0.038).
TEST(Gemma2, FirstStepLogitsNearLlamaCpps) {
    for (const auto& [type, bound] : {std::pair<std::string, double>{"F16", 6e-3}, {"Q4_K_M", 6e-2}}) {
        const std::string stem = std::string(KVLENS_SOURCE_DIR) + "/tests/data/gguf/tiny-gemma2-" + type;
        LoadedModel loaded = loadModel(stem + ".gguf", at::kCPU, at::kFloat);
        std::ifstream in(stem + ".llamacpp.json");
        const json ref = json::parse(in);
        const std::vector<int32_t> ids = ref["prompt_token_ids"].get<std::vector<int32_t>>();
        KvCache cache = loaded.model->makeCache(int64_t(ids.size()));
        const at::Tensor logits = loaded.model->forward(ids, cache, false);
        double worst = 0.0;
        for (const json& pair : ref["first_step_top8"])
            worst = std::max(worst, std::abs(logits[pair[0].get<int64_t>()].item<double>() - pair[1].get<double>()));
        RecordProperty("largest_difference_" + type, std::to_string(worst));
        EXPECT_LT(worst, bound) << type;
    }
}

// Both soft-caps change the logits of the test file (QuantParityTest shows them applied as
// llama.cpp applies them); the capture's window votes cap their logits, FullKV's compressed
// decode gives the full cache's logits past the window, and what computes an attention of its
// own without the cap is refused in one line.
TEST(Gemma2, SoftCapsMatterAndCompressionAppliesThem) {
    LoadedModel loaded = loadModel(kGemma2, at::kCPU, at::kFloat);
    const std::vector<int32_t> ids = loaded.tokenizer->encode("Once upon a time, there was a little girl named Lily.", true);
    KvCache cache = loaded.model->makeCache(int64_t(ids.size()));
    const at::Tensor base = loaded.model->forward(ids, cache, true);
    for (const bool attention : {true, false}) {
        ModelConfig changed = loaded.model->config();
        (attention ? changed.attnSoftcap : changed.finalSoftcap) = 0.0;
        LlamaModel other(changed, loaded.model->weights(), at::kCPU, at::kFloat);
        KvCache k2 = other.makeCache(int64_t(ids.size()));
        EXPECT_GT((other.forward(ids, k2, true) - base).abs().max().item<double>(), 1e-2) << attention;
    }
    // 90 positions, past the window of 64 on the even layers.
    std::vector<int32_t> prompt = ids;
    for (int i = 0; prompt.size() < 90; ++i) prompt.push_back(ids[size_t(1 + i % (ids.size() - 1))]);
    const auto capture = Capture::fromPrefill(*loaded.model, prompt);
    EXPECT_DOUBLE_EQ(capture->attentionSoftcap(), 4.0);
    const at::Tensor votes = capture->votes(0, 8).to(at::kDouble);
    const at::Tensor global = capture->votes(1, 8).to(at::kDouble);
    for (int64_t h = 0; h < capture->queryHeads(); ++h) {
        const std::vector<double> local = test::votesReference(*capture, 0, h, 8, true, 64, 4.0);
        const std::vector<double> whole = test::votesReference(*capture, 1, h, 8, true, 0, 4.0);
        const std::vector<double> uncapped = test::votesReference(*capture, 1, h, 8, true, 0, 0.0);
        double off = 0.0;
        for (size_t j = 0; j < local.size(); ++j) {
            ASSERT_NEAR(votes[h][int64_t(j)].item<double>(), local[j], 1e-5) << h << " " << j;
            ASSERT_NEAR(global[h][int64_t(j)].item<double>(), whole[j], 1e-5) << h << " " << j;
            off = std::max(off, std::abs(whole[j] - uncapped[j]));
        }
        EXPECT_GT(off, 1e-3) << "the cap changes head " << h << "'s votes";
    }
    PressParams full;
    full.method = "full";
    CompressedCache compressed(*capture, Press::create("full")->select(*capture, full), 4);
    KvCache plain = loaded.model->makeCache(128);
    loaded.model->forward(prompt, plain);
    int32_t token = Sampler::argmax(capture->lastLogits().data_ptr<float>(), capture->lastLogits().numel());
    for (int step = 0; step < 8; ++step) {
        const at::Tensor a = loaded.model->forward({token}, plain);
        ASSERT_LE((a - loaded.model->decode(token, compressed)).abs().max().item<float>(), 1e-4f) << "step " << step;
        token = Sampler::argmax(a.data_ptr<float>(), a.numel());
    }
    // Refused: KVzip by the window first; without the window, by the soft-cap, as expected attention.
    PressParams p;
    p.budget = 32;
    p.method = "kvzip";
    EXPECT_NE(test::errorOf([&] { Press::create("kvzip")->select(*capture, p); }).find("where a sliding window hides"),
              std::string::npos);
    loaded.model->ignoreSlidingWindow();
    const auto unwindowed = Capture::fromPrefill(*loaded.model, prompt);
    EXPECT_EQ(test::errorOf([&] { Press::create("kvzip")->select(*unwindowed, p); }),
              "--method kvzip: KVzip's reconstruction attention does not apply the model's attention logit soft-cap yet");
    p.method = "expected";
    EXPECT_EQ(test::errorOf([&] { Press::create("expected")->select(*capture, p); }),
              "--method expected: its expected attention does not apply the model's attention logit soft-cap yet");
}

TEST(Gemma2, ABadSoftCapInTheFileIsOneLine) {
    const GgufFile src(kGemma2);
    for (const char* key : {"gemma2.attn_logit_softcapping", "gemma2.final_logit_softcapping"}) {
        test::GgufBuilder b;
        for (const auto& [k, v] : src.metadata()) {
            if (k == "general.alignment") continue;
            if (k == key) {
                GgufValue zero = v;
                zero.f = 0.0;
                b.addValue(k, zero);
            } else {
                b.addValue(k, v);
            }
        }
        for (const GgufTensorInfo& t : src.tensors()) b.addTensorF32(t.name, t.shape, src.dequantize(t));
        const std::string path = test::testOutputPath("gemma2_bad_cap.gguf");
        b.writeFile(path);
        const std::string m = test::errorOf([&] { loadModel(path, at::kCPU, at::kFloat); });
        EXPECT_NE(m.find(path + ": " + key + " must be in (0, 1e6), is 0"), std::string::npos) << m;
    }
}

}  // namespace
}  // namespace kvlens
