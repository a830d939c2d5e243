// A SentencePiece model file (a Hugging Face folder's tokenizer.model: Llama 2,
// Mistral, TinyLlama) run by the SentencePiece library itself (Debian's
// libsentencepiece, through SentencePieceLibrary): encoding is the library's, so
// BPE and unigram models both tokenize exactly as `sentencepiece` does. Around it, what the Tokenizer
// interface adds: BOS, control tokens cut out of the text with --special (each
// text run between them encoded on its own, as llama.cpp does), the end-of-
// generation ids, and streaming decode piece by piece.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/tokenizer/TokenType.h"
#include "engine/tokenizer/Tokenizer.h"

namespace kvlens {

class SentencePieceTokenizer : public Tokenizer {
public:
    struct Options {
        int addBos = -1;              // -1: yes when the model has a BOS
        std::vector<int32_t> endIds;  // more EOS ids (generation_config.json)
        int64_t vocabSize = 0;        // pad with unused ids up to it (config.json's vocab_size)
    };
    // Parses a serialized ModelProto; `source` names the file in messages.
    // Throws kvlens::Error with the library's reason when it cannot be loaded.
    SentencePieceTokenizer(const std::string& serialized, const std::string& source, const Options& options);
    ~SentencePieceTokenizer() override;
    // Reads `path` whole and parses it.
    static std::unique_ptr<SentencePieceTokenizer> fromFile(const std::string& path, const Options& options);

    std::vector<int32_t> encode(const std::string& text, bool addBos, bool parseSpecial = false) const override;
    std::vector<int32_t> endOfGeneration() const override { return eog_; }
    std::string tokenBytes(int32_t id, int32_t previous) const override;
    std::string piece(int32_t id) const override;

    int32_t vocabSize() const override { return static_cast<int32_t>(tokens_.size()); }
    int32_t bosId() const override { return bos_; }
    int32_t eosId() const override { return eos_; }
    bool addBosByDefault() const override { return addBos_; }

private:
    void checkId(int32_t id) const;
    void encodeRun(const std::string& run, std::vector<int32_t>& out) const;

    std::shared_ptr<void> sp_;  // the library's processor
    std::string source_;
    std::vector<std::string> tokens_;  // pieces, and "[PADn]" past the model's own
    std::vector<LlamaTokenType> types_;
    std::vector<std::string> bytes_;   // what each id decodes to
    std::vector<int32_t> controls_;    // cut out with --special, longest first
    std::vector<int32_t> eog_;
    int32_t bos_ = -1, eos_ = -1;
    bool addBos_ = false;
};

}  // namespace kvlens
