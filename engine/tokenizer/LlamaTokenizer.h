// The GGUF `llama` vocabulary (SentencePiece-style), encoded as llama.cpp does
// (llm_tokenizer_spm): spaces become U+2581 '▁', a '▁' is prefixed to each text
// run when add_space_prefix, the text is split into UTF-8 characters, and
// adjacent symbols are merged by score (highest first, ties to the leftmost
// pair) while their concatenation is a token; what is left that is no token
// falls back to byte tokens <0xNN> (or unk when the vocabulary has none).
//
// Special-token handling follows llama.cpp with parse_special = false: text is
// never read as control tokens ("<s>" in a prompt is three characters), but
// user-defined tokens (type 4) are cut out of the text first, longest first,
// and each text run after one is again prefixed with '▁' (as llama.cpp does).
//
// Invalid UTF-8: each byte that does not start a well-formed sequence is a
// symbol of its own (llama.cpp instead takes the length from the lead byte
// alone); valid UTF-8 splits identically.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "engine/tokenizer/TokenType.h"
#include "engine/tokenizer/Tokenizer.h"

namespace kvlens {

class GgufFile;


// A vocabulary as plain data, so tests can build one in memory. Ids of -1 mean
// "none". `tokens`, `scores` and `types` have one entry per token.
struct LlamaVocab {
    std::vector<std::string> tokens;
    std::vector<float> scores;
    std::vector<LlamaTokenType> types;
    int32_t bosId = 1;
    int32_t eosId = 2;
    int32_t unkId = 0;
    std::vector<int32_t> endIds;  // end of turn / message (tokenizer.ggml.eot/eom_token_id)
    bool addBos = true;
    bool addSpacePrefix = true;
    // Phi-3's special tokens drop the whitespace after them (its tokenizer.json
    // rstrip), all but <unk>, <s> and <|endoftext|>, as llama.cpp sets them.
    bool rstripSpecials = false;
};

class LlamaTokenizer : public Tokenizer {
public:
    // Throws kvlens::Error ("<name>: <what is wrong>") for an inconsistent
    // vocabulary: arrays of different lengths, ids out of range, unknown token
    // types, byte tokens not spelled <0xNN>.
    explicit LlamaTokenizer(LlamaVocab vocab, const std::string& name = "vocabulary");

    // Reads tokenizer.ggml.{model,tokens,scores,token_type,bos_token_id,
    // eos_token_id,unknown_token_id,add_bos_token,add_space_prefix}. Throws
    // kvlens::Error naming the file and the key for anything missing or wrong.
    static std::unique_ptr<LlamaTokenizer> fromGguf(const GgufFile& file);

    LlamaTokenizer(const LlamaTokenizer&) = delete;  // the piece index points into tokens
    LlamaTokenizer& operator=(const LlamaTokenizer&) = delete;

    std::vector<int32_t> encode(const std::string& text, bool addBos, bool parseSpecial = false) const override;
    std::vector<int32_t> endOfGeneration() const override { return eog_; }
    // The leading space of a piece is dropped when `previous` is BOS and the
    // vocabulary adds a space prefix, so that decode(encode(text, true)) == text.
    std::string tokenBytes(int32_t id, int32_t previous) const override;
    std::string piece(int32_t id) const override;

    int32_t vocabSize() const override { return static_cast<int32_t>(vocab_.tokens.size()); }
    int32_t bosId() const override { return vocab_.bosId; }
    int32_t eosId() const override { return vocab_.eosId; }
    int32_t unkId() const { return vocab_.unkId; }
    bool addBosByDefault() const override { return vocab_.addBos; }
    bool addSpacePrefix() const { return vocab_.addSpacePrefix; }
    LlamaTokenType tokenType(int32_t id) const;
    float score(int32_t id) const;
    // The id whose text is exactly `text`, or -1.
    int32_t tokenId(std::string_view text) const;

private:
    void checkId(int32_t id) const;
    // SentencePiece merge of one text run (spaces already escaped) into `out`.
    void encodeRun(const std::string& run, std::vector<int32_t>& out) const;

    LlamaVocab vocab_;
    std::string name_;
    std::unordered_map<std::string_view, int32_t> index_;  // views into vocab_.tokens
    std::array<int32_t, 256> byteToId_{};                  // -1: no token for the byte
    std::vector<std::string> bytes_;                        // what each id decodes to
    std::vector<int32_t> userDefined_;                      // longest text first
    std::vector<int32_t> specials_;                         // with control tokens, for --special
    std::vector<int32_t> eog_;
    std::vector<bool> rstrip_;  // per id; empty when no token strips
};

}  // namespace kvlens
