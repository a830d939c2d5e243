// GGUF token types (tokenizer.ggml.token_type), as llama.cpp numbers them,
// shared by the SentencePiece and the byte-level BPE vocabularies.
#pragma once

#include <cstdint>

namespace kvlens {

enum class LlamaTokenType : int32_t {
    Undefined = 0,
    Normal = 1,
    Unknown = 2,
    Control = 3,
    UserDefined = 4,
    Unused = 5,
    Byte = 6,
};

}  // namespace kvlens
