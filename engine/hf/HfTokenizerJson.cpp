// tokenizer.json (byte-level BPE) -> BpeVocab, each refusal naming its field.
#include "engine/hf/HfTokenizerJson.h"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

#include "core/Error.h"
#include "engine/hf/Quoted.h"
#include "engine/hf/TokenizerJsonFields.h"
#include "engine/tokenizer/PreTokenizer.h"

namespace kvlens {
namespace {

using json = nlohmann::json;
using Fields = TokenizerJsonFields;

const char* kGpt2Regex = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)";
// Hugging Face's punctuation: ASCII punctuation or a Unicode P* character.
const char* kPunctuation = "[\\p{P}!-/:-@\\[-`{-~]";

std::string textField(const json& o, const char* key, const std::string& fallback, const std::string& field,
                      const std::string& source) {
    return Fields::text(o, key, fallback, field, source);
}
bool flagField(const json& o, const char* key, bool fallback, const std::string& field, const std::string& source) {
    return Fields::flag(o, key, fallback, field, source);
}

// A literal string as a PCRE2 pattern.
std::string escapeRegex(const std::string& s) {
    std::string out;
    for (char c : s) {
        if (std::string("\\^$.|?*+()[]{}-/").find(c) != std::string::npos) out += '\\';
        out += c;
    }
    return out;
}

class PreTokenizerJson {
public:
    explicit PreTokenizerJson(std::string source) : source_(std::move(source)) {}

    void add(const json& p, const std::string& field) {
        if (p.is_null()) return;
        if (!p.is_object() || !p.contains("type") || !p["type"].is_string()) {
            fail(field, "is not a pre-tokenizer object with a type");
        }
        const std::string type = p["type"].get<std::string>();
        parts_.push_back(type);
        if (type == "Sequence") {
            const auto list = p.find("pretokenizers");
            if (list == p.end() || !list->is_array()) fail(field + ".pretokenizers", "is not a list");
            for (size_t i = 0; i < list->size(); ++i) {
                add((*list)[i], field + ".pretokenizers[" + std::to_string(i) + "]");
            }
            parts_.erase(std::find(parts_.begin(), parts_.end(), "Sequence"));
        } else if (type == "Split") {
            const std::string behavior = textField(p, "behavior", "Isolated", field, source_);
            if (behavior != "Isolated") {
                fail(field + ".behavior", "is " + quotedText(behavior) + "; KV Lens splits with Isolated only");
            }
            if (flagField(p, "invert", false, field, source_)) fail(field + ".invert", "is true; inverted splits are not supported");
            const auto pattern = p.find("pattern");
            if (pattern == p.end() || !pattern->is_object()) fail(field + ".pattern", "is missing");
            if (pattern->contains("Regex") && (*pattern)["Regex"].is_string()) {
                steps_.push_back({(*pattern)["Regex"].get<std::string>(), afterByteLevel_, field + ".pattern.Regex"});
            } else if (pattern->contains("String") && (*pattern)["String"].is_string()) {
                steps_.push_back({escapeRegex((*pattern)["String"].get<std::string>()), afterByteLevel_, field + ".pattern.String"});
            } else {
                fail(field + ".pattern", "has neither a Regex nor a String");
            }
        } else if (type == "ByteLevel") {
            if (flagField(p, "add_prefix_space", false, field, source_)) {
                fail(field + ".add_prefix_space", "is true; KV Lens does not prepend a space");
            }
            if (flagField(p, "use_regex", true, field, source_)) steps_.push_back({kGpt2Regex, afterByteLevel_, field});
            afterByteLevel_ = true;
        } else if (type == "Digits") {
            // Rust's char::is_numeric: every Unicode number (StarCoder's ids split "½" off so).
            steps_.push_back({flagField(p, "individual_digits", false, field, source_) ? "\\p{N}" : "\\p{N}+",
                              afterByteLevel_, field});
        } else if (type == "Punctuation") {
            const std::string behavior = textField(p, "behavior", "Isolated", field, source_);
            if (behavior == "Isolated") {
                steps_.push_back({kPunctuation, afterByteLevel_, field});
            } else if (behavior == "Contiguous") {
                steps_.push_back({std::string(kPunctuation) + "+", afterByteLevel_, field});
            } else {
                fail(field + ".behavior", "is " + quotedText(behavior) + "; Isolated and Contiguous are supported");
            }
        } else if (type == "Metaspace") {
            fail(field, "is Metaspace: a SentencePiece-style tokenizer, not byte-level");
        } else {
            fail(field, "has type " + quotedText(type) +
                            ", which KV Lens does not run (Split, ByteLevel, Digits, Punctuation, Sequence)");
        }
    }

    const std::vector<PreTokenizer::Step>& steps() const { return steps_; }
    std::string describe() const {
        std::string s;
        for (const std::string& p : parts_) s += (s.empty() ? "" : ", ") + p;
        return s.empty() ? "none" : s;
    }

private:
    [[noreturn]] void fail(const std::string& field, const std::string& what) const {
        throw Error(source_ + ": " + field + " " + what);
    }
    std::string source_;
    std::vector<PreTokenizer::Step> steps_;
    bool afterByteLevel_ = false;  // a ByteLevel step came before
    std::vector<std::string> parts_;
};

// Whether normalizer `n` is NFC (or nothing); throws naming other normalizers.
bool nfcNormalizer(const json& n, const std::string& field, const std::string& source) {
    if (n.is_null()) return false;
    if (!n.is_object() || !n.contains("type") || !n["type"].is_string()) {
        throw Error(source + ": " + field + " is not a normalizer object with a type");
    }
    const std::string type = n["type"].get<std::string>();
    if (type == "NFC") return true;
    if (type == "Sequence") {
        bool nfc = false;
        const auto list = n.find("normalizers");
        if (list == n.end() || !list->is_array()) throw Error(source + ": " + field + ".normalizers is not a list");
        for (size_t i = 0; i < list->size(); ++i) {
            nfc = nfcNormalizer((*list)[i], field + ".normalizers[" + std::to_string(i) + "]", source) || nfc;
        }
        return nfc;
    }
    throw Error(source + ": " + field + " has type " + quotedText(type) + ", which KV Lens does not apply (NFC is supported)" +
                (type == "Prepend" || type == "Replace" ? "; a SentencePiece-style tokenizer, not byte-level" : ""));
}

}  // namespace

bool HfTokenizerJson::sentencePieceStyle(const std::string& text) {
    json j;
    try {
        j = json::parse(text);
    } catch (const json::exception&) {
        return false;
    }
    if (!j.is_object()) return false;
    const auto model = j.find("model");
    if (model != j.end() && model->is_object() && model->contains("byte_fallback") &&
        (*model)["byte_fallback"].is_boolean() && (*model)["byte_fallback"].get<bool>()) {
        return true;
    }
    const std::string dumped = j.value("pre_tokenizer", json()).dump() + j.value("normalizer", json()).dump();
    return dumped.find("\"Metaspace\"") != std::string::npos || dumped.find("\"Prepend\"") != std::string::npos;
}

std::string HfTokenizerJson::describe(const std::string& text) {
    const json j = Fields::parseObject(text, "tokenizer.json");
    PreTokenizerJson pre("tokenizer.json");
    pre.add(j.value("pre_tokenizer", json()), "pre_tokenizer");
    return "byte-level BPE, pre-tokenizer " + pre.describe() +
           (nfcNormalizer(j.value("normalizer", json()), "normalizer", "tokenizer.json") ? ", NFC" : "");
}

std::unique_ptr<BpeTokenizer> HfTokenizerJson::parse(const std::string& text, const std::string& source,
                                                     const Extras& extras) {
    const json j = Fields::parseObject(text, source);
    auto fail = [&](const std::string& field, const std::string& what) -> void {
        throw Error(source + ": " + field + " " + what);
    };
    const json& model = Fields::bpeModel(j, source);
    if (model.contains("byte_fallback") && model["byte_fallback"].is_boolean() && model["byte_fallback"].get<bool>()) {
        fail("model.byte_fallback", "is true: a SentencePiece-style BPE, not byte-level");
    }
    const Fields::Vocabulary vocabulary = Fields::vocabulary(j, model, source);
    const auto& byId = vocabulary.byId;

    BpeVocab v;
    const int64_t n = std::max<int64_t>(byId.rbegin()->first + 1, extras.vocabSize);
    v.tokens.resize(static_cast<size_t>(n));
    v.types.assign(static_cast<size_t>(n), LlamaTokenType::Unused);
    for (int64_t i = 0; i < n; ++i) v.tokens[size_t(i)] = "[PAD" + std::to_string(i) + "]";
    for (auto& [id, entry] : byId) {
        v.tokens[size_t(id)] = entry.first;
        v.types[size_t(id)] = entry.second;
    }
    for (const auto& [a, b] : Fields::merges(model, source)) v.merges.push_back(a + " " + b);

    v.nfc = nfcNormalizer(j.value("normalizer", json()), "normalizer", source);
    PreTokenizerJson pre(source);
    pre.add(j.value("pre_tokenizer", json()), "pre_tokenizer");
    const bool ignoreMerges = flagField(model, "ignore_merges", false, "model", source);

    auto idOf = [&](const std::string& token, const std::string& field) {
        return Fields::idOf(vocabulary, token, field, source);
    };
    v.bosId = idOf(extras.bosToken, "tokenizer_config.json's bos_token");
    v.eosId = idOf(extras.eosToken, "tokenizer_config.json's eos_token");
    for (int32_t id : extras.endIds) {
        if (id >= n) {
            throw Error(source + ": EOS id " + std::to_string(id) + " (generation_config.json / config.json) is outside the vocabulary of " +
                        std::to_string(n));
        }
        v.endIds.push_back(id);
    }
    if (v.eosId < 0 && !extras.endIds.empty()) v.eosId = extras.endIds[0];
    const std::string lead = Fields::leadingSpecial(j.value("post_processor", json()));
    if (!lead.empty() && v.bosId < 0) v.bosId = idOf(lead, "post_processor's special token");
    v.addBos = extras.addBos >= 0 ? extras.addBos : !lead.empty() ? 1 : 0;
    v.preTokenizer = PreTokenizer::fromSteps(source, pre.steps(), ignoreMerges, v.addBos == 1);
    return std::make_unique<BpeTokenizer>(std::move(v), source);
}

}  // namespace kvlens
