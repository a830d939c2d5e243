// The GGUF `gpt2` vocabulary: byte-level BPE, as Llama 3, Qwen2/3, DeepSeek,
// SmolLM, Falcon and StarCoder files carry it. A text is cut at the
// vocabulary's user-defined tokens (longest first), each fragment is split by
// the pre-tokenizer that tokenizer.ggml.pre names, each piece is spelled in
// GPT-2's byte-level alphabet, and its characters are merged by the rank of
// tokenizer.ggml.merges (lowest rank first, ties to the leftmost pair), as
// llama.cpp's llm_tokenizer_bpe does. Llama 3 and Tekken take a piece that is
// a token whole before merging (ignore_merges).
//
// The text must be valid UTF-8 (the regexes read characters): encode() throws
// naming the first bad byte.
#pragma once

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
class PreTokenizer;

// A byte-level BPE vocabulary as plain data (tests build them in memory).
struct BpeVocab {
    std::vector<std::string> tokens;  // normal tokens in the byte-level alphabet
    std::vector<LlamaTokenType> types;
    std::vector<std::string> merges;  // "left right", by rank
    std::string pre = "default";      // tokenizer.ggml.pre
    // A tokenizer.json's own pre-tokenizer, used instead of `pre` when set.
    std::shared_ptr<const PreTokenizer> preTokenizer;
    bool nfc = false;  // tokenizer.json's NFC normalizer (Qwen2): each fragment composed first
    int32_t bosId = -1, eosId = -1;
    std::vector<int32_t> endIds;      // end of turn / message (tokenizer.ggml.eot/eom_token_id)
    int addBos = -1;  // -1: as the pre-tokenizer says (Llama 3: yes)
};

class BpeTokenizer : public Tokenizer {
public:
    // Throws kvlens::Error ("<name>: ...") for an inconsistent vocabulary or
    // an unknown pre-tokenizer.
    explicit BpeTokenizer(BpeVocab vocab, const std::string& name = "vocabulary");
    ~BpeTokenizer() override;

    // Reads tokenizer.ggml.{tokens,token_type,merges,pre,bos_token_id,
    // eos_token_id,add_bos_token}; throws naming the file and key.
    static std::unique_ptr<BpeTokenizer> fromGguf(const GgufFile& file);

    BpeTokenizer(const BpeTokenizer&) = delete;
    BpeTokenizer& operator=(const BpeTokenizer&) = delete;

    std::vector<int32_t> encode(const std::string& text, bool addBos, bool parseSpecial = false) const override;
    std::vector<int32_t> endOfGeneration() const override { return eog_; }
    std::string tokenBytes(int32_t id, int32_t previous) const override;
    std::string piece(int32_t id) const override;

    int32_t vocabSize() const override { return static_cast<int32_t>(vocab_.tokens.size()); }
    int32_t bosId() const override { return vocab_.bosId; }
    int32_t eosId() const override { return vocab_.eosId; }
    bool addBosByDefault() const override { return addBos_; }
    const PreTokenizer& preTokenizer() const { return *pre_; }
    int32_t tokenId(std::string_view text) const;

private:
    void checkId(int32_t id) const;
    // BPE of one pre-tokenized piece (raw bytes) into `out`.
    void encodePiece(std::string_view piece, std::vector<int32_t>& out) const;
    int32_t rank(std::string_view left, std::string_view right) const;

    BpeVocab vocab_;
    std::string name_;
    std::shared_ptr<const PreTokenizer> pre_;
    bool addBos_ = false;
    std::unordered_map<std::string_view, int32_t> index_;  // views into vocab_.tokens
    std::unordered_map<std::string, int32_t> ranks_;       // "left right" -> rank
    std::vector<std::string> bytes_;                       // what each id decodes to
    std::vector<int32_t> userDefined_;                     // longest text first
    std::vector<int32_t> specials_;                        // with control tokens, for --special
    std::vector<int32_t> eog_;
};

}  // namespace kvlens
