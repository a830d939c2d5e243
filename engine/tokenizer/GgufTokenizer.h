// The tokenizer a GGUF file names in tokenizer.ggml.model: `llama`
// (SentencePiece, LlamaTokenizer) or `gpt2` (byte-level BPE, BpeTokenizer).
#pragma once

#include <memory>

#include "engine/tokenizer/Tokenizer.h"

namespace kvlens {

class GgufFile;

class GgufTokenizer {
public:
    // Throws kvlens::Error naming the file and the value for a missing or
    // unknown tokenizer.ggml.model (and whatever the tokenizer itself refuses).
    static std::unique_ptr<Tokenizer> fromGguf(const GgufFile& file);
};

}  // namespace kvlens
