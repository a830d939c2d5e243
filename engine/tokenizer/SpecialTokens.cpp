// Special-token lists by GGUF token type.
#include "engine/tokenizer/SpecialTokens.h"

#include <algorithm>
#include <set>

namespace kvlens {

SpecialTokens::Lists SpecialTokens::of(const std::vector<std::string>& tokens,
                                       const std::vector<LlamaTokenType>& types, int32_t eosId,
                                       const std::vector<int32_t>& endIds) {
    std::vector<int32_t> declared = endIds;
    declared.push_back(eosId);
    return {longestFirst(tokens, types, false), longestFirst(tokens, types, true),
            endOfGeneration(tokens, types, declared)};
}

std::vector<int32_t> SpecialTokens::longestFirst(const std::vector<std::string>& tokens,
                                                 const std::vector<LlamaTokenType>& types,
                                                 bool control) {
    std::vector<int32_t> ids;
    for (size_t i = 0; i < tokens.size(); ++i) {
        const LlamaTokenType t = types[i];
        const bool cut =
            t == LlamaTokenType::UserDefined ||
            (control && (t == LlamaTokenType::Control || t == LlamaTokenType::Unknown));
        if (cut && !tokens[i].empty()) ids.push_back(int32_t(i));
    }
    std::stable_sort(ids.begin(), ids.end(), [&](int32_t a, int32_t b) {
        return tokens[size_t(a)].size() > tokens[size_t(b)].size();
    });
    return ids;
}

std::vector<int32_t> SpecialTokens::endOfGeneration(const std::vector<std::string>& tokens,
                                                    const std::vector<LlamaTokenType>& types,
                                                    const std::vector<int32_t>& declared) {
    static const std::set<std::string> kEndTexts = {
        "<|eot_id|>",
        "<|eom_id|>",
        "<|end_of_text|>",
        "<|im_end|>",
        "<|end|>",
        "<end_of_turn>",
        "<|endoftext|>",
        "<EOT>",
        "_<EOT>",
        "<\xEF\xBD\x9C"
        "end\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>"};
    std::set<int32_t> ids;
    for (int32_t id : declared)
        if (id >= 0 && id < int32_t(tokens.size())) ids.insert(id);
    for (size_t i = 0; i < tokens.size(); ++i) {
        const LlamaTokenType t = types[i];
        if ((t == LlamaTokenType::Control || t == LlamaTokenType::UserDefined) &&
            kEndTexts.count(tokens[i]))
            ids.insert(int32_t(i));
    }
    return std::vector<int32_t>(ids.begin(), ids.end());
}

}  // namespace kvlens
