// config.json -> ModelConfig, field by field, each failure naming its field.
#include "engine/hf/HfConfig.h"

#include <cmath>
#include <cstdio>
#include <functional>
#include <utility>
#include <nlohmann/json.hpp>

#include "core/Error.h"
#include "engine/hf/Quoted.h"

namespace kvlens {
namespace {

using json = nlohmann::json;

// Each class and the defaults its transformers config class gives a field the file
// leaves out (0: none, the field is required or derived).
struct Arch {
    const char* hf;
    const char* engine;  // ArchitectureTraits' name
    int64_t kvHeads;     // num_key_value_heads (0: num_attention_heads)
    int64_t headDim;     // head_dim (0: hidden_size / num_attention_heads)
    int64_t context;     // max_position_embeddings
    int64_t window;      // sliding_window when absent (an explicit null is none)
    // The defaults of the transformers config class for fields the file may leave out,
    // as JSON (nullptr: none beyond the above). Gemma's configs often list only a few.
    const char* defaults = nullptr;
    bool textConfig = false;  // the fields are in text_config (a multimodal checkpoint)
};

// transformers' Gemma2Config and Gemma3TextConfig defaults.
constexpr char kGemma2Defaults[] =
    R"({"vocab_size": 256000, "hidden_size": 2304, "intermediate_size": 9216, "num_hidden_layers": 26,
        "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256, "hidden_activation": "gelu_pytorch_tanh",
        "max_position_embeddings": 8192, "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "query_pre_attn_scalar": 256,
        "sliding_window": 4096, "final_logit_softcapping": 30.0, "attn_logit_softcapping": 50.0,
        "tie_word_embeddings": true})";
constexpr char kGemma3Defaults[] =
    R"({"vocab_size": 262208, "hidden_size": 2304, "intermediate_size": 9216, "num_hidden_layers": 26,
        "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256, "hidden_activation": "gelu_pytorch_tanh",
        "max_position_embeddings": 131072, "rms_norm_eps": 1e-6, "rope_theta": 1000000.0, "query_pre_attn_scalar": 256,
        "sliding_window": 4096, "final_logit_softcapping": null, "attn_logit_softcapping": null,
        "rope_local_base_freq": 10000.0, "sliding_window_pattern": 6, "tie_word_embeddings": true})";

const Arch kArchs[] = {{"LlamaForCausalLM", "llama", 0, 0, 2048, 0},
                       {"MistralForCausalLM", "mistral", 8, 0, 131072, 4096},
                       {"Qwen2ForCausalLM", "qwen2", 32, 0, 32768, 4096},
                       {"Qwen3ForCausalLM", "qwen3", 32, 128, 32768, 4096},
                       {"Phi3ForCausalLM", "phi3", 0, 0, 4096, 0},
                       {"Gemma2ForCausalLM", "gemma2", 4, 256, 8192, 4096, kGemma2Defaults},
                       {"Gemma3ForCausalLM", "gemma3", 4, 256, 131072, 4096, kGemma3Defaults},
                       {"Gemma3ForConditionalGeneration", "gemma3", 4, 256, 131072, 4096, kGemma3Defaults, true}};

// Beyond these a file is hostile or broken: a vocabulary of 4M entries, heads of 4096 dims.
constexpr int64_t kMaxVocab = int64_t(1) << 22;
constexpr int64_t kMaxHeadDim = 4096;

bool mixtureOfExperts(const std::string& a) {
    for (const char* m : {"MixtralForCausalLM", "Qwen2MoeForCausalLM", "Qwen3MoeForCausalLM", "DeepseekV2ForCausalLM",
                          "DeepseekV3ForCausalLM", "OlmoeForCausalLM", "GraniteMoeForCausalLM", "DbrxForCausalLM"})
        if (a == m) return true;
    return false;
}

class Fields {
public:
    // `prefix` names the object the fields are in ("text_config.").
    Fields(const json& j, std::string source, std::string prefix = "")
        : j_(j), source_(std::move(source)), prefix_(std::move(prefix)) {}

    [[noreturn]] void fail(const std::string& field, const std::string& what) const {
        throw Error(source_ + ": field '" + prefix_ + field + "' " + what);
    }
    // Whether the file says null for it (a soft-cap of null is none; absent is the default).
    bool isNull(const std::string& field) const {
        const auto it = j_.find(field);
        return it != j_.end() && it->is_null();
    }
    const json& object() const { return j_; }
    const json* find(const std::string& field) const {
        const auto it = j_.find(field);
        return it == j_.end() || it->is_null() ? nullptr : &*it;
    }
    int64_t count(const std::string& field) const {
        const json* v = find(field);
        if (!v) fail(field, "is missing");
        return countOf(field, *v);
    }
    int64_t countOr(const std::string& field, int64_t fallback) const {
        const json* v = find(field);
        return v ? countOf(field, *v) : fallback;
    }
    double numberOr(const std::string& field, double fallback) const {
        const json* v = find(field);
        if (!v) return fallback;
        if (!v->is_number()) fail(field, "is not a number");
        return v->get<double>();
    }
    bool flagOr(const std::string& field, bool fallback) const {
        const json* v = find(field);
        if (!v) return fallback;
        if (!v->is_boolean()) fail(field, "is not true or false");
        return v->get<bool>();
    }
    std::string textOr(const std::string& field, const std::string& fallback) const {
        const json* v = find(field);
        if (!v) return fallback;
        if (!v->is_string()) fail(field, "is not a string");
        return v->get<std::string>();
    }
    const std::string& source() const { return source_; }

private:
    int64_t countOf(const std::string& field, const json& v) const {
        if (!v.is_number_integer() || v.get<int64_t>() <= 0 || v.get<int64_t>() > INT32_MAX) {
            fail(field, "must be a positive integer, is " + v.dump());
        }
        return v.get<int64_t>();
    }
    const json& j_;
    std::string source_;
    std::string prefix_;
};

// The largest RoPE scaling factor taken (published checkpoints use 4 to 64).
constexpr double kMaxRopeFactor = 1024.0;

// transformers' _compute_llama3_parameters, as the factor each rotated pair's
// frequency is divided by (llama.cpp's rope_freqs.weight).
std::vector<float> llama3Factors(const Fields& f, const std::string& p, int64_t ropeDim, double theta) {
    const double factor = f.numberOr(p + "factor", 0.0);
    const double low = f.numberOr(p + "low_freq_factor", 0.0);
    const double high = f.numberOr(p + "high_freq_factor", 0.0);
    const double original = double(f.count(p + "original_max_position_embeddings"));
    if (!(factor >= 1.0 && factor <= kMaxRopeFactor))
        f.fail(p + "factor", "must be in [1, " + std::to_string(int(kMaxRopeFactor)) + "] for llama3 scaling");
    if (!(low > 0.0)) f.fail(p + "low_freq_factor", "must be positive for llama3 scaling");
    if (!(high > low)) f.fail(p + "high_freq_factor", "must be above low_freq_factor for llama3 scaling");
    if (!(high <= kMaxRopeFactor))
        f.fail(p + "high_freq_factor", "must be at most " + std::to_string(int(kMaxRopeFactor)));
    const double lowWavelen = original / low, highWavelen = original / high;
    std::vector<float> out(static_cast<size_t>(ropeDim / 2));
    for (size_t i = 0; i < out.size(); ++i) {
        const double inv = std::pow(theta, -2.0 * double(i) / double(ropeDim));
        const double wavelen = 2.0 * M_PI / inv;
        double scaled = inv;
        if (wavelen > lowWavelen) {
            scaled = inv / factor;
        } else if (wavelen >= highWavelen) {
            const double smooth = (original / wavelen - low) / (high - low);
            scaled = (1.0 - smooth) * inv / factor + smooth * inv;
        }
        out[i] = static_cast<float>(inv / scaled);
    }
    return out;
}

std::vector<int32_t> tokenIds(const Fields& f, const std::string& field) {
    std::vector<int32_t> ids;
    const json* v = f.find(field);
    if (!v) return ids;
    auto one = [&](const json& x) {
        if (!x.is_number_integer() || x.get<int64_t>() < 0 || x.get<int64_t>() > INT32_MAX) {
            f.fail(field, "must be a token id or a list of them, holds " + x.dump());
        }
        ids.push_back(static_cast<int32_t>(x.get<int64_t>()));
    };
    if (v->is_array()) {
        for (const json& x : *v) one(x);
    } else {
        one(*v);
    }
    return ids;
}

// Which layers are local, as ModelConfig::windowPeriod: Gemma 2 slides even layers; Gemma 3
// every layer but each sliding_window_pattern-th; transformers 4.53+ may list them instead as
// layer_types, which must then follow such a period.
int64_t windowPeriodOf(const Fields& f, const std::string& architecture, int64_t layers) {
    const json* types = f.find("layer_types");
    if (!types) {
        if (architecture == "gemma2") return 2;
        return f.countOr("sliding_window_pattern", 6);
    }
    if (!types->is_array() || int64_t(types->size()) != layers)
        f.fail("layer_types", "must list one type for each of the " + std::to_string(layers) + " layers");
    std::vector<bool> local;
    for (const json& t : *types) {
        if (t != "sliding_attention" && t != "full_attention")
            f.fail("layer_types", "holds " + t.dump() + " (sliding_attention and full_attention are known)");
        local.push_back(t == "sliding_attention");
    }
    int64_t period = 0;  // every layer local
    for (int64_t l = 0; l < layers; ++l)
        if (!local[size_t(l)]) {
            period = l + 1;
            break;
        }
    for (int64_t l = 0; l < layers; ++l) {
        const bool expected = period == 0 || (l + 1) % period != 0;
        if (local[size_t(l)] != expected)
            f.fail("layer_types", "does not repeat one pattern of local layers then a global one (layer " + std::to_string(l) +
                                      "), which KV Lens does not run");
    }
    return period;
}

}  // namespace

std::vector<std::string> HfConfig::architectures() {
    std::vector<std::string> out;
    for (const Arch& a : kArchs) out.emplace_back(a.hf);
    return out;
}

HfConfig HfConfig::parse(const std::string& text, const std::string& source) {
    json j;
    try {
        j = json::parse(text);
    } catch (const json::exception& e) {
        std::string what = e.what();
        if (const size_t p = what.find("] "); p != std::string::npos) what = what.substr(p + 2);
        throw Error(source + ": not valid JSON: " + what);
    }
    if (!j.is_object()) throw Error(source + ": not a JSON object");
    const Fields top(j, source);

    HfConfig h;
    const json* archs = top.find("architectures");
    if (!archs) top.fail("architectures", "is missing (which model class the checkpoint is)");
    if (!archs->is_array() || archs->empty() || !(*archs)[0].is_string()) {
        top.fail("architectures", "is not a list of class names");
    }
    h.hfArchitecture = (*archs)[0].get<std::string>();
    ModelConfig& c = h.model;
    const Arch* arch = nullptr;
    for (const Arch& a : kArchs)
        if (h.hfArchitecture == a.hf) arch = &a;
    if (!arch) {
        std::string list;
        for (const Arch& a : kArchs) list += (list.empty() ? "" : ", ") + std::string(a.hf);
        throw Error(source + ": architecture " + quotedText(h.hfArchitecture) + " in field 'architectures' is not supported" +
                    (mixtureOfExperts(h.hfArchitecture) ? " (a mixture-of-experts model; KV Lens runs dense models)"
                                                        : "") +
                    " (supported: " + list + ")");
    }
    // The model's fields: config.json itself, or its text_config (Gemma 3's multimodal
    // checkpoints), with the config class's defaults under what the file leaves out.
    json fields = j;
    std::string prefix;
    if (arch->textConfig) {
        const json* t = top.find("text_config");
        if (!t || !t->is_object()) top.fail("text_config", "is missing or not an object (the text model's fields)");
        fields = *t;
        prefix = "text_config.";
        for (const char* k : {"bos_token_id", "eos_token_id", "torch_dtype", "dtype", "tie_word_embeddings"})
            if (!fields.contains(k) && j.contains(k)) fields[k] = j[k];
        h.multimodal = true;
    }
    if (arch->defaults) {
        const json d = json::parse(arch->defaults);
        for (auto it = d.begin(); it != d.end(); ++it)
            if (!fields.contains(it.key())) fields[it.key()] = it.value();
    }
    const Fields f(fields, source, prefix);
    c.architecture = arch->engine;
    c.name = top.textOr("_name_or_path", "");
    c.nLayers = f.count("num_hidden_layers");
    c.embedDim = f.count("hidden_size");
    c.ffnDim = f.count("intermediate_size");
    c.nHeads = f.count("num_attention_heads");
    c.nKvHeads = f.countOr("num_key_value_heads", arch->kvHeads > 0 ? arch->kvHeads : c.nHeads);
    c.vocabSize = f.count("vocab_size");
    if (c.vocabSize > kMaxVocab) f.fail("vocab_size", "(" + std::to_string(c.vocabSize) + ") is over " + std::to_string(kMaxVocab));
    c.headDim = f.countOr("head_dim", arch->headDim > 0 ? arch->headDim : c.embedDim / c.nHeads);
    if (c.headDim > kMaxHeadDim) f.fail("head_dim", "(" + std::to_string(c.headDim) + ") is over " + std::to_string(kMaxHeadDim));
    if (!f.find("head_dim") && arch->headDim == 0 && c.embedDim % c.nHeads != 0) {
        f.fail("hidden_size", "(" + std::to_string(c.embedDim) + ") is not a multiple of num_attention_heads (" +
                                  std::to_string(c.nHeads) + ") and head_dim is not given");
    }
    c.contextLength = f.countOr("max_position_embeddings", arch->context);
    c.rmsEps = f.numberOr("rms_norm_eps", 1e-6);
    if (!(c.rmsEps > 0.0 && c.rmsEps < 1.0)) f.fail("rms_norm_eps", "must be in (0, 1), is " + std::to_string(c.rmsEps));
    const double partial = f.numberOr("partial_rotary_factor", 1.0);
    if (!(partial > 0.0 && partial <= 1.0)) f.fail("partial_rotary_factor", "must be in (0, 1]");
    c.ropeDim = static_cast<int64_t>(std::llround(double(c.headDim) * partial));
    c.ropeStyle = RopeStyle::Halves;  // Hugging Face's rotate_half layout
    c.qkvBias = c.architecture == "qwen2";
    c.qkNorm = c.architecture == "qwen3" || c.architecture == "gemma3";
    const bool gemma = c.architecture == "gemma2" || c.architecture == "gemma3";
    if (c.architecture == "phi3" && f.find("rope_scaling")) {
        const json& rs = *f.find("rope_scaling");
        if (rs.is_object() && (rs.value("type", json()) == "su" || rs.value("type", json()) == "longrope" ||
                               rs.value("rope_type", json()) == "longrope")) {
            f.fail("rope_scaling", "is Phi-3's LongRoPE (su / longrope), which KV Lens does not implement");
        }
    }
    if (f.flagOr("attention_bias", false)) {
        f.fail("attention_bias", "is true: q/k/v/o projection biases of " + h.hfArchitecture +
                                     " are not supported (only Qwen2's q/k/v biases are)");
    }
    if (f.flagOr("mlp_bias", false)) f.fail("mlp_bias", "is true: MLP biases are not supported");
    if (gemma) {
        // Gemma's MLP reads hidden_activation (Gemma 2's hidden_act is not used).
        const std::string act = f.textOr("hidden_activation", "gelu_pytorch_tanh");
        if (act != "gelu_pytorch_tanh")
            f.fail("hidden_activation", "is " + quotedText(act) + "; KV Lens runs Gemma's GeGLU with gelu_pytorch_tanh");
        c.activation = Activation::GeluTanhGate;
        c.postNorms = true;
        h.normPlusOne = true;
        c.embedScale = static_cast<double>(std::sqrt(static_cast<float>(c.embedDim)));
        const double scalar = f.numberOr("query_pre_attn_scalar", 256.0);
        if (!(scalar > 0.0 && scalar <= 1e6)) f.fail("query_pre_attn_scalar", "must be in (0, 1e6]");
        c.queryScale = 1.0 / std::sqrt(scalar);
        for (const auto& [field, cap] : {std::pair<const char*, double*>{"attn_logit_softcapping", &c.attnSoftcap},
                                         {"final_logit_softcapping", &c.finalSoftcap}}) {
            if (f.isNull(field)) continue;  // none
            *cap = f.numberOr(field, 0.0);
            if (!(*cap > 0.0 && *cap < 1e6)) f.fail(field, "must be in (0, 1e6) or null");
        }
        if (c.architecture == "gemma3") {
            c.localRopeTheta = f.numberOr("rope_local_base_freq", 10000.0);
            if (!(c.localRopeTheta > 1.0 && c.localRopeTheta <= 1e12))
                f.fail("rope_local_base_freq", "must be above 1 and at most 1e12");
        }
    } else {
        const std::string act = f.textOr("hidden_act", "silu");
        if (act != "silu") f.fail("hidden_act", "is '" + act + "'; the engine's MLP is SwiGLU (silu)");
    }
    h.tiedEmbeddings = f.flagOr("tie_word_embeddings", false);
    h.torchDtype = f.textOr("torch_dtype", f.textOr("dtype", ""));

    // RoPE: rope_theta and rope_scaling, or transformers 5's rope_parameters.
    std::string rp;  // prefix of the object that holds the scaling fields
    json scaling;
    json flat = json::object();  // the scaling fields, named "rope_scaling.<field>" in messages
    std::function<std::vector<float>(const ModelConfig&)> llama3;  // computed once the shape is checked
    if (const json* params = f.find("rope_parameters")) {
        if (!params->is_object()) f.fail("rope_parameters", "is not an object");
        scaling = *params;
        rp = "rope_parameters.";
    } else if (const json* s = f.find("rope_scaling")) {
        if (!s->is_object()) f.fail("rope_scaling", "is not an object");
        scaling = *s;
        rp = "rope_scaling.";
    }
    c.ropeTheta = f.numberOr("rope_theta", 10000.0);
    auto given = [&](const char* key) { return scaling.contains(key) && !scaling[key].is_null(); };
    if (scaling.is_object() && !given("rope_type") && !given("type")) {
        for (auto it = scaling.begin(); it != scaling.end(); ++it)
            if (it.key() != "rope_theta" && !it.value().is_null())
                f.fail(rp + "rope_type", "is missing, so what '" + it.key() + "' scales is unknown");
    }
    if (scaling.is_object()) {
        for (auto it = scaling.begin(); it != scaling.end(); ++it) flat[rp + it.key()] = it.value();
        const Fields s(flat, source);
        if (rp == "rope_parameters.") c.ropeTheta = s.numberOr(rp + "rope_theta", c.ropeTheta);
        std::string type = s.textOr(rp + "rope_type", s.textOr(rp + "type", "default"));
        if (type.empty()) s.fail(rp + "rope_type", "is empty");
        if (type == "default") type.clear();
        h.ropeScalingType = type;
        if (type == "llama3") {
            llama3 = [s, rp](const ModelConfig& m) { return llama3Factors(s, rp, m.ropeDim, m.ropeTheta); };
        } else if (type == "linear" || type == "yarn") {
            c.ropeScaling = type == "linear" ? RopeScaling::Linear : RopeScaling::Yarn;
            c.ropeScaleFactor = s.numberOr(rp + "factor", 0.0);
            if (!(c.ropeScaleFactor >= 1.0 && c.ropeScaleFactor <= kMaxRopeFactor))
                s.fail(rp + "factor", "must be in [1, " + std::to_string(int(kMaxRopeFactor)) + "] for " + type + " scaling");
            if (type == "yarn") {
                // transformers 5's reading: `factor` as given (some 4.5x versions replaced it
                // with max_position_embeddings / original_max_position_embeddings).
                c.ropeOriginalContext = s.countOr(rp + "original_max_position_embeddings", c.contextLength);
                // transformers' attention_factor is the whole magnitude; the engine's
                // is a multiplier of YaRN's own 0.1 ln(factor) + 1.
                const double mscale = 0.1 * std::log(c.ropeScaleFactor) + 1.0;
                const double attention = s.numberOr(rp + "attention_factor", mscale);
                if (!(attention > 0.0)) s.fail(rp + "attention_factor", "must be positive");
                c.ropeAttnFactor = attention / mscale;
                if (s.numberOr(rp + "beta_fast", 32.0) != 32.0 || s.numberOr(rp + "beta_slow", 1.0) != 1.0) {
                    s.fail(rp + "beta_fast", "and beta_slow other than 32 and 1 are not supported");
                }
                if (s.find(rp + "mscale") || s.find(rp + "mscale_all_dim")) {
                    s.fail(rp + "mscale", "(DeepSeek's YaRN variant) is not supported");
                }
            }
        } else if (!type.empty()) {
            s.fail(rp + "rope_type", "'" + type + "' is not supported (llama3, linear, yarn and none are)");
        }
    }

    if (!(c.ropeTheta > 1.0 && c.ropeTheta <= 1e12))
    {
        char shown[32];
        std::snprintf(shown, sizeof shown, "%g", c.ropeTheta);
        f.fail("rope_theta", std::string("must be above 1 and at most 1e12, is ") + shown);
    }
    // Sliding-window attention (Mistral and Phi-3 whenever their config sets one, Qwen2/3
    // with use_sliding_window): KV Lens does not apply it yet, so LlamaModel refuses a
    // sequence that reaches past it (--sliding-window ignore attends over everything).
    // The field is checked whether or not a window is used.
    (void)f.countOr("sliding_window", 1);
    bool windowUsed = c.architecture == "mistral" || c.architecture == "phi3" || gemma
                          ? true
                          : f.flagOr("use_sliding_window", false);
    if (windowUsed && (c.architecture == "qwen2" || c.architecture == "qwen3")) {
        // Hugging Face slides only layers from max_window_layers on (default 28): none when that
        // is past the last layer; a window on some layers only is not supported.
        const int64_t from = f.countOr("max_window_layers", 28);
        if (from >= c.nLayers) {
            windowUsed = false;
        } else {
            f.fail("max_window_layers", "(" + std::to_string(from) + ", with use_sliding_window true) puts a sliding window on some of the " +
                                            std::to_string(c.nLayers) + " layers only, which KV Lens does not run");
        }
    }
    if (windowUsed) {
        const int64_t w = f.isNull("sliding_window") ? 0 : f.countOr("sliding_window", arch->window);
        if (w > 0 && w < c.contextLength) h.slidingWindow = w;
    }
    if (gemma) c.windowPeriod = windowPeriodOf(f, c.architecture, c.nLayers);
    if (c.windowPeriod == 1) {  // every layer global
        c.windowPeriod = 0;
        h.slidingWindow = 0;
    }
    c.slidingWindow = h.slidingWindow;
    if (const json* b = f.find("bos_token_id"); b && b->is_array())
        f.fail("bos_token_id", "must be one token id, is a list");
    const std::vector<int32_t> bos = tokenIds(f, "bos_token_id");
    h.bosId = bos.empty() ? -1 : bos[0];
    h.eosIds = tokenIds(f, "eos_token_id");
    try {
        c.validate(source);
    } catch (const Error&) {
        // validate() names GGUF keys; repeat its checks with config.json's names.
        if (c.nHeads % c.nKvHeads != 0) {
            f.fail("num_attention_heads", "(" + std::to_string(c.nHeads) +
                                              ") is not a multiple of num_key_value_heads (" +
                                              std::to_string(c.nKvHeads) + ")");
        }
        if (c.ropeDim <= 0 || c.ropeDim % 2 != 0) f.fail("partial_rotary_factor", "leaves an odd RoPE dimension");
        if (!(c.ropeTheta > 0.0)) f.fail("rope_theta", "must be positive");
        throw;
    }
    if (llama3) h.ropeFreqFactors = llama3(c);
    return h;
}

}  // namespace kvlens
