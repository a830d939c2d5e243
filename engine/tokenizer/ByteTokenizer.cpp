#include "engine/tokenizer/ByteTokenizer.h"

#include <cstdio>

#include "core/Error.h"

namespace kvlens {

ByteTokenizer::ByteTokenizer(int32_t vocabSize) : vocabSize_(vocabSize) {
    if (vocabSize < kMinVocabSize) {
        throw Error("byte tokenizer: vocabulary size " + std::to_string(vocabSize) + " is below the minimum of " +
                    std::to_string(kMinVocabSize) + " (3 special tokens + 256 bytes)");
    }
}

void ByteTokenizer::checkId(int32_t id) const {
    if (id < 0 || id >= vocabSize_) {
        throw Error("byte tokenizer: token id " + std::to_string(id) + " is outside the vocabulary of " +
                    std::to_string(vocabSize_) + " tokens");
    }
}

std::vector<int32_t> ByteTokenizer::encode(const std::string& text, bool addBos, bool /*parseSpecial: no special tokens*/) const {
    std::vector<int32_t> ids;
    ids.reserve(text.size() + 1);
    if (addBos) ids.push_back(kBosId);
    for (unsigned char c : text) ids.push_back(kFirstByteId + static_cast<int32_t>(c));
    return ids;
}

std::string ByteTokenizer::tokenBytes(int32_t id, int32_t /*previous*/) const {
    checkId(id);
    if (id < kFirstByteId) return std::string();
    if (id < kMinVocabSize) return std::string(1, static_cast<char>(id - kFirstByteId));
    return "<t" + std::to_string(id) + ">";
}

std::string ByteTokenizer::piece(int32_t id) const {
    checkId(id);
    switch (id) {
        case kUnkId: return "<unk>";
        case kBosId: return "<s>";
        case kEosId: return "</s>";
        default: break;
    }
    if (id < kMinVocabSize) {
        char buf[16];
        std::snprintf(buf, sizeof buf, "<0x%02X>", static_cast<unsigned>(id - kFirstByteId) & 0xFFu);
        return buf;
    }
    return "<t" + std::to_string(id) + ">";
}

}  // namespace kvlens
