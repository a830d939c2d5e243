// What both tokenizer.json readers (byte-level BPE in HfTokenizerJson,
// SentencePiece-style BPE in HfSentencePieceJson) read alike: the JSON object
// itself, typed fields, model.vocab with added_tokens, model.merges, the
// post-processor's leading special token and the special ids the folder's
// other files name. Every refusal is one line "<source>: <field> <what>".
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "engine/tokenizer/TokenType.h"

namespace kvlens {

class TokenizerJsonFields {
public:
    using json = nlohmann::json;

    struct AddedToken {
        int64_t id = 0;
        std::string content;
        bool special = false, lstrip = false, rstrip = false, normalized = false;
    };
    // model.vocab and added_tokens: every id's text and type (Normal for the
    // vocabulary, Control for special added tokens, UserDefined for others).
    struct Vocabulary {
        std::map<int64_t, std::pair<std::string, LlamaTokenType>> byId;
        std::vector<AddedToken> added;
    };

    // `text` as a JSON object; "<source>: not valid JSON: ..." otherwise.
    static json parseObject(const std::string& text, const std::string& source);
    // o[key] as a string / bool (fallback when absent or null); a wrong type names `field`.key.
    static std::string text(const json& o, const char* key, const std::string& fallback, const std::string& field,
                            const std::string& source);
    static bool flag(const json& o, const char* key, bool fallback, const std::string& field, const std::string& source);

    // root["model"], checked to be a BPE model without dropout or affixes.
    static const json& bpeModel(const json& root, const std::string& source);
    static Vocabulary vocabulary(const json& root, const json& model, const std::string& source);
    // model.merges ("a b" strings or [a, b] pairs), each part and their join in model.vocab.
    static std::vector<std::pair<std::string, std::string>> merges(const json& model, const std::string& source);
    // The first special token a TemplateProcessing's single template starts with, or "".
    static std::string leadingSpecial(const json& post);
    // The id whose text is `token` ("" -> -1); refuses naming `field` when there is none.
    static int32_t idOf(const Vocabulary& v, const std::string& token, const std::string& field,
                        const std::string& source);
    // The largest id accepted (the biggest real vocabularies are ~260k).
    static constexpr int64_t kMaxVocab = int64_t(1) << 22;
};

}  // namespace kvlens
