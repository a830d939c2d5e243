// tokenizer.json fields both readers share, each refusal naming its field.
#include "engine/hf/TokenizerJsonFields.h"

#include "core/Error.h"
#include "engine/hf/Quoted.h"

namespace kvlens {

using json = nlohmann::json;

json TokenizerJsonFields::parseObject(const std::string& text, const std::string& source) {
    try {
        json j = json::parse(text);
        if (!j.is_object()) throw Error(source + ": not a JSON object");
        return j;
    } catch (const json::exception& e) {
        std::string what = e.what();
        if (const size_t p = what.find("] "); p != std::string::npos) what = what.substr(p + 2);
        throw Error(source + ": not valid JSON: " + what);
    }
}

std::string TokenizerJsonFields::text(const json& o, const char* key, const std::string& fallback,
                                      const std::string& field, const std::string& source) {
    const auto it = o.find(key);
    if (it == o.end() || it->is_null()) return fallback;
    if (!it->is_string()) throw Error(source + ": " + field + "." + key + " is not a string");
    return it->get<std::string>();
}

bool TokenizerJsonFields::flag(const json& o, const char* key, bool fallback, const std::string& field,
                               const std::string& source) {
    const auto it = o.find(key);
    if (it == o.end() || it->is_null()) return fallback;
    if (!it->is_boolean()) throw Error(source + ": " + field + "." + key + " is not true or false");
    return it->get<bool>();
}

const json& TokenizerJsonFields::bpeModel(const json& root, const std::string& source) {
    auto fail = [&](const std::string& field, const std::string& what) -> void {
        throw Error(source + ": " + field + " " + what);
    };
    const auto modelIt = root.find("model");
    if (modelIt == root.end() || !modelIt->is_object()) fail("model", "is missing");
    const json& model = *modelIt;
    const std::string type = text(model, "type", "BPE", "model", source);
    if (type != "BPE") {
        fail("model.type", "is " + quotedText(type) + "; KV Lens reads BPE tokenizer.json files" +
                               (type == "Unigram" ? " (a Unigram model through its tokenizer.model)" : ""));
    }
    if (model.contains("dropout") && !model["dropout"].is_null()) fail("model.dropout", "is set; BPE dropout is not supported");
    for (const char* f : {"continuing_subword_prefix", "end_of_word_suffix"}) {
        if (model.contains(f) && model[f].is_string() && !model[f].get<std::string>().empty()) {
            fail(std::string("model.") + f, "is set; KV Lens reads BPE without affixes");
        }
    }
    return model;
}

TokenizerJsonFields::Vocabulary TokenizerJsonFields::vocabulary(const json& root, const json& model,
                                                                const std::string& source) {
    auto fail = [&](const std::string& field, const std::string& what) -> void {
        throw Error(source + ": " + field + " " + what);
    };
    const auto vocabIt = model.find("vocab");
    if (vocabIt == model.end() || !vocabIt->is_object()) fail("model.vocab", "is missing or not an object");
    auto checkId = [&](const json& id, const std::string& field) -> int64_t {
        if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= kMaxVocab) {
            fail(field, "is not a token id below " + std::to_string(kMaxVocab) + ": " + id.dump());
        }
        return id.get<int64_t>();
    };
    // Hugging Face's loader refuses an empty vocabulary (every text would be BOS alone).
    if (vocabIt->empty()) fail("model.vocab", "is empty");
    Vocabulary v;
    for (auto it = vocabIt->begin(); it != vocabIt->end(); ++it) {
        const int64_t id = checkId(it.value(), "model.vocab entry " + quotedText(it.key()));
        if (!v.byId.emplace(id, std::make_pair(it.key(), LlamaTokenType::Normal)).second) {
            fail("model.vocab", "gives id " + std::to_string(id) + " to both " + quotedText(v.byId[id].first) +
                                    " and " + quotedText(it.key()));
        }
    }
    if (const auto added = root.find("added_tokens"); added != root.end() && !added->is_null()) {
        if (!added->is_array()) fail("added_tokens", "is not a list");
        for (size_t i = 0; i < added->size(); ++i) {
            const json& a = (*added)[i];
            const std::string field = "added_tokens[" + std::to_string(i) + "]";
            if (!a.is_object() || !a.contains("id") || !a.contains("content") || !a["content"].is_string()) {
                fail(field, "has no id and content");
            }
            AddedToken t;
            t.id = checkId(a["id"], field + ".id");
            t.content = a["content"].get<std::string>();
            t.special = flag(a, "special", false, field, source);
            t.lstrip = flag(a, "lstrip", false, field, source);
            t.rstrip = flag(a, "rstrip", false, field, source);
            t.normalized = flag(a, "normalized", !t.special, field, source);
            if (flag(a, "single_word", false, field, source)) fail(field + ".single_word", "is true; KV Lens does not match single-word tokens");
            v.byId[t.id] = {t.content, t.special ? LlamaTokenType::Control : LlamaTokenType::UserDefined};
            v.added.push_back(std::move(t));
        }
    }
    return v;
}

std::vector<std::pair<std::string, std::string>> TokenizerJsonFields::merges(const json& model,
                                                                             const std::string& source) {
    const auto mergesIt = model.find("merges");
    if (mergesIt == model.end() || !mergesIt->is_array()) throw Error(source + ": model.merges is missing or not a list");
    const json& vocab = model["vocab"];
    std::vector<std::pair<std::string, std::string>> out;
    out.reserve(mergesIt->size());
    // Each merge's two parts and what they make are tokens of model.vocab, as Hugging
    // Face's BPE loader demands (MergeTokenOutOfVocabulary): a merge into an unknown token
    // would change how words split.
    for (size_t i = 0; i < mergesIt->size(); ++i) {
        const json& m = (*mergesIt)[i];
        const std::string field = "model.merges[" + std::to_string(i) + "]";
        std::string a, b;
        if (m.is_string()) {
            const std::string t = m.get<std::string>();
            const size_t space = t.find(' ');
            if (space == std::string::npos || t.find(' ', space + 1) != std::string::npos) {
                throw Error(source + ": " + field + " " + quotedText(t) + " is not two tokens parted by one space");
            }
            a = t.substr(0, space);
            b = t.substr(space + 1);
        } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
            a = m[0].get<std::string>();
            b = m[1].get<std::string>();
        } else {
            throw Error(source + ": " + field + " is neither \"a b\" nor [\"a\", \"b\"]");
        }
        for (const std::string& token : {a, b, a + b}) {
            if (!vocab.contains(token)) {
                throw Error(source + ": " + field + " (" + quotedText(a) + " + " + quotedText(b) + ") needs " +
                            quotedText(token) + ", which is not in model.vocab");
            }
        }
        out.emplace_back(std::move(a), std::move(b));
    }
    return out;
}

std::string TokenizerJsonFields::leadingSpecial(const json& post) {
    if (!post.is_object()) return "";
    const std::string type = post.contains("type") && post["type"].is_string() ? post["type"].get<std::string>() : "";
    if (type == "Sequence" && post.contains("processors") && post["processors"].is_array()) {
        for (const json& p : post["processors"]) {
            const std::string s = leadingSpecial(p);
            if (!s.empty()) return s;
        }
        return "";
    }
    if (type != "TemplateProcessing" || !post.contains("single") || !post["single"].is_array() ||
        post["single"].empty()) {
        return "";
    }
    const json& first = post["single"][0];
    if (first.is_object() && first.contains("SpecialToken") && first["SpecialToken"].is_object() &&
        first["SpecialToken"].contains("id") && first["SpecialToken"]["id"].is_string()) {
        return first["SpecialToken"]["id"].get<std::string>();
    }
    return "";
}

int32_t TokenizerJsonFields::idOf(const Vocabulary& v, const std::string& token, const std::string& field,
                                  const std::string& source) {
    if (token.empty()) return -1;
    for (const auto& [id, entry] : v.byId)
        if (entry.first == token) return static_cast<int32_t>(id);
    throw Error(source + ": " + field + " " + quotedText(token) + " is not in the vocabulary");
}

}  // namespace kvlens
