// The tokenizer of the random-weight presets (no file): one token per byte, in
// the layout of llama's byte-fallback tokens. Ids 0 <unk>, 1 <s> (BOS), 2 </s>
// (EOS), 3..258 the bytes 0..255; ids 259 and up exist only to give the vocab
// the preset's size and read as "<tN>". decode(encode(x, b)) == x for any bytes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/tokenizer/Tokenizer.h"

namespace kvlens {

class ByteTokenizer : public Tokenizer {
public:
    static constexpr int32_t kUnkId = 0;
    static constexpr int32_t kBosId = 1;
    static constexpr int32_t kEosId = 2;
    static constexpr int32_t kFirstByteId = 3;
    static constexpr int32_t kMinVocabSize = kFirstByteId + 256;

    // Throws kvlens::Error when vocabSize < kMinVocabSize.
    explicit ByteTokenizer(int32_t vocabSize);

    std::vector<int32_t> encode(const std::string& text, bool addBos, bool parseSpecial = false) const override;
    // Byte ids give their byte, <unk>/<s>/</s> nothing, ids >= 259 "<tN>".
    std::string tokenBytes(int32_t id, int32_t previous) const override;
    // "<unk>", "<s>", "</s>", "<0xNN>", "<tN>".
    std::string piece(int32_t id) const override;

    int32_t vocabSize() const override { return vocabSize_; }
    int32_t bosId() const override { return kBosId; }
    int32_t eosId() const override { return kEosId; }
    bool addBosByDefault() const override { return true; }

private:
    void checkId(int32_t id) const;

    int32_t vocabSize_;
};

}  // namespace kvlens
