// Token types and special ids from GGUF metadata.
#include "engine/tokenizer/GgufVocabKeys.h"

#include <cstdio>

#include "core/Error.h"
#include "engine/gguf/GgufFile.h"

namespace kvlens {

std::vector<LlamaTokenType> GgufVocabKeys::tokenTypes(const GgufFile& file, size_t n) {
    const std::vector<double> types = file.getNumberArray("tokenizer.ggml.token_type");
    if (types.size() != n) {
        throw Error(file.path() + ": tokenizer.ggml.token_type has " +
                    std::to_string(types.size()) + " entries but tokenizer.ggml.tokens has " +
                    std::to_string(n));
    }
    std::vector<LlamaTokenType> out;
    out.reserve(n);
    for (size_t i = 0; i < n; ++i) {
        const double t = types[i];
        if (!(t >= 0 && t <= 6) || t != static_cast<double>(static_cast<int>(t))) {
            char buf[64];
            std::snprintf(buf, sizeof buf, "%g", t);
            throw Error(file.path() + ": tokenizer.ggml.token_type[" + std::to_string(i) + "] is " +
                        buf + "; token types are 0..6");
        }
        out.push_back(static_cast<LlamaTokenType>(static_cast<int>(t)));
    }
    return out;
}

int32_t GgufVocabKeys::tokenId(const GgufFile& file, const std::string& key, size_t n,
                               int32_t absent) {
    const std::string full = "tokenizer.ggml." + key;
    const GgufValue* v = file.find(full);
    if (v == nullptr) return absent < static_cast<int64_t>(n) ? absent : -1;
    if (!v->isInteger() || v->type == GgufValueType::Bool) {
        throw Error(file.path() + ": " + full + " is a " + ggufValueTypeName(v->type) +
                    ", not an integer token id");
    }
    if (v->i == -1 || (v->type == GgufValueType::UInt32 && v->i == 0xFFFFFFFFll)) return -1;
    if (v->i < 0 || v->i >= static_cast<int64_t>(n)) {
        const std::string shown = v->type == GgufValueType::UInt64
                                      ? std::to_string(static_cast<uint64_t>(v->i))
                                      : std::to_string(v->i);
        throw Error(file.path() + ": " + full + " is " + shown + ", outside the vocabulary of " +
                    std::to_string(n) + " tokens");
    }
    return static_cast<int32_t>(v->i);
}

}  // namespace kvlens
