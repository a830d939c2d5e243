// The tokenizer.ggml.* keys both GGUF vocabularies (SentencePiece and
// byte-level BPE) read alike: the token types and the special token ids, each
// checked with one line naming the file and key.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/tokenizer/TokenType.h"

namespace kvlens {

class GgufFile;

class GgufVocabKeys {
public:
    // tokenizer.ggml.token_type, which must have `n` entries of 0..6.
    static std::vector<LlamaTokenType> tokenTypes(const GgufFile& file, size_t n);
    // tokenizer.ggml.<key> as a token id below `n`: `absent` (or -1 when that is
    // not below n) when the key is missing; -1 for the customary "none" values
    // (-1, 0xFFFFFFFF).
    static int32_t tokenId(const GgufFile& file, const std::string& key, size_t n, int32_t absent);
};

}  // namespace kvlens
