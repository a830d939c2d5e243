// The special tokens of a GGUF vocabulary, by token type: which texts are cut
// out of a prompt before tokenizing (user-defined ones always, control and
// unknown ones with --special, as llama.cpp's parse_special), and which ids
// end a generation.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/tokenizer/TokenType.h"

namespace kvlens {

class SpecialTokens {
public:
    // Ids to cut out of a text, longest text first.
    static std::vector<int32_t> longestFirst(const std::vector<std::string>& tokens,
                                             const std::vector<LlamaTokenType>& types,
                                             bool control);
    // `declared` (EOS, EOT, EOM ids from the file; -1 entries ignored) plus the
    // control and user-defined tokens spelled as a known end of turn
    // ("<|eot_id|>", "<|eom_id|>", "<|end_of_text|>", "<|im_end|>", "<|end|>",
    // "<end_of_turn>", "<|endoftext|>", "<EOT>", "<｜end▁of▁sentence｜>"), ascending.
    static std::vector<int32_t> endOfGeneration(const std::vector<std::string>& tokens,
                                                const std::vector<LlamaTokenType>& types,
                                                const std::vector<int32_t>& declared);
};

}  // namespace kvlens
