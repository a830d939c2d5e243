#include "support/HfFolderWriter.h"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "engine/gguf/GgufFile.h"
#include "support/GgufBuilder.h"

namespace kvlens::test {
namespace {

using json = nlohmann::json;

// Hugging Face's own pre-tokenizer regexes (the models' tokenizer.json files).
const char* kLlama3Regex =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
    "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const char* kQwen2Regex =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
    "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const std::vector<std::string> kDeepseekLlmRegexes = {
    "[\r\n]",
          "\\s?[A-Za-zµÀ-ÖØ-öø-ƺƼ-ƿǄ-ʓʕ-ʯͰ-ͳͶͷͻ-ͽͿΆΈ-ΊΌΎ-ΡΣ-ϵϷ-ҁҊ-ԯԱ-ՖႠ-ჅᎠ-Ᏽᏸ-ᏽᲐ-ᲺᲽ-"
          "Ჿᴀ-ᴫᵫ-ᵷᵹ-ᶚḀ-ἕἘ-Ἕἠ-ὅὈ-Ὅὐ-ὗὙὛὝὟ-ώᾀ-ᾴᾶ-ᾼιῂ-ῄῆ-ῌῐ-ΐῖ-Ίῠ-Ῥῲ-ῴῶ-ῼℂℇℊ-ℓℕℙ-ℝℤΩℨK-ℭℯ-ℴℹℼ-ℿⅅ-"
          "ⅉⅎↃↄⰀ-ⱻⱾ-ⳤⳫ-ⳮⳲⳳꙀ-ꙭꚀ-ꚛꜢ-ꝯꝱ-ꞇꞋ-ꞎꭰ-ꮿﬀ-ﬆﬓ-ﬗＡ-Ｚａ-ｚ𐐀-𐑏𐒰-𐓓𐓘-𐓻𐲀-"
          "𐲲𐳀-𐳲𑢠-𑣟𞤀-𞥃]+",
          "\\s?[!-/:-~！-／：-～‘-‟　-。]+", "\\s+$", "[一-龥ࠀ-一가-퟿]+", "\\p{N}+"};

json split(const std::string& regex) {
    return {{"type", "Split"}, {"pattern", {{"Regex", regex}}}, {"behavior", "Isolated"}, {"invert", false}};
}
json byteLevel(bool useRegex) {
    return {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", useRegex}};
}
json sequence(const std::vector<json>& parts) { return {{"type", "Sequence"}, {"pretokenizers", parts}}; }

bool among(const std::string& s, std::initializer_list<const char*> names) {
    for (const char* n : names)
        if (s == n) return true;
    return false;
}

// tokenizer.json's pre_tokenizer of each family, as the models' files have it.
json preTokenizerFor(const std::string& pre) {
    if (among(pre, {"gpt-2", "phi-2", "roberta-bpe", "mpt", "olmo"})) return byteLevel(true);
    if (among(pre, {"llama3", "llama-v3", "llama-bpe", "falcon3", "dbrx", "smaug-bpe"}))
        return sequence({split(kLlama3Regex), byteLevel(false)});
    if (pre == "qwen2") return sequence({split(kQwen2Regex), byteLevel(false)});
    if (pre == "deepseek-llm") {
        std::vector<json> parts;
        for (const std::string& r : kDeepseekLlmRegexes) parts.push_back(split(r));
        parts.push_back(byteLevel(false));
        return sequence(parts);
    }
    if (pre == "falcon") {
        return sequence({{{"type", "Punctuation"}, {"behavior", "Contiguous"}},
                         byteLevel(true),
                         {{"type", "Digits"}, {"individual_digits", false}},
                         split("[0-9][0-9][0-9]")});
    }
    if (pre == "starcoder") return sequence({{{"type", "Digits"}, {"individual_digits", true}}, byteLevel(true)});
    throw std::runtime_error("HfFolderWriter: no tokenizer.json pre_tokenizer for tokenizer.ggml.pre '" + pre + "'");
}

void varint(std::string& out, uint64_t v) {
    while (v >= 0x80) {
        out += static_cast<char>((v & 0x7F) | 0x80);
        v >>= 7;
    }
    out += static_cast<char>(v);
}
void tag(std::string& out, int field, int wire) { varint(out, (uint64_t(field) << 3) | uint64_t(wire)); }
void fieldVarint(std::string& out, int field, int64_t v) {
    tag(out, field, 0);
    varint(out, static_cast<uint64_t>(v));  // negative int32s: 10-byte two's complement, as protobuf writes them
}
void fieldBytes(std::string& out, int field, const std::string& bytes) {
    tag(out, field, 2);
    varint(out, bytes.size());
    out += bytes;
}
void fieldFloat(std::string& out, int field, float f) {
    tag(out, field, 5);
    char b[4];
    std::memcpy(b, &f, 4);
    out.append(b, 4);
}

int64_t idOr(const GgufFile& g, const std::string& key) {
    const GgufValue* v = g.find(key);
    return v ? v->i : -1;
}

std::string hfName(const std::string& gguf) {
    static const std::map<std::string, std::string> top = {{"token_embd.weight", "model.embed_tokens.weight"},
                                                           {"output_norm.weight", "model.norm.weight"},
                                                           {"output.weight", "lm_head.weight"}};
    if (auto it = top.find(gguf); it != top.end()) return it->second;
    static const std::map<std::string, std::string> layer = {
        {"attn_norm.weight", "input_layernorm.weight"},   {"attn_q.weight", "self_attn.q_proj.weight"},
        {"attn_k.weight", "self_attn.k_proj.weight"},     {"attn_v.weight", "self_attn.v_proj.weight"},
        {"attn_output.weight", "self_attn.o_proj.weight"}, {"attn_q.bias", "self_attn.q_proj.bias"},
        {"attn_k.bias", "self_attn.k_proj.bias"},         {"attn_v.bias", "self_attn.v_proj.bias"},
        {"attn_q_norm.weight", "self_attn.q_norm.weight"}, {"attn_k_norm.weight", "self_attn.k_norm.weight"},
        {"ffn_norm.weight", "post_attention_layernorm.weight"}, {"ffn_gate.weight", "mlp.gate_proj.weight"},
        {"ffn_up.weight", "mlp.up_proj.weight"},          {"ffn_down.weight", "mlp.down_proj.weight"},
        {"attn_qkv.weight", "self_attn.qkv_proj.weight"}};
    if (gguf.rfind("blk.", 0) == 0) {
        const size_t dot = gguf.find('.', 4);
        const std::string n = gguf.substr(4, dot - 4), rest = gguf.substr(dot + 1);
        if (auto it = layer.find(rest); it != layer.end()) return "model.layers." + n + "." + it->second;
    }
    throw std::runtime_error("HfFolderWriter: no Hugging Face name for tensor '" + gguf + "'");
}

// GGUF rows of a llama q/k matrix pair the rotated halves as adjacent rows
// (llama.cpp's convert permutes them); Hugging Face keeps them as halves.
std::vector<float> unpermute(const std::vector<float>& w, int64_t rows, int64_t cols, int64_t heads) {
    std::vector<float> out(w.size());
    const int64_t hd = rows / heads, half = hd / 2;
    for (int64_t h = 0; h < heads; ++h)
        for (int64_t i = 0; i < half; ++i)
            for (int64_t s = 0; s < 2; ++s) {
                const int64_t from = h * hd + 2 * i + s, to = h * hd + s * half + i;
                std::memcpy(&out[size_t(to * cols)], &w[size_t(from * cols)], size_t(cols) * sizeof(float));
            }
    return out;
}

}  // namespace

std::vector<uint8_t> encodeValues(const std::vector<float>& values, const std::string& dtype) {
    std::vector<uint8_t> out;
    if (dtype == "F32") {
        out.resize(values.size() * 4);
        std::memcpy(out.data(), values.data(), out.size());
        return out;
    }
    out.resize(values.size() * 2);
    for (size_t i = 0; i < values.size(); ++i) {
        const uint16_t h = dtype == "F16" ? floatToHalf(values[i]) : floatToBf16(values[i]);
        std::memcpy(&out[2 * i], &h, 2);
    }
    return out;
}

std::vector<uint8_t> buildSafetensors(const std::vector<SafetensorsEntry>& tensors, const std::string& metadataJson) {
    json header = json::object();
    if (!metadataJson.empty()) header["__metadata__"] = json::parse(metadataJson);
    uint64_t at = 0;
    for (const SafetensorsEntry& t : tensors) {
        header[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {at, at + t.bytes.size()}}};
        at += t.bytes.size();
    }
    std::string text = header.dump();
    while (text.size() % 8 != 0) text += ' ';
    std::vector<uint8_t> out(8);
    const uint64_t n = text.size();
    for (int i = 0; i < 8; ++i) out[size_t(i)] = static_cast<uint8_t>(n >> (8 * i));
    out.insert(out.end(), text.begin(), text.end());
    for (const SafetensorsEntry& t : tensors) out.insert(out.end(), t.bytes.begin(), t.bytes.end());
    return out;
}

void writeBytes(const std::string& path, const std::vector<uint8_t>& bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    if (!out) throw std::runtime_error("cannot write " + path);
}

void writeText(const std::string& path, const std::string& text) {
    writeBytes(path, std::vector<uint8_t>(text.begin(), text.end()));
}

std::string tokenizerJsonFromGguf(const GgufFile& g) {
    const std::vector<std::string> tokens = g.getStringArray("tokenizer.ggml.tokens");
    const std::vector<double> types = g.getNumberArray("tokenizer.ggml.token_type");
    const std::string pre = g.getStringOr("tokenizer.ggml.pre", "default");
    json vocab = json::object();
    json added = json::array();
    for (size_t i = 0; i < tokens.size(); ++i) {
        const int type = static_cast<int>(types[i]);
        if (type == 1 || type == 0) {
            vocab[tokens[i]] = i;
        } else if (type == 3 || type == 4) {
            added.push_back({{"id", i}, {"content", tokens[i]}, {"single_word", false}, {"lstrip", false},
                             {"rstrip", false}, {"normalized", type == 4}, {"special", type == 3}});
        }
    }
    const bool llama3 = among(pre, {"llama3", "llama-v3", "llama-bpe", "falcon3"});
    json model = {{"type", "BPE"},          {"dropout", nullptr}, {"unk_token", nullptr},
                  {"continuing_subword_prefix", nullptr}, {"end_of_word_suffix", nullptr},
                  {"fuse_unk", false},      {"byte_fallback", false}, {"ignore_merges", llama3},
                  {"vocab", vocab},         {"merges", g.getStringArray("tokenizer.ggml.merges")}};
    json j = {{"version", "1.0"},
              {"truncation", nullptr},
              {"padding", nullptr},
              {"added_tokens", added},
              {"normalizer", pre == "qwen2" ? json{{"type", "NFC"}} : json(nullptr)},
              {"pre_tokenizer", preTokenizerFor(pre)},
              {"post_processor", byteLevel(false)},
              {"decoder", {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}, {"use_regex", true}}},
              {"model", model}};
    const int64_t bos = idOr(g, "tokenizer.ggml.bos_token_id");
    if (llama3 && bos >= 0) {
        json special = json::object();
        special["SpecialToken"] = {{"id", tokens[size_t(bos)]}, {"type_id", 0}};
        json sequenceA = json::object();
        sequenceA["Sequence"] = {{"id", "A"}, {"type_id", 0}};
        json post = json::object();
        post["type"] = "TemplateProcessing";
        post["single"] = json::array({special, sequenceA});
        j["post_processor"] = post;
    }
    return j.dump();
}

std::string sentencePieceTokenizerJsonFromGguf(const GgufFile& g, SentencePieceJsonStyle style) {
    const std::vector<std::string> tokens = g.getStringArray("tokenizer.ggml.tokens");
    const std::vector<double> scores = g.getNumberArray("tokenizer.ggml.scores");
    const std::vector<double> types = g.getNumberArray("tokenizer.ggml.token_type");
    size_t n = 0;  // the model's own pieces, as in sentencePieceModelFromGguf
    for (size_t i = 0; i < tokens.size(); ++i)
        if (types[i] == 1 || types[i] == 6) n = i + 1;
    std::map<std::string, int64_t> ids;
    json vocab = json::object();
    for (size_t i = 0; i < n; ++i) {
        vocab[tokens[i]] = i;
        ids.emplace(tokens[i], int64_t(i));
    }
    // SentencePieceExtractor: each piece split in two pieces at every character,
    // a piece's splits by the ids of their parts, then all by score, highest first (stable).
    struct Merge {
        std::string left, right;
        double score;
    };
    std::vector<Merge> merges;
    for (size_t i = 0; i < n; ++i) {
        const std::string& piece = tokens[i];
        std::vector<Merge> local;
        for (size_t at = 1; at < piece.size(); ++at) {
            if ((static_cast<unsigned char>(piece[at]) & 0xC0) == 0x80) continue;  // inside a character
            const auto l = ids.find(piece.substr(0, at)), r = ids.find(piece.substr(at));
            if (l != ids.end() && r != ids.end()) local.push_back({l->first, r->first, scores[i]});
        }
        std::stable_sort(local.begin(), local.end(), [&](const Merge& x, const Merge& y) {
            return std::make_pair(ids[x.left], ids[x.right]) < std::make_pair(ids[y.left], ids[y.right]);
        });
        merges.insert(merges.end(), local.begin(), local.end());
    }
    std::stable_sort(merges.begin(), merges.end(), [](const Merge& x, const Merge& y) { return x.score > y.score; });
    json mergeList = json::array();
    for (const Merge& m : merges) mergeList.push_back(json::array({m.left, m.right}));

    std::string name = g.getStringOr("general.name", "") + g.getStringOr("general.architecture", "");
    for (char& c : name) c = char(std::tolower(static_cast<unsigned char>(c)));
    const bool phi3 = name.find("phi3") != std::string::npos || name.find("phi-3") != std::string::npos;
    json added = json::array();
    for (size_t i = 0; i < tokens.size(); ++i) {
        const int type = static_cast<int>(types[i]);
        if (type != 2 && type != 3 && type != 4 && type != 5) continue;
        const bool special = type != 4;
        // Phi-3's file: every added token but these three strips the whitespace after it.
        const bool rstrip = phi3 && type != 5 && tokens[i] != "<unk>" && tokens[i] != "<s>" && tokens[i] != "<|endoftext|>";
        added.push_back({{"id", i}, {"content", tokens[i]}, {"single_word", false}, {"lstrip", false},
                         {"rstrip", rstrip}, {"normalized", false}, {"special", special}});
    }
    const int64_t unk = idOr(g, "tokenizer.ggml.unknown_token_id");
    json model = {{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", unk >= 0 ? json(tokens[size_t(unk)]) : json(nullptr)},
                  {"continuing_subword_prefix", nullptr}, {"end_of_word_suffix", nullptr}, {"fuse_unk", true},
                  {"byte_fallback", true}, {"ignore_merges", false}, {"vocab", vocab}, {"merges", mergeList}};
    auto replace = [](const std::string& from, const std::string& to) {
        return json{{"type", "Replace"}, {"pattern", {{"String", from}}}, {"content", to}};
    };
    const std::string marker = "\xE2\x96\x81";
    json j = {{"version", "1.0"}, {"truncation", nullptr}, {"padding", nullptr}, {"added_tokens", added}, {"model", model}};
    if (style == SentencePieceJsonStyle::Legacy) {
        j["normalizer"] = {{"type", "Sequence"},
                           {"normalizers", json::array({json{{"type", "Prepend"}, {"prepend", marker}}, replace(" ", marker)})}};
        j["pre_tokenizer"] = nullptr;
        j["decoder"] = {{"type", "Sequence"},
                        {"decoders", json::array({replace(marker, " "), json{{"type", "ByteFallback"}}, json{{"type", "Fuse"}},
                                                  json{{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}}})}};
    } else {
        const json metaspace = {{"type", "Metaspace"}, {"replacement", marker}, {"prepend_scheme", "first"}, {"split", false}};
        j["normalizer"] = nullptr;
        j["pre_tokenizer"] = metaspace;
        j["decoder"] = metaspace;
    }
    const int64_t bos = idOr(g, "tokenizer.ggml.bos_token_id");
    if (bos >= 0) {
        json special = json::object();
        special["SpecialToken"] = {{"id", tokens[size_t(bos)]}, {"type_id", 0}};
        json sequenceA = json::object();
        sequenceA["Sequence"] = {{"id", "A"}, {"type_id", 0}};
        j["post_processor"] = {{"type", "TemplateProcessing"}, {"single", json::array({special, sequenceA})}};
    }
    return j.dump();
}

std::string sentencePieceModelFromGguf(const GgufFile& g) {
    const std::vector<std::string> tokens = g.getStringArray("tokenizer.ggml.tokens");
    const std::vector<double> scores = g.getNumberArray("tokenizer.ggml.scores");
    const std::vector<double> types = g.getNumberArray("tokenizer.ggml.token_type");
    // The model's own pieces: up to the last normal or byte one (what follows, such as
    // Phi-3's <|endoftext|> and padding, is tokenizer.json's added_tokens in a real
    // folder); the unknown piece typed UNKNOWN, as SentencePiece requires exactly one.
    const int64_t unk = idOr(g, "tokenizer.ggml.unknown_token_id");
    size_t n = 0;
    for (size_t i = 0; i < tokens.size(); ++i)
        if (types[i] == 1 || types[i] == 6) n = i + 1;
    std::string model;
    for (size_t i = 0; i < n; ++i) {
        int64_t type = static_cast<int64_t>(types[i]);
        if (type == 0) type = 1;
        if (int64_t(i) == unk) {
            type = 2;
        } else if (type == 2) {
            type = 5;
        }
        std::string piece;
        fieldBytes(piece, 1, tokens[i]);
        fieldFloat(piece, 2, static_cast<float>(scores[i]));
        fieldVarint(piece, 3, type);
        fieldBytes(model, 1, piece);
    }
    std::string trainer;
    fieldVarint(trainer, 3, 2);  // model_type: BPE
    fieldVarint(trainer, 4, static_cast<int64_t>(n));
    fieldVarint(trainer, 35, 1);  // byte_fallback
    fieldVarint(trainer, 40, idOr(g, "tokenizer.ggml.unknown_token_id"));
    fieldVarint(trainer, 41, idOr(g, "tokenizer.ggml.bos_token_id"));
    const int64_t eos = idOr(g, "tokenizer.ggml.eos_token_id");
    fieldVarint(trainer, 42, eos < int64_t(n) ? eos : -1);
    fieldVarint(trainer, 43, -1);  // pad_id
    fieldBytes(model, 2, trainer);
    std::string normalizer;
    fieldBytes(normalizer, 1, "identity");
    fieldVarint(normalizer, 3, g.getBoolOr("tokenizer.ggml.add_space_prefix", true) ? 1 : 0);
    fieldVarint(normalizer, 4, 0);  // remove_extra_whitespaces
    fieldVarint(normalizer, 5, 1);  // escape_whitespaces
    fieldBytes(model, 3, normalizer);
    return model;
}

void writeHfFolder(const GgufFile& g, const std::string& dir, const HfWriteOptions& o) {
    ::mkdir(dir.c_str(), 0755);
    const std::string arch = g.getString("general.architecture");
    static const std::map<std::string, std::string> classes = {{"llama", "LlamaForCausalLM"},
                                                               {"mistral", "MistralForCausalLM"},
                                                               {"qwen2", "Qwen2ForCausalLM"},
                                                               {"qwen3", "Qwen3ForCausalLM"},
                                                               {"phi3", "Phi3ForCausalLM"},
                                                               {"gemma2", "Gemma2ForCausalLM"}};
    if (!classes.count(arch)) throw std::runtime_error("HfFolderWriter: architecture " + arch);
    const std::string p = arch + ".";
    const int64_t heads = static_cast<int64_t>(g.getUInt(p + "attention.head_count"));
    const int64_t kvHeads = static_cast<int64_t>(g.getUIntOr(p + "attention.head_count_kv", uint64_t(heads)));
    const int64_t embed = static_cast<int64_t>(g.getUInt(p + "embedding_length"));
    const std::vector<std::string> tokens = g.getStringArray("tokenizer.ggml.tokens");
    json config = {{"architectures", {classes.at(arch)}},
                   {"model_type", arch},
                   {"hidden_size", embed},
                   {"intermediate_size", g.getUInt(p + "feed_forward_length")},
                   {"num_hidden_layers", g.getUInt(p + "block_count")},
                   {"num_attention_heads", heads},
                   {"num_key_value_heads", kvHeads},
                   {"head_dim", g.getUIntOr(p + "attention.key_length", uint64_t(embed / heads))},
                   {"max_position_embeddings", g.getUIntOr(p + "context_length", 2048)},
                   {"rms_norm_eps", g.getFloatOr(p + "attention.layer_norm_rms_epsilon", 1e-5)},
                   {"rope_theta", g.getFloatOr(p + "rope.freq_base", 10000.0)},
                   {"vocab_size", tokens.size()},
                   {"hidden_act", "silu"},
                   {"tie_word_embeddings", g.findTensor("output.weight") == nullptr},
                   {"torch_dtype", o.dtype == "F32" ? "float32" : o.dtype == "F16" ? "float16" : "bfloat16"}};
    if (arch == "qwen2") config["use_sliding_window"] = false;
    if (arch == "phi3") {
        const int64_t window = static_cast<int64_t>(g.getUIntOr(p + "attention.sliding_window", 0));
        config["sliding_window"] = window > 0 ? json(window) : json(nullptr);
        const int64_t headDim = config["head_dim"].get<int64_t>();
        const int64_t ropeDim = static_cast<int64_t>(g.getUIntOr(p + "rope.dimension_count", uint64_t(headDim)));
        if (ropeDim != headDim) config["partial_rotary_factor"] = double(ropeDim) / double(headDim);
    }
    if (arch == "gemma2") {
        // As transformers' Gemma2Config: the query scale llama.cpp derives from the layer count.
        const int64_t layers = config["num_hidden_layers"].get<int64_t>();
        config["query_pre_attn_scalar"] = layers == 46 ? embed / heads : config["head_dim"].get<int64_t>();
        config["attn_logit_softcapping"] = g.getFloatOr(p + "attn_logit_softcapping", 50.0);
        config["final_logit_softcapping"] = g.getFloatOr(p + "final_logit_softcapping", 30.0);
        config["sliding_window"] = g.getUIntOr(p + "attention.sliding_window", 4096);
        config["hidden_act"] = "gelu_pytorch_tanh";
        config["hidden_activation"] = "gelu_pytorch_tanh";
    }
    if (g.findTensor("rope_freqs.weight")) {
        config["rope_scaling"] = {{"rope_type", "llama3"},
                                  {"factor", o.llama3.factor},
                                  {"low_freq_factor", o.llama3.lowFreqFactor},
                                  {"high_freq_factor", o.llama3.highFreqFactor},
                                  {"original_max_position_embeddings", o.llama3.originalContext}};
    }
    const std::string scaling = g.getStringOr(p + "rope.scaling.type", "none");
    if (scaling == "linear" || scaling == "yarn") {
        const double factor = g.getFloatOr(p + "rope.scaling.factor", 1.0);
        json s = {{"rope_type", scaling}, {"factor", factor}};
        if (scaling == "yarn") {
            s["original_max_position_embeddings"] = g.getUIntOr(p + "rope.scaling.original_context_length", 0);
            s["attention_factor"] = g.getFloatOr(p + "rope.scaling.attn_factor", 1.0) * (0.1 * std::log(factor) + 1.0);
        }
        config["rope_scaling"] = s;
    }
    const int64_t bos = idOr(g, "tokenizer.ggml.bos_token_id"), eos = idOr(g, "tokenizer.ggml.eos_token_id");
    if (bos >= 0) config["bos_token_id"] = bos;
    if (eos >= 0) config["eos_token_id"] = eos;
    writeText(dir + "/config.json", config.dump(2));

    // Tensors, in the GGUF's order, renamed and reshaped to torch order.
    std::vector<SafetensorsEntry> entries;
    const bool permuted = arch == "llama" || arch == "mistral";
    for (const GgufTensorInfo& t : g.tensors()) {
        if (t.name == "rope_freqs.weight") continue;
        std::vector<float> values = g.dequantize(t);
        std::vector<int64_t> shape(t.shape.rbegin(), t.shape.rend());
        while (shape.size() > 1 && shape.front() == 1) shape.erase(shape.begin());
        const bool q = t.name.find(".attn_q.weight") != std::string::npos;
        const bool k = t.name.find(".attn_k.weight") != std::string::npos;
        if (permuted && (q || k)) values = unpermute(values, shape[0], shape[1], q ? heads : kvHeads);
        const std::string dtype = shape.size() >= 2 ? o.dtype : "F32";
        std::string name;
        if (arch == "gemma2") {
            // Gemma's names for its four norms, and its (1 + w) stored as w.
            static const std::map<std::string, std::string> norms = {
                {".attn_norm.weight", ".input_layernorm.weight"},
                {".post_attention_norm.weight", ".post_attention_layernorm.weight"},
                {".ffn_norm.weight", ".pre_feedforward_layernorm.weight"},
                {".post_ffw_norm.weight", ".post_feedforward_layernorm.weight"}};
            for (const auto& [from, to] : norms) {
                if (t.name.size() > from.size() && t.name.compare(t.name.size() - from.size(), from.size(), from) == 0)
                    name = "model.layers." + t.name.substr(4, t.name.find('.', 4) - 4) + to;
            }
            if (t.name.find("norm.weight") != std::string::npos)
                for (float& v : values) v -= 1.0f;
        }
        if (name.empty()) name = hfName(t.name);
        if (arch == "phi3" && name.size() > 18 && name.compare(name.size() - 18, 18, "mlp.up_proj.weight") == 0) {
            name = name.substr(0, name.size() - 18) + "mlp.gate_up_proj.weight";  // Phi-3's ffn_up is [gate | up]
        }
        entries.push_back({name, dtype, shape, encodeValues(values, dtype)});
    }
    if (o.shards <= 1) {
        writeBytes(dir + "/model.safetensors", buildSafetensors(entries, "{\"format\": \"pt\"}"));
    } else {
        json map = json::object();
        const size_t per = (entries.size() + size_t(o.shards) - 1) / size_t(o.shards);
        for (int s = 0; s < o.shards; ++s) {
            char name[64];
            std::snprintf(name, sizeof name, "model-%05d-of-%05d.safetensors", s + 1, o.shards);
            std::vector<SafetensorsEntry> part;
            for (size_t i = size_t(s) * per; i < std::min(entries.size(), size_t(s + 1) * per); ++i) {
                part.push_back(entries[i]);
                map[entries[i].name] = name;
            }
            writeBytes(dir + "/" + name, buildSafetensors(part, "{\"format\": \"pt\"}"));
        }
        writeText(dir + "/model.safetensors.index.json", json{{"metadata", {{"total_size", 0}}}, {"weight_map", map}}.dump(2));
    }

    // The tokenizer and what goes with it.
    const std::string kind = g.getString("tokenizer.ggml.model");
    json tokConfig = {{"tokenizer_class", kind == "gpt2" ? "PreTrainedTokenizerFast" : "LlamaTokenizer"}};
    if (bos >= 0) tokConfig["bos_token"] = tokens[size_t(bos)];
    if (eos >= 0) tokConfig["eos_token"] = {{"content", tokens[size_t(eos)]}, {"special", true}};
    if (g.has("tokenizer.ggml.add_bos_token")) tokConfig["add_bos_token"] = g.getBool("tokenizer.ggml.add_bos_token");
    if (g.has("tokenizer.chat_template")) tokConfig["chat_template"] = g.getString("tokenizer.chat_template");
    if (kind == "gpt2") {
        writeText(dir + "/tokenizer.json", tokenizerJsonFromGguf(g));
    } else if (o.sentencePieceJson) {
        writeText(dir + "/tokenizer.json", sentencePieceTokenizerJsonFromGguf(g));
    } else if (o.sentencePiece) {
        const std::string proto = sentencePieceModelFromGguf(g);
        writeBytes(dir + "/tokenizer.model", std::vector<uint8_t>(proto.begin(), proto.end()));
    }
    writeText(dir + "/tokenizer_config.json", tokConfig.dump(2));
    json gen = json::object();
    if (bos >= 0) gen["bos_token_id"] = bos;
    if (eos >= 0) gen["eos_token_id"] = eos;
    writeText(dir + "/generation_config.json", gen.dump(2));
}

void writeDenseGguf(const GgufFile& g, const std::string& path, const std::string& type) {
    GgufBuilder b;
    for (const auto& [key, value] : g.metadata()) {
        if (key == "general.alignment") continue;
        b.addValue(key, value);
    }
    for (const GgufTensorInfo& t : g.tensors()) {
        const std::vector<float> values = g.dequantize(t);
        size_t dims = 0;
        for (int64_t d : t.shape) dims += d > 1 ? 1 : 0;
        if (dims >= 2 && type == "BF16") {
            b.addTensorBF16(t.name, t.shape, values);
        } else {
            b.addTensorF32(t.name, t.shape, values);
        }
    }
    b.writeFile(path);
}

}  // namespace kvlens::test
