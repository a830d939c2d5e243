// Cutting a vocabulary's special tokens out of a text before it is tokenized
// (llama.cpp's tokenizer_st_partition): the tokens' texts are found longest
// first, and what lies between them is left as text fragments.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kvlens {

class SpecialTokenSplit {
public:
    struct Fragment {
        size_t offset = 0, length = 0;
        int32_t token = -1;  // -1: text to tokenize
    };
    // `ids` are the tokens to cut out, longest text first; `texts` all token
    // texts. Whitespace after a token whose `rstrip` entry is set is dropped,
    // and before one whose `lstrip` entry is (the tokens' rstrip and lstrip
    // attributes; empty: none has it).
    static std::vector<Fragment> split(std::string_view text, const std::vector<int32_t>& ids,
                                       const std::vector<std::string>& texts,
                                       const std::vector<bool>& rstrip = {}, const std::vector<bool>& lstrip = {});
};

}  // namespace kvlens
