// Picks the tokenizer by tokenizer.ggml.model.
#include "engine/tokenizer/GgufTokenizer.h"

#include "core/Error.h"
#include "engine/gguf/GgufFile.h"
#include "engine/tokenizer/BpeTokenizer.h"
#include "engine/tokenizer/LlamaTokenizer.h"

namespace kvlens {

std::unique_ptr<Tokenizer> GgufTokenizer::fromGguf(const GgufFile& file) {
    if (!file.has("tokenizer.ggml.model")) {
        throw Error(file.path() + ": tokenizer.ggml.model is missing; the file has no tokenizer");
    }
    const std::string model = file.getString("tokenizer.ggml.model");
    if (model == "llama") return LlamaTokenizer::fromGguf(file);
    if (model == "gpt2") return BpeTokenizer::fromGguf(file);
    throw Error(
        file.path() + ": tokenizer.ggml.model is '" + model +
        "'; KV Lens reads 'llama' (SentencePiece) and 'gpt2' (byte-level BPE) vocabularies");
}

}  // namespace kvlens
