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
    struct Lists {
        std::vector<int32_t> userDefined;  // cut out of every text, longest first
        std::vector<int32_t> withControl;  // cut out with --special, longest first
        std::vector<int32_t> endOfGeneration;
    };
    // The three lists of a vocabulary whose EOS is `eosId` and whose file
    // names `endIds` (end of turn, end of message).
    static Lists of(const std::vector<std::string>& tokens, const std::vector<LlamaTokenType>& types, int32_t eosId,
                    const std::vector<int32_t>& endIds);

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
