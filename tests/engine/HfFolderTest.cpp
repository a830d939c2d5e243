// A Hugging Face folder against the GGUF it was written from (HfFolderWriter:
// config.json, safetensors with q/k in rotate-half order, tokenizer.json):
// the Llama-3-style and Qwen2 test models of tests/data/gguf and a Qwen3 with
// a SentencePiece tokenizer.model give the same token ids, the same logits
// (1e-4 in f32) and the same greedy tokens either way, from one file or shards,
// in F32 or BF16. Then the folder broken one way at a time: one line each.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "core/Error.h"
#include "support/OneLineError.h"
#include "engine/gguf/GgufFile.h"
#include "engine/hf/HfFolder.h"
#include "engine/hf/SafetensorsFile.h"
#include "engine/model/Generator.h"
#include "engine/model/KvCache.h"
#include "engine/model/ModelLoader.h"
#include "support/HfFolderWriter.h"
#include "support/TinyModelFile.h"

namespace kvlens {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

using test::errorOf;

std::string dataFile(const std::string& name) { return std::string(KVLENS_SOURCE_DIR) + "/tests/data/gguf/" + name; }

at::Tensor allLogits(LoadedModel& m, const std::vector<int32_t>& ids) {
    const ModelConfig& c = m.model->config();
    KvCache cache(c.nLayers, c.nKvHeads, c.headDim, static_cast<int64_t>(ids.size()), at::kFloat, at::kCPU);
    return m.model->forward(ids, cache, true).to(at::kFloat);
}

std::vector<int32_t> greedy(LoadedModel& m, const std::vector<int32_t>& ids) {
    GenerationOptions o;
    o.maxNewTokens = 16;
    o.ignoreEos = true;
    Generator g(*m.model);
    return g.generate(ids, o).tokens;
}

// Loads the GGUF and the folder, and checks that they are one model.
void expectSameModel(const std::string& gguf, const std::string& folder, const std::string& text, double tolerance) {
    SCOPED_TRACE(folder);
    LoadedModel a = loadModel(gguf, at::kCPU, at::kFloat);
    LoadedModel b = loadModel(folder, at::kCPU, at::kFloat);
    const ModelConfig &ca = a.model->config(), &cb = b.model->config();
    EXPECT_EQ(ca.nLayers, cb.nLayers);
    EXPECT_EQ(ca.nHeads, cb.nHeads);
    EXPECT_EQ(ca.nKvHeads, cb.nKvHeads);
    EXPECT_EQ(ca.headDim, cb.headDim);
    EXPECT_EQ(ca.vocabSize, cb.vocabSize);
    EXPECT_EQ(cb.ropeStyle, RopeStyle::Halves);
    EXPECT_EQ(a.tokenizer->vocabSize(), b.tokenizer->vocabSize());
    EXPECT_EQ(a.tokenizer->bosId(), b.tokenizer->bosId());
    EXPECT_EQ(a.tokenizer->eosId(), b.tokenizer->eosId());
    EXPECT_EQ(a.tokenizer->addBosByDefault(), b.tokenizer->addBosByDefault());
    const std::vector<int32_t> ids = a.tokenizer->encode(text, a.tokenizer->addBosByDefault());
    ASSERT_EQ(b.tokenizer->encode(text, b.tokenizer->addBosByDefault()), ids);
    ASSERT_GT(ids.size(), 8u);
    EXPECT_EQ(b.tokenizer->decode(ids), a.tokenizer->decode(ids));
    const at::Tensor la = allLogits(a, ids), lb = allLogits(b, ids);
    ASSERT_EQ(la.sizes(), lb.sizes());
    const double diff = (la - lb).abs().max().item<double>();
    EXPECT_LT(diff, tolerance) << "largest logit difference " << diff << " of " << la.abs().max().item<double>();
    EXPECT_EQ(greedy(a, ids), greedy(b, ids));
}

TEST(HfFolder, Llama3StyleFolderEqualsItsGguf) {
    const GgufFile src(dataFile("tiny-llama3-Q4_K_M.gguf"));
    // The quantised original runs on int8 activations; the comparison is with its dense copies.
    for (const std::string dtype : {"F32", "BF16"}) {
        const std::string gguf = test::testOutputPath("hf_llama3_" + dtype + ".gguf");
        const std::string dir = test::testOutputPath("hf_llama3_" + dtype);
        fs::remove_all(dir);
        test::writeDenseGguf(src, gguf, dtype);
        test::HfWriteOptions o;
        o.dtype = dtype;
        o.shards = dtype == "F32" ? 1 : 2;
        test::writeHfFolder(src, dir, o);
        expectSameModel(gguf, dir, "Once upon a time, there was a little girl named Lily. She loved 123 apples.", 1e-4);
    }
}

TEST(HfFolder, Llama3RopeScalingGivesTheGgufsFrequencyFactors) {
    // The GGUF's rope_freqs.weight came from llama.cpp's converter (make_random_gguf.py);
    // the folder's are computed from config.json's rope_scaling by HfConfig.
    const GgufFile src(dataFile("tiny-llama3-Q4_K_M.gguf"));
    const std::string dir = test::testOutputPath("hf_llama3_rope");
    fs::remove_all(dir);
    test::writeHfFolder(src, dir, {});
    const HfFolder folder(dir);
    const std::vector<float> want = src.dequantize(*src.findTensor("rope_freqs.weight"));
    ASSERT_EQ(folder.config().ropeFreqFactors.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(folder.config().ropeFreqFactors[i], want[i], 1e-5 * want[i]) << i;
    EXPECT_EQ(folder.config().ropeScalingType, "llama3");
}

TEST(HfFolder, Qwen2FolderEqualsItsGguf) {
    const GgufFile src(dataFile("tiny-qwen2-Q8_0.gguf"));
    for (const std::string dtype : {"F32", "BF16"}) {
        const std::string gguf = test::testOutputPath("hf_qwen2_" + dtype + ".gguf");
        const std::string dir = test::testOutputPath("hf_qwen2_" + dtype);
        fs::remove_all(dir);
        test::writeDenseGguf(src, gguf, dtype);
        test::HfWriteOptions o;
        o.dtype = dtype;
        o.shards = dtype == "F32" ? 3 : 1;
        test::writeHfFolder(src, dir, o);
        expectSameModel(gguf, dir, "Hello world! 12345 is a number; naïve café.", 1e-4);
    }
}

TEST(HfFolder, Qwen3WithASentencePieceTokenizerEqualsItsGguf) {
    test::TinyModelShape s;
    s.architecture = "qwen3";
    s.embed = 64;
    s.heads = 4;
    s.kvHeads = 2;
    s.ffn = 96;
    s.tiedOutput = true;
    test::TinyModelFile m = test::makeTinyModelFile(s);
    const std::string gguf = test::testOutputPath("hf_qwen3.gguf");
    m.builder.writeFile(gguf);
    const std::string dir = test::testOutputPath("hf_qwen3");
    fs::remove_all(dir);
    test::HfWriteOptions o;
    o.sentencePiece = true;
    test::writeHfFolder(GgufFile(gguf), dir, o);
    EXPECT_TRUE(fs::exists(dir + "/tokenizer.model"));
    expectSameModel(gguf, dir, "the cat the a cat that hat", 1e-4);
}

// A folder with a SentencePiece-style tokenizer.json and no tokenizer.model (many Llama 2,
// Mistral and Gemma repositories ship only that): read from the JSON, the same ids and logits.
TEST(HfFolder, ATokenizerJsonOnlySentencePieceFolderEqualsItsGguf) {
    test::TinyModelShape s;
    s.embed = 64;
    s.heads = 4;
    s.kvHeads = 2;
    s.ffn = 96;
    test::TinyModelFile m = test::makeTinyModelFile(s);
    const std::string gguf = test::testOutputPath("hf_spm_json.gguf");
    m.builder.writeFile(gguf);
    const std::string dir = test::testOutputPath("hf_spm_json");
    fs::remove_all(dir);
    test::HfWriteOptions o;
    o.sentencePieceJson = true;
    test::writeHfFolder(GgufFile(gguf), dir, o);
    EXPECT_FALSE(fs::exists(dir + "/tokenizer.model"));
    EXPECT_EQ(HfFolder(dir).tokenizerDescription(),
              "tokenizer.json (SentencePiece-style BPE, normalizer Prepend, Replace, pre-tokenizer none, byte fallback)");
    expectSameModel(gguf, dir, "the cat the a cat that hat", 1e-4);
}

// Phi3ForCausalLM: qkv_proj and gate_up_proj fused, RoPE on 24 of 32 head dimensions
// (partial_rotary_factor), sliding_window, a tokenizer.json-only SentencePiece vocabulary;
// written from the phi3 test file in F32.
TEST(HfFolder, Phi3WithFusedProjectionsAndPartialRopeEqualsItsGguf) {
    const std::string gguf = test::testOutputPath("hf_phi3.gguf");
    test::writeDenseGguf(GgufFile(dataFile("tiny-phi3-F16.gguf")), gguf, "F32");
    const std::string dir = test::testOutputPath("hf_phi3");
    fs::remove_all(dir);
    test::HfWriteOptions o;
    o.sentencePieceJson = true;  // its SentencePiece vocabulary as tokenizer.json alone
    test::writeHfFolder(GgufFile(gguf), dir, o);
    const json config = json::parse(std::ifstream(dir + "/config.json"));
    EXPECT_EQ(config["partial_rotary_factor"], 0.75);
    EXPECT_EQ(config["sliding_window"], 64);
    const HfFolder f(dir);
    EXPECT_EQ(f.config().model.ropeDim, 24);
    EXPECT_EQ(f.config().model.slidingWindow, 64);
    expectSameModel(gguf, dir, "Once upon a time, there was a little girl named Lily.", 1e-4);
}

// Gemma2ForCausalLM: its four norms stored as w and applied as (1 + w), post-norms named
// post_attention_layernorm / post_feedforward_layernorm, GeGLU, tied embeddings,
// query_pre_attn_scalar, both soft-caps, the window on even layers; written from the gemma2
// test file in F32.
TEST(HfFolder, Gemma2EqualsItsGguf) {
    const std::string gguf = test::testOutputPath("hf_gemma2.gguf");
    test::writeDenseGguf(GgufFile(dataFile("tiny-gemma2-F16.gguf")), gguf, "F32");
    const std::string dir = test::testOutputPath("hf_gemma2");
    fs::remove_all(dir);
    test::HfWriteOptions o;
    o.sentencePieceJson = true;
    test::writeHfFolder(GgufFile(gguf), dir, o);
    const HfFolder f(dir);
    const ModelConfig& c = f.config().model;
    EXPECT_EQ(c.architecture, "gemma2");
    EXPECT_EQ(c.windowPeriod, 2);
    EXPECT_EQ(c.slidingWindow, 64);
    EXPECT_DOUBLE_EQ(c.attnSoftcap, 4.0);
    EXPECT_DOUBLE_EQ(c.finalSoftcap, 5.0);
    EXPECT_TRUE(f.config().tiedEmbeddings);
    expectSameModel(gguf, dir, "Once upon a time, there was a little girl named Lily.", 1e-4);
}

TEST(HfFolder, InfoFieldsAndChatTemplate) {
    const GgufFile src(dataFile("tiny-llama3-Q4_K_M.gguf"));
    const std::string dir = test::testOutputPath("hf_llama3_info");
    fs::remove_all(dir);
    test::writeHfFolder(src, dir, {});
    json tc = json::parse(std::ifstream(dir + "/tokenizer_config.json"));
    tc["chat_template"] = "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}";
    std::ofstream(dir + "/tokenizer_config.json") << tc.dump();
    json gen = {{"eos_token_id", {0, 1}}};
    std::ofstream(dir + "/generation_config.json") << gen.dump();
    const HfFolder f(dir);
    EXPECT_EQ(f.weightFiles(), std::vector<std::string>{dir + "/model.safetensors"});
    EXPECT_TRUE(f.chatTemplate().has_value());
    EXPECT_NE(f.tokenizerDescription().find("tokenizer.json (byte-level BPE, pre-tokenizer Split, ByteLevel)"),
              std::string::npos);
    const auto tok = f.tokenizer();
    const std::vector<int32_t> eog = tok->endOfGeneration();
    for (int32_t id : {0, 1}) EXPECT_NE(std::find(eog.begin(), eog.end(), id), eog.end()) << id;
    EXPECT_EQ(loadChatTemplate(dir), f.chatTemplate());
}

// A copy of a good folder for a test to break.
std::string brokenCopy(const std::string& name, int shards = 1) {
    static const GgufFile src(dataFile("tiny-llama3-Q4_K_M.gguf"));
    const std::string dir = test::testOutputPath("hf_bad_" + name);
    fs::remove_all(dir);
    test::HfWriteOptions o;
    o.shards = shards;
    test::writeHfFolder(src, dir, o);
    return dir;
}

void editConfig(const std::string& dir, const std::function<void(json&)>& edit) {
    json j = json::parse(std::ifstream(dir + "/config.json"));
    edit(j);
    std::ofstream(dir + "/config.json") << j.dump();
}

// Rewrites model.safetensors with `edit` applied to its tensors.
void rewriteWeights(const std::string& dir, const std::function<void(std::vector<test::SafetensorsEntry>&)>& edit) {
    std::vector<test::SafetensorsEntry> entries;
    {
        const SafetensorsFile f(dir + "/model.safetensors");
        for (const SafetensorsTensor& t : f.tensors())
            entries.push_back({t.name, t.dtype, t.shape, {f.data(t), f.data(t) + (t.end - t.begin)}});
    }
    edit(entries);
    test::writeBytes(dir + "/model.safetensors", test::buildSafetensors(entries));
}

std::string loadError(const std::string& dir) {
    return errorOf([&] { loadModel(dir, at::kCPU, at::kFloat); });
}

TEST(HfFolder, BadFoldersAreOneLineEach) {
    std::string dir = brokenCopy("no_config");
    fs::remove(dir + "/config.json");
    EXPECT_EQ(loadError(dir), dir + ": no config.json; a Hugging Face model folder holds config.json, the weights as "
                                    "safetensors and the tokenizer");

    dir = brokenCopy("arch");
    editConfig(dir, [](json& j) { j["architectures"] = {"GPT2LMHeadModel"}; });
    EXPECT_EQ(loadError(dir), dir + "/config.json: architecture 'GPT2LMHeadModel' in field 'architectures' is not "
                                    "supported (supported: LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM, "
                                    "Qwen3ForCausalLM, Phi3ForCausalLM, Gemma2ForCausalLM, Gemma3ForCausalLM, "
                                    "Gemma3ForConditionalGeneration)");

    dir = brokenCopy("shard", 3);
    fs::remove(dir + "/model-00002-of-00003.safetensors");
    const std::string missing = loadError(dir);
    EXPECT_EQ(missing.rfind(dir + "/model-00002-of-00003.safetensors: missing shard (model.safetensors.index.json puts '", 0), 0u)
        << missing;

    dir = brokenCopy("shape");
    editConfig(dir, [](json& j) { j["intermediate_size"] = 336; });
    EXPECT_EQ(loadError(dir), dir + "/model.safetensors: tensor 'model.layers.0.mlp.gate_proj.weight' has shape [320, 128], "
                                    "expected [336, 128] from config.json (hidden_size=128, intermediate_size=336)");

    dir = brokenCopy("dtype");
    rewriteWeights(dir, [](std::vector<test::SafetensorsEntry>& entries) {
        for (test::SafetensorsEntry& e : entries) {
            if (e.name != "model.norm.weight") continue;
            e.dtype = "F64";  // the same tensor stored as doubles
            e.bytes.resize(e.bytes.size() * 2);
        }
    });
    EXPECT_EQ(loadError(dir), dir + "/model.safetensors: tensor 'model.norm.weight' has dtype F64, which KV Lens does "
                                    "not read (supported: F32, F16, BF16)");

    dir = brokenCopy("missing_tensor");
    rewriteWeights(dir, [](std::vector<test::SafetensorsEntry>& entries) {
        entries.erase(std::remove_if(entries.begin(), entries.end(),
                                     [](const test::SafetensorsEntry& e) {
                                         return e.name == "model.layers.1.input_layernorm.weight";
                                     }),
                      entries.end());
    });
    EXPECT_EQ(loadError(dir), dir + ": tensor 'model.layers.1.input_layernorm.weight' is missing from the weights "
                                    "(1 safetensors file)");

    // A layer count that is not the weights' is refused when the folder opens, so that
    // info (which loads no weights) refuses it as generate does; before, info printed
    // 2147483648 layers and 140.7 TB of KV cache per 1K tokens.
    // (2^31 itself is over config.json's bound for any count: HfConfigTest.)
    for (const int64_t layers : {int64_t(3), int64_t(1), int64_t(INT32_MAX)}) {
        dir = brokenCopy("layers_" + std::to_string(layers));
        editConfig(dir, [&](json& j) { j["num_hidden_layers"] = layers; });
        EXPECT_EQ(loadError(dir), dir + "/config.json: num_hidden_layers is " + std::to_string(layers) +
                                      ", but the weights hold layers 0-1 (2)");
        EXPECT_THROW(HfFolder folder(dir), Error);
    }

    dir = brokenCopy("no_lm_head");
    rewriteWeights(dir, [](std::vector<test::SafetensorsEntry>& entries) {
        entries.erase(std::remove_if(entries.begin(), entries.end(),
                                     [](const test::SafetensorsEntry& e) { return e.name == "lm_head.weight"; }),
                      entries.end());
    });
    EXPECT_EQ(loadError(dir), dir + ": tensor 'lm_head.weight' is missing and config.json's tie_word_embeddings is false");

    dir = brokenCopy("pickle");
    fs::remove(dir + "/model.safetensors");
    std::ofstream(dir + "/pytorch_model.bin") << "not really";
    EXPECT_EQ(loadError(dir), dir + ": the weights are PyTorch pickles (pytorch_model.bin); KV Lens reads safetensors "
                                    "(model.safetensors or model.safetensors.index.json)");
    fs::remove(dir + "/pytorch_model.bin");
    // A tokenizer without weights opens (tokenize, info), and loading it says why it cannot run.
    EXPECT_EQ(loadError(dir), dir + ": no weights (model.safetensors or model.safetensors.index.json) to run; kvlens "
                                    "tokenize and kvlens info read a tokenizer-only folder");
    EXPECT_FALSE(HfFolder(dir).hasWeights());
    EXPECT_GT(HfFolder(dir).tokenizer()->vocabSize(), 0);
    // Neither weights nor a tokenizer: nothing to read.
    fs::remove(dir + "/tokenizer.json");
    EXPECT_EQ(loadError(dir), dir + ": no weights (model.safetensors or model.safetensors.index.json)");

    dir = brokenCopy("no_tokenizer");
    fs::remove(dir + "/tokenizer.json");
    EXPECT_EQ(loadError(dir), dir + ": no tokenizer (tokenizer.json or tokenizer.model)");

    dir = brokenCopy("truncated");
    fs::resize_file(dir + "/model.safetensors", fs::file_size(dir + "/model.safetensors") - 100);
    EXPECT_NE(loadError(dir).find(dir + "/model.safetensors: tensor '"), std::string::npos);

    dir = brokenCopy("index_lies", 2);
    auto editIndex = [&](const std::function<void(json&)>& edit) {
        json idx = json::parse(std::ifstream(dir + "/model.safetensors.index.json"));
        edit(idx["weight_map"]);
        std::ofstream(dir + "/model.safetensors.index.json") << idx.dump();
    };
    const std::string lastShard = "model-00002-of-00002.safetensors";
    editIndex([&](json& map) { map["model.embed_tokens.weight"] = lastShard; });
    EXPECT_EQ(loadError(dir), dir + "/" + lastShard + ": tensor 'model.embed_tokens.weight' is not in it, though "
                                    "model.safetensors.index.json says so");
    editIndex([&](json& map) { map["model.embed_tokens.weight"] = "../../etc/passwd"; });
    EXPECT_EQ(loadError(dir), dir + "/model.safetensors.index.json: weight_map entry 'model.embed_tokens.weight' names "
                                    "'../../etc/passwd', not a file in the folder");

    dir = brokenCopy("bad_tokenizer_json");
    std::ofstream(dir + "/tokenizer.json") << "{\"model\": {\"type\": \"WordPiece\", \"vocab\": {}}}";
    EXPECT_EQ(loadError(dir), dir + "/tokenizer.json: model.type is 'WordPiece'; KV Lens reads BPE tokenizer.json files");
}

}  // namespace
}  // namespace kvlens
