// config.json as the published checkpoints write it (Llama 3.1, Qwen2.5, Qwen3,
// Mistral), mapped onto the engine's shape; and every field a user can get
// wrong refused in one line naming it.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <set>
#include <utility>
#include <vector>
#include <nlohmann/json.hpp>
#include <string>

#include "core/Error.h"
#include "support/OneLineError.h"
#include "engine/hf/HfConfig.h"

namespace kvlens {
namespace {

using json = nlohmann::json;

using test::errorOf;

json llama31() {
    return json::parse(R"({
      "architectures": ["LlamaForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
      "bos_token_id": 128000, "eos_token_id": [128001, 128008, 128009], "hidden_act": "silu",
      "hidden_size": 4096, "initializer_range": 0.02, "intermediate_size": 14336,
      "max_position_embeddings": 131072, "mlp_bias": false, "model_type": "llama",
      "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8, "pretraining_tp": 1,
      "rms_norm_eps": 1e-05,
      "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                       "original_max_position_embeddings": 8192, "rope_type": "llama3"},
      "rope_theta": 500000.0, "tie_word_embeddings": false, "torch_dtype": "bfloat16",
      "transformers_version": "4.43.0.dev0", "use_cache": true, "vocab_size": 128256})");
}

json qwen25() {
    return json::parse(R"({
      "architectures": ["Qwen2ForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 151643,
      "eos_token_id": 151645, "hidden_act": "silu", "hidden_size": 3584, "initializer_range": 0.02,
      "intermediate_size": 18944, "max_position_embeddings": 32768, "max_window_layers": 28,
      "model_type": "qwen2", "num_attention_heads": 28, "num_hidden_layers": 28, "num_key_value_heads": 4,
      "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "sliding_window": 131072, "tie_word_embeddings": false,
      "torch_dtype": "bfloat16", "transformers_version": "4.43.1", "use_cache": true,
      "use_sliding_window": false, "vocab_size": 152064})");
}

json qwen3() {
    return json::parse(R"({
      "architectures": ["Qwen3ForCausalLM"], "attention_bias": false, "bos_token_id": 151643,
      "eos_token_id": 151645, "head_dim": 128, "hidden_act": "silu", "hidden_size": 2560,
      "intermediate_size": 9728, "max_position_embeddings": 40960, "model_type": "qwen3",
      "num_attention_heads": 32, "num_hidden_layers": 36, "num_key_value_heads": 8, "rms_norm_eps": 1e-06,
      "rope_scaling": null, "rope_theta": 1000000, "sliding_window": null, "tie_word_embeddings": true,
      "torch_dtype": "bfloat16", "use_sliding_window": false, "vocab_size": 151936})");
}

json mistral() {
    return json::parse(R"({
      "architectures": ["MistralForCausalLM"], "bos_token_id": 1, "eos_token_id": 2, "hidden_act": "silu",
      "hidden_size": 4096, "intermediate_size": 14336, "max_position_embeddings": 32768,
      "model_type": "mistral", "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8,
      "rms_norm_eps": 1e-05, "rope_theta": 10000.0, "sliding_window": 4096, "tie_word_embeddings": false,
      "torch_dtype": "bfloat16", "vocab_size": 32000})");
}

HfConfig parse(const json& j) { return HfConfig::parse(j.dump(), "m/config.json"); }
std::string errorFor(const json& j) { return errorOf([&] { parse(j); }); }

TEST(HfConfig, Llama31MapsOntoTheEngineShape) {
    const HfConfig h = parse(llama31());
    const ModelConfig& c = h.model;
    EXPECT_EQ(h.hfArchitecture, "LlamaForCausalLM");
    EXPECT_EQ(c.architecture, "llama");
    EXPECT_EQ(c.nLayers, 32);
    EXPECT_EQ(c.embedDim, 4096);
    EXPECT_EQ(c.ffnDim, 14336);
    EXPECT_EQ(c.nHeads, 32);
    EXPECT_EQ(c.nKvHeads, 8);
    EXPECT_EQ(c.headDim, 128);
    EXPECT_EQ(c.ropeDim, 128);
    EXPECT_EQ(c.vocabSize, 128256);
    EXPECT_EQ(c.contextLength, 131072);
    EXPECT_DOUBLE_EQ(c.ropeTheta, 500000.0);
    EXPECT_DOUBLE_EQ(c.rmsEps, 1e-5);
    EXPECT_EQ(c.ropeStyle, RopeStyle::Halves);
    EXPECT_FALSE(c.qkvBias);
    EXPECT_FALSE(h.tiedEmbeddings);
    EXPECT_EQ(h.torchDtype, "bfloat16");
    EXPECT_EQ(h.bosId, 128000);
    EXPECT_EQ(h.eosIds, (std::vector<int32_t>{128001, 128008, 128009}));
    EXPECT_EQ(h.ropeScalingType, "llama3");
    EXPECT_EQ(h.slidingWindow, 0);
    // Llama 3's factors from the published rule (transformers' _compute_llama3_parameters),
    // in double: wavelengths under 8192/4 keep their frequency, over 8192/1 are slowed 8x,
    // and between them the frequency is blended.
    ASSERT_EQ(h.ropeFreqFactors.size(), 64u);
    for (size_t i = 0; i < 64; ++i) {
        const double inv = std::pow(500000.0, -2.0 * double(i) / 128.0), wavelen = 2 * M_PI / inv;
        double expected = 1.0;
        if (wavelen > 8192.0) {
            expected = 8.0;
        } else if (wavelen >= 2048.0) {
            const double s = (8192.0 / wavelen - 1.0) / 3.0;
            expected = 1.0 / ((1.0 - s) / 8.0 + s);
        }
        EXPECT_NEAR(h.ropeFreqFactors[i], expected, 1e-5 * expected) << i;
    }
    EXPECT_FLOAT_EQ(h.ropeFreqFactors[0], 1.0f);
    EXPECT_FLOAT_EQ(h.ropeFreqFactors[63], 8.0f);
}

TEST(HfConfig, QwenAndMistralShapes) {
    const HfConfig q = parse(qwen25());
    EXPECT_EQ(q.model.architecture, "qwen2");
    EXPECT_TRUE(q.model.qkvBias);
    EXPECT_EQ(q.model.headDim, 128);
    EXPECT_EQ(q.model.vocabSize, 152064);
    EXPECT_EQ(q.slidingWindow, 0);  // use_sliding_window false
    // Hugging Face slides the layers from max_window_layers on: none of Qwen2.5-7B's 28; a
    // window on some layers only is refused, not applied to all.
    json sliding = qwen25();
    sliding["use_sliding_window"] = true;
    EXPECT_EQ(parse(sliding).model.slidingWindow, 0);
    sliding["max_window_layers"] = 4;
    EXPECT_EQ(errorFor(sliding), "m/config.json: field 'max_window_layers' (4, with use_sliding_window true) puts a sliding window on some of the 28 "
                                 "layers only, which KV Lens does not run");
    sliding["max_window_layers"] = "x";
    EXPECT_EQ(errorFor(sliding), "m/config.json: field 'max_window_layers' must be a positive integer, is \"x\"");
    EXPECT_EQ(q.eosIds, (std::vector<int32_t>{151645}));
    EXPECT_TRUE(q.ropeFreqFactors.empty());

    const HfConfig q3 = parse(qwen3());
    EXPECT_EQ(q3.model.architecture, "qwen3");
    EXPECT_TRUE(q3.model.qkNorm);
    EXPECT_FALSE(q3.model.qkvBias);
    EXPECT_EQ(q3.model.headDim, 128);  // head_dim given, not hidden_size / heads (80)
    EXPECT_EQ(q3.model.embedDim, 2560);
    EXPECT_TRUE(q3.tiedEmbeddings);

    const HfConfig m = parse(mistral());
    EXPECT_EQ(m.model.architecture, "mistral");
    EXPECT_EQ(m.slidingWindow, 4096);
    json noWindow = mistral();
    noWindow["sliding_window"] = nullptr;
    EXPECT_EQ(parse(noWindow).slidingWindow, 0);
}

// Phi-3-mini-4k-instruct's config.json: fused projections in the weights, sliding_window 2047
// (guarded by the model), LongRoPE refused in one line.
TEST(HfConfig, Phi3MiniMapsOntoTheEngineShape) {
    const json phi3 = json::parse(R"({
      "architectures": ["Phi3ForCausalLM"], "bos_token_id": 1, "eos_token_id": 32000, "hidden_act": "silu",
      "hidden_size": 3072, "intermediate_size": 8192, "max_position_embeddings": 4096, "model_type": "phi3",
      "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 32, "original_max_position_embeddings": 4096,
      "rms_norm_eps": 1e-05, "rope_scaling": null, "rope_theta": 10000.0, "sliding_window": 2047,
      "tie_word_embeddings": false, "torch_dtype": "bfloat16", "vocab_size": 32064})");
    const HfConfig h = parse(phi3);
    EXPECT_EQ(h.model.architecture, "phi3");
    EXPECT_EQ(h.model.headDim, 96);
    EXPECT_EQ(h.model.ropeDim, 96);
    EXPECT_EQ(h.model.slidingWindow, 2047);
    EXPECT_EQ(h.slidingWindow, 2047);
    json partial = phi3;
    partial["partial_rotary_factor"] = 0.5;
    EXPECT_EQ(parse(partial).model.ropeDim, 48);
    json longRope = phi3;
    longRope["rope_scaling"] = {{"type", "longrope"}, {"long_factor", {1.0}}, {"short_factor", {1.0}}};
    EXPECT_EQ(errorFor(longRope), "m/config.json: field 'rope_scaling' is Phi-3's LongRoPE (su / longrope), which KV Lens does not implement");
    longRope["rope_scaling"]["type"] = "su";
    EXPECT_EQ(errorFor(longRope), "m/config.json: field 'rope_scaling' is Phi-3's LongRoPE (su / longrope), which KV Lens does not implement");
}

TEST(HfConfig, FieldsLeftOutTakeTheirClassesDefaults) {
    json q3 = qwen3();
    q3.erase("head_dim");
    q3.erase("num_key_value_heads");
    q3.erase("max_position_embeddings");
    const HfConfig h = parse(q3);
    EXPECT_EQ(h.model.headDim, 128);  // Qwen3Config's, not 2560 / 32
    EXPECT_EQ(h.model.nKvHeads, 32);
    EXPECT_EQ(h.model.contextLength, 32768);
    json m = mistral();
    m.erase("sliding_window");
    EXPECT_EQ(parse(m).slidingWindow, 4096);
    json l = llama31();
    l.erase("num_key_value_heads");
    l.erase("rms_norm_eps");
    l.erase("max_position_embeddings");
    const HfConfig hl = parse(l);
    EXPECT_EQ(hl.model.nKvHeads, 32);
    EXPECT_DOUBLE_EQ(hl.model.rmsEps, 1e-6);
    EXPECT_EQ(hl.model.contextLength, 2048);
}

TEST(HfConfig, LinearAndYarnScaling) {
    json j = qwen25();
    j["rope_scaling"] = {{"type", "yarn"}, {"factor", 4.0}, {"original_max_position_embeddings", 32768}};
    HfConfig h = parse(j);
    EXPECT_EQ(h.model.ropeScaling, RopeScaling::Yarn);
    EXPECT_DOUBLE_EQ(h.model.ropeScaleFactor, 4.0);
    EXPECT_EQ(h.model.ropeOriginalContext, 32768);
    EXPECT_DOUBLE_EQ(h.model.ropeAttnFactor, 1.0);  // transformers' default: YaRN's own magnitude
    j["rope_scaling"]["attention_factor"] = 0.5;
    EXPECT_NEAR(parse(j).model.ropeAttnFactor, 0.5 / (0.1 * std::log(4.0) + 1.0), 1e-12);
    j["rope_scaling"] = {{"rope_type", "linear"}, {"factor", 2.0}};
    h = parse(j);
    EXPECT_EQ(h.model.ropeScaling, RopeScaling::Linear);
    EXPECT_DOUBLE_EQ(h.model.ropeScaleFactor, 2.0);
    // transformers 5 writes rope_parameters with the theta inside.
    json v5 = llama31();
    v5.erase("rope_scaling");
    v5.erase("rope_theta");
    v5["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", 250000.0}};
    EXPECT_DOUBLE_EQ(parse(v5).model.ropeTheta, 250000.0);
    EXPECT_TRUE(parse(v5).ropeFreqFactors.empty());
}

TEST(HfConfig, EveryBadFieldIsOneLineNamingIt) {
    EXPECT_EQ(errorOf([] { HfConfig::parse("{\"a\": ", "m/config.json"); }).rfind("m/config.json: not valid JSON: ", 0), 0u);
    json j = llama31();
    j["architectures"] = {"GemmaForCausalLM"};
    EXPECT_EQ(errorFor(j),
              "m/config.json: architecture 'GemmaForCausalLM' in field 'architectures' is not supported (supported: "
              "LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM, Phi3ForCausalLM, "
              "Gemma2ForCausalLM, Gemma3ForCausalLM, Gemma3ForConditionalGeneration)");
    j["architectures"] = {"MixtralForCausalLM"};
    EXPECT_NE(errorFor(j).find("(a mixture-of-experts model; KV Lens runs dense models)"), std::string::npos);
    j = llama31();
    j.erase("architectures");
    EXPECT_EQ(errorFor(j), "m/config.json: field 'architectures' is missing (which model class the checkpoint is)");
    j = llama31();
    j.erase("hidden_size");
    EXPECT_EQ(errorFor(j), "m/config.json: field 'hidden_size' is missing");
    j = llama31();
    j["num_hidden_layers"] = "32";
    EXPECT_EQ(errorFor(j), "m/config.json: field 'num_hidden_layers' must be a positive integer, is \"32\"");
    j = llama31();
    j["num_key_value_heads"] = 5;
    EXPECT_EQ(errorFor(j), "m/config.json: field 'num_attention_heads' (32) is not a multiple of num_key_value_heads (5)");
    j = llama31();
    j["rope_scaling"]["rope_type"] = "dynamic";
    EXPECT_EQ(errorFor(j),
              "m/config.json: field 'rope_scaling.rope_type' 'dynamic' is not supported (llama3, linear, yarn and none are)");
    j = llama31();
    j["rope_scaling"]["high_freq_factor"] = 0.5;
    EXPECT_EQ(errorFor(j), "m/config.json: field 'rope_scaling.high_freq_factor' must be above low_freq_factor for llama3 scaling");
    j = llama31();
    j["attention_bias"] = true;
    EXPECT_EQ(errorFor(j), "m/config.json: field 'attention_bias' is true: q/k/v/o projection biases of LlamaForCausalLM "
                           "are not supported (only Qwen2's q/k/v biases are)");
    j = llama31();
    j["hidden_act"] = "gelu";
    EXPECT_EQ(errorFor(j), "m/config.json: field 'hidden_act' is 'gelu'; the engine's MLP is SwiGLU (silu)");
    j = llama31();
    j["rms_norm_eps"] = "small";
    EXPECT_EQ(errorFor(j), "m/config.json: field 'rms_norm_eps' is not a number");
    j = llama31();
    j["eos_token_id"] = {128001, -1};
    EXPECT_EQ(errorFor(j), "m/config.json: field 'eos_token_id' must be a token id or a list of them, holds -1");
    j = qwen25();
    j["rope_scaling"] = {{"type", "yarn"}, {"factor", 4.0}, {"beta_fast", 16}};
    EXPECT_EQ(errorFor(j), "m/config.json: field 'rope_scaling.beta_fast' and beta_slow other than 32 and 1 are not supported");
    j = qwen25();
    j["hidden_size"] = 3585;
    EXPECT_EQ(errorFor(j), "m/config.json: field 'hidden_size' (3585) is not a multiple of num_attention_heads (28) and head_dim is not given");
    EXPECT_EQ(errorOf([] { HfConfig::parse("[1]", "m/config.json"); }), "m/config.json: not a JSON object");
    j = llama31();
    j["vocab_size"] = 1 << 30;
    EXPECT_EQ(errorFor(j), "m/config.json: field 'vocab_size' (1073741824) is over 4194304");
    j = llama31();
    j["head_dim"] = 1 << 20;
    EXPECT_EQ(errorFor(j), "m/config.json: field 'head_dim' (1048576) is over 4096");
    j = llama31();
    j["architectures"] = {"Evil\nClass"};
    EXPECT_NE(errorFor(j).find("architecture 'Evil\\x0aClass'"), std::string::npos);
}

// The probe a hostile user runs, as a table: every field of four published configs given
// each wrong type, an empty value, zero, a negative, overflowing numbers and NaN-like
// extremes. Each is refused in one line naming the file and the field, or is one of the
// values below that the field legitimately takes (or a field KV Lens does not read).
// Values of every JSON type and range, each a hostile user's try at a field.
const std::vector<std::pair<std::string, json>>& hostileValues() {
    static const std::vector<std::pair<std::string, json>> bad = {
        {"a string", "x"},          {"an empty string", ""},   {"a list", json::array({1, 2})},
        {"an empty list", json::array()}, {"an object", json::object({{"a", 1}})}, {"null", nullptr},
        {"true", true},             {"zero", 0},               {"-1", -1},
        {"2^31", int64_t(1) << 31}, {"2^63-1", INT64_MAX},     {"1e308", 1e308},
        {"-1e308", -1e308},         {"0.5", 0.5},
    };
    return bad;
}

std::vector<std::string> badValuesTakenInSilence(const json& config,
                                                 const std::set<std::pair<std::string, std::string>>& valid,
                                                 const std::set<std::string>& unread) {
    std::vector<std::string> silent;
    {
        std::vector<std::string> fields;
        for (const auto& [key, value] : config.items()) {
            fields.push_back(key);
            if (value.is_object())
                for (const auto& [sub, subValue] : value.items()) fields.push_back(key + "." + sub);
        }
        for (const std::string& field : fields) {
            const std::string top = field.substr(0, field.find('.'));
            for (const auto& [label, value] : hostileValues()) {
                json j = config;
                if (field == top) {
                    j[field] = value;
                } else {
                    j[top][field.substr(top.size() + 1)] = value;
                }
                std::string error;
                try {
                    parse(j);
                } catch (const Error& e) {
                    error = e.what();
                }
                if (error.empty()) {
                    if (!unread.count(top) && !unread.count(field) && !valid.count({field, label}))
                        silent.push_back(config["architectures"][0].get<std::string>() + " " + field + " = " + label);
                    continue;
                }
                EXPECT_EQ(error.find('\n'), std::string::npos) << error;
                EXPECT_EQ(error.rfind("m/config.json: ", 0), 0u) << error;
                // Named as the field, or as the field it contradicts (a shape's parts).
                const std::string leaf = field.substr(field.rfind('.') + 1);
                EXPECT_TRUE(error.find(leaf) != std::string::npos || error.find(top) != std::string::npos ||
                            error.find("num_") != std::string::npos || error.find("hidden_size") != std::string::npos)
                    << field << " = " << label << ": " << error;
            }
        }
    }
    return silent;
}

TEST(HfConfig, EveryFieldGivenEveryBadValueIsRefusedNamingItOrMeansWhatItSays) {
    // Fields KV Lens does not read (training settings and metadata).
    const std::set<std::string> unread = {"attention_dropout", "initializer_range", "mlp_bias_unused", "pretraining_tp",
                                          "transformers_version", "use_cache", "torch_dtype", "model_type",
                                          "max_window_layers"};
    // (field, value label) pairs that are valid configs.
    // A null is the field left out: the model class's default, as for a missing field.
    const std::set<std::pair<std::string, std::string>> valid = {
        {"bos_token_id", "null"},          {"bos_token_id", "zero"},           {"eos_token_id", "zero"},
        {"eos_token_id", "null"},          {"eos_token_id", "an empty list"},  {"eos_token_id", "a list"},
        {"rope_scaling", "null"},          {"sliding_window", "null"},         {"attention_bias", "null"},
        {"mlp_bias", "null"},              {"tie_word_embeddings", "null"},    {"tie_word_embeddings", "true"},
        {"use_sliding_window", "null"},    {"head_dim", "null"},               {"hidden_act", "null"},
        {"max_position_embeddings", "null"}, {"num_key_value_heads", "null"},  {"rms_norm_eps", "null"},
        {"rms_norm_eps", "0.5"},           {"rope_theta", "null"},             {"rope_theta", "2^31"},
        {"rope_scaling.low_freq_factor", "0.5"},
        // Qwen2.5's max_window_layers (28 of 28 layers) leaves no layer sliding.
        {"use_sliding_window", "true"},
    };
    std::vector<std::string> silent;
    for (const json& config : {llama31(), qwen25(), qwen3(), mistral()}) {
        const std::vector<std::string> more = badValuesTakenInSilence(config, valid, unread);
        silent.insert(silent.end(), more.begin(), more.end());
    }
    std::string list;
    for (const std::string& s : silent) list += "\n  " + s;
    EXPECT_TRUE(silent.empty()) << silent.size() << " bad values taken in silence:" << list;
}

json gemma2() {  // google/gemma-2-9b
    return json::parse(R"({
      "architectures": ["Gemma2ForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
      "attn_logit_softcapping": 50.0, "bos_token_id": 2, "cache_implementation": "hybrid", "eos_token_id": 1,
      "final_logit_softcapping": 30.0, "head_dim": 256, "hidden_act": "gelu_pytorch_tanh",
      "hidden_activation": "gelu_pytorch_tanh", "hidden_size": 3584, "initializer_range": 0.02,
      "intermediate_size": 14336, "max_position_embeddings": 8192, "model_type": "gemma2",
      "num_attention_heads": 16, "num_hidden_layers": 42, "num_key_value_heads": 8, "pad_token_id": 0,
      "query_pre_attn_scalar": 256, "rms_norm_eps": 1e-06, "rope_theta": 10000.0, "sliding_window": 4096,
      "sliding_window_size": 4096, "torch_dtype": "float32", "transformers_version": "4.42.0.dev0",
      "use_cache": true, "vocab_size": 256000})");
}

json gemma3() {  // google/gemma-3-1b-it
    return json::parse(R"({
      "architectures": ["Gemma3ForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
      "attn_logit_softcapping": null, "bos_token_id": 2, "cache_implementation": "hybrid", "eos_token_id": [1, 106],
      "final_logit_softcapping": null, "head_dim": 256, "hidden_activation": "gelu_pytorch_tanh",
      "hidden_size": 1152, "initializer_range": 0.02, "intermediate_size": 6912, "max_position_embeddings": 32768,
      "model_type": "gemma3_text", "num_attention_heads": 4, "num_hidden_layers": 26, "num_key_value_heads": 1,
      "pad_token_id": 0, "query_pre_attn_scalar": 256, "rms_norm_eps": 1e-06, "rope_local_base_freq": 10000,
      "rope_scaling": null, "rope_theta": 1000000, "sliding_window": 512, "sliding_window_pattern": 6,
      "torch_dtype": "bfloat16", "transformers_version": "4.50.0.dev0", "use_cache": true, "vocab_size": 262144})");
}

json gemma3Multimodal() {  // google/gemma-3-4b-it, the vision config left out
    return json::parse(R"({
      "architectures": ["Gemma3ForConditionalGeneration"], "boi_token_index": 255999, "eoi_token_index": 256000,
      "eos_token_id": [1, 106], "image_token_index": 262144, "initializer_range": 0.02, "mm_tokens_per_image": 256,
      "model_type": "gemma3",
      "text_config": {"hidden_size": 2560, "intermediate_size": 10240, "model_type": "gemma3_text",
                      "num_hidden_layers": 34, "rope_scaling": {"factor": 8.0, "rope_type": "linear"},
                      "sliding_window": 1024},
      "torch_dtype": "bfloat16", "transformers_version": "4.50.0.dev0"})");
}

TEST(HfConfig, Gemma2And3MapOntoTheEngineShape) {
    const HfConfig g2 = parse(gemma2());
    EXPECT_EQ(g2.model.architecture, "gemma2");
    EXPECT_EQ(g2.model.headDim, 256);
    EXPECT_EQ(g2.model.activation, Activation::GeluTanhGate);
    EXPECT_TRUE(g2.model.postNorms);
    EXPECT_TRUE(g2.normPlusOne);
    EXPECT_TRUE(g2.tiedEmbeddings);  // Gemma2Config's default
    EXPECT_DOUBLE_EQ(g2.model.embedScale, double(std::sqrt(3584.0f)));
    EXPECT_DOUBLE_EQ(g2.model.queryScale, 1.0 / 16.0);
    EXPECT_DOUBLE_EQ(g2.model.attnSoftcap, 50.0);
    EXPECT_DOUBLE_EQ(g2.model.finalSoftcap, 30.0);
    EXPECT_EQ(g2.model.slidingWindow, 4096);
    EXPECT_EQ(g2.model.windowPeriod, 2);
    EXPECT_DOUBLE_EQ(g2.model.localRopeTheta, 0.0);

    const HfConfig g3 = parse(gemma3());
    EXPECT_EQ(g3.model.architecture, "gemma3");
    EXPECT_TRUE(g3.model.qkNorm);
    EXPECT_DOUBLE_EQ(g3.model.attnSoftcap, 0.0);  // null: none
    EXPECT_DOUBLE_EQ(g3.model.finalSoftcap, 0.0);
    EXPECT_EQ(g3.model.slidingWindow, 512);
    EXPECT_EQ(g3.model.windowPeriod, 6);
    EXPECT_DOUBLE_EQ(g3.model.localRopeTheta, 10000.0);
    EXPECT_DOUBLE_EQ(g3.model.ropeTheta, 1e6);
    EXPECT_EQ(g3.eosIds, (std::vector<int32_t>{1, 106}));

    // The multimodal checkpoint: text_config's few fields over Gemma3TextConfig's defaults.
    const HfConfig mm = parse(gemma3Multimodal());
    EXPECT_TRUE(mm.multimodal);
    EXPECT_EQ(mm.model.nHeads, 8);
    EXPECT_EQ(mm.model.nKvHeads, 4);
    EXPECT_EQ(mm.model.vocabSize, 262208);
    EXPECT_EQ(mm.model.nLayers, 34);
    EXPECT_EQ(mm.model.slidingWindow, 1024);
    EXPECT_EQ(mm.model.ropeScaling, RopeScaling::Linear);  // the global layers' (the local ones have none)
    EXPECT_DOUBLE_EQ(mm.model.ropeScaleFactor, 8.0);
    EXPECT_EQ(mm.eosIds, (std::vector<int32_t>{1, 106}));
    EXPECT_TRUE(mm.tiedEmbeddings);

    // transformers 4.53+'s layer_types instead of the pattern.
    json typed = gemma3();
    typed.erase("sliding_window_pattern");
    typed["layer_types"] = json::array();
    for (int l = 0; l < 26; ++l) typed["layer_types"].push_back((l + 1) % 6 ? "sliding_attention" : "full_attention");
    EXPECT_EQ(parse(typed).model.windowPeriod, 6);
    typed["layer_types"][3] = "full_attention";
    EXPECT_EQ(errorFor(typed), "m/config.json: field 'layer_types' does not repeat one pattern of local layers then a global one "
                               "(layer 5), which KV Lens does not run");
    typed["layer_types"][3] = "chunked_attention";
    EXPECT_EQ(errorFor(typed), "m/config.json: field 'layer_types' holds \"chunked_attention\" (sliding_attention and "
                               "full_attention are known)");
    typed["layer_types"].erase(3);
    EXPECT_EQ(errorFor(typed), "m/config.json: field 'layer_types' must list one type for each of the 26 layers");
    json everyGlobal = gemma3();
    everyGlobal["sliding_window_pattern"] = 1;
    EXPECT_EQ(parse(everyGlobal).model.slidingWindow, 0);

    json act = gemma2();
    act["hidden_activation"] = "gelu";
    EXPECT_EQ(errorFor(act), "m/config.json: field 'hidden_activation' is 'gelu'; KV Lens runs Gemma's GeGLU with "
                             "gelu_pytorch_tanh");
    json noText = gemma3Multimodal();
    noText["text_config"] = 3;
    EXPECT_EQ(errorFor(noText), "m/config.json: field 'text_config' is missing or not an object (the text model's fields)");
    json badText = gemma3Multimodal();
    badText["text_config"]["num_hidden_layers"] = "x";
    EXPECT_EQ(errorFor(badText), "m/config.json: field 'text_config.num_hidden_layers' must be a positive integer, is \"x\"");
}

TEST(HfConfig, EveryGemmaFieldGivenEveryBadValueIsRefusedNamingItOrMeansWhatItSays) {
    const std::set<std::string> unread = {"attention_dropout", "initializer_range", "transformers_version", "use_cache",
                                          "torch_dtype", "model_type", "cache_implementation", "pad_token_id",
                                          "sliding_window_size", "hidden_act", "boi_token_index", "eoi_token_index",
                                          "image_token_index", "mm_tokens_per_image", "text_config.model_type"};
    // A null is the class's default (a soft-cap's or the window's null: none).
    std::set<std::pair<std::string, std::string>> valid;
    for (const char* f : {"bos_token_id", "eos_token_id", "attention_bias", "attn_logit_softcapping", "final_logit_softcapping",
                          "head_dim", "hidden_activation", "max_position_embeddings", "num_key_value_heads", "rms_norm_eps",
                          "rope_theta", "rope_scaling", "sliding_window", "query_pre_attn_scalar", "rope_local_base_freq",
                          "sliding_window_pattern", "text_config.sliding_window", "text_config.rope_scaling"})
        valid.insert({f, "null"});
    for (const char* f : {"attn_logit_softcapping", "final_logit_softcapping", "query_pre_attn_scalar", "rms_norm_eps"})
        valid.insert({f, "0.5"});
    for (const char* f : {"rope_theta", "rope_local_base_freq"}) valid.insert({f, "2^31"});
    for (const char* f : {"bos_token_id", "eos_token_id"}) valid.insert({f, "zero"});
    for (const char* f : {"eos_token_id"}) {
        valid.insert({f, "a list"});
        valid.insert({f, "an empty list"});
    }
    // text_config of fields it does not know: Gemma3TextConfig's defaults throughout.
    valid.insert({"text_config", "an object"});
    // A pattern past the layer count: every layer local.
    valid.insert({"sliding_window_pattern", "2^31"});
    std::vector<std::string> silent;
    for (const json& config : {gemma2(), gemma3(), gemma3Multimodal()}) {
        const std::vector<std::string> more = badValuesTakenInSilence(config, valid, unread);
        silent.insert(silent.end(), more.begin(), more.end());
    }
    std::string list;
    for (const std::string& s : silent) list += "\n  " + s;
    EXPECT_TRUE(silent.empty()) << silent.size() << " bad values taken in silence:" << list;
}

}  // namespace
}  // namespace kvlens
