// A SentencePiece-style BPE as Hugging Face's `tokenizers` runs it from a
// tokenizer.json (Llama 2, Mistral, Gemma, Phi-3 folders that ship no
// tokenizer.model): the text is cut at the added tokens, each fragment goes
// through the normalizer's steps (Prepend, Replace, NFC) and the
// pre-tokenizer's (Metaspace with its prepend scheme and split, Split on a
// literal), and each word is split into characters, a character that is no
// token becomes its bytes' <0xNN> tokens (byte fallback) or the unknown token,
// and adjacent symbols are merged by the rank of `merges` (lowest rank first,
// ties to the leftmost pair), as the `BPE` model's merge_word/merge_all do.
//
// Decoding is the usual decoder chain (Replace '▁' -> ' ', ByteFallback,
// Fuse, Strip or Metaspace): the space marker becomes a space, byte tokens
// their byte, control tokens nothing, and the leading space of the token after
// BOS is dropped when the decoder strips one.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "engine/tokenizer/TokenType.h"
#include "engine/tokenizer/Tokenizer.h"

namespace kvlens {

// The whole pipeline as plain data (tests build one in memory).
struct SentencePieceBpeVocab {
    struct AddedToken {
        bool lstrip = false, rstrip = false;  // whitespace before / after the token is part of it
        bool normalized = false;              // matched in the normalized text, not the raw one
    };
    struct NormalizerStep {
        enum class Kind { Prepend, Replace, Nfc } kind;
        std::string text, with;  // Prepend: text; Replace: text -> with
    };
    enum class Prepend { Always, First, Never };
    enum class SplitBehavior { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };
    struct PreTokenizerStep {
        enum class Kind { Metaspace, Split } kind;
        std::string text;  // Metaspace: its replacement character; Split: the literal it splits at
        Prepend prepend = Prepend::Always;  // Metaspace
        bool split = true;                  // Metaspace: split into words at the replacement
        SplitBehavior behavior = SplitBehavior::Isolated;  // Split
    };

    std::vector<std::string> tokens;  // as tokenizer.json spells them ('▁' for a space)
    std::vector<LlamaTokenType> types;  // Normal, Byte (<0xNN>), Control / UserDefined (added), Unused (padding)
    std::map<int32_t, AddedToken> added;  // how each added token is matched
    std::vector<std::pair<std::string, std::string>> merges;  // by rank
    std::vector<NormalizerStep> normalizer;
    std::vector<PreTokenizerStep> preTokenizer;
    bool byteFallback = true;
    bool fuseUnk = false;
    bool ignoreMerges = false;  // a word that is a token whole is taken whole
    int32_t unkId = -1;
    // The decoder: '▁' decoded as a space, and leading spaces stripped at the start.
    bool decodeMarker = true;
    int stripLeading = 0;
    int32_t bosId = -1, eosId = -1;
    std::vector<int32_t> endIds;
    bool addBos = false;
};

class SentencePieceBpe : public Tokenizer {
public:
    // Throws kvlens::Error ("<name>: ...") for an inconsistent vocabulary: a
    // merge of tokens it does not have, ids out of range, a byte token not
    // spelled <0xNN>.
    explicit SentencePieceBpe(SentencePieceBpeVocab vocab, const std::string& name = "vocabulary");
    SentencePieceBpe(const SentencePieceBpe&) = delete;
    SentencePieceBpe& operator=(const SentencePieceBpe&) = delete;

    std::vector<int32_t> encode(const std::string& text, bool addBos, bool parseSpecial = false) const override;
    std::vector<int32_t> endOfGeneration() const override { return eog_; }
    std::string tokenBytes(int32_t id, int32_t previous) const override;
    std::string piece(int32_t id) const override;

    int32_t vocabSize() const override { return static_cast<int32_t>(vocab_.tokens.size()); }
    int32_t bosId() const override { return vocab_.bosId; }
    int32_t eosId() const override { return vocab_.eosId; }
    bool addBosByDefault() const override { return vocab_.addBos; }
    int32_t tokenId(std::string_view text) const;

private:
    struct Word {
        std::string text;
        bool atStart;  // begins at the start of the original text
    };
    void checkId(int32_t id) const;
    // The normalized fragment and its pre-tokenized words.
    std::string normalize(std::string_view fragment) const;
    std::vector<Word> preTokenize(Word fragment) const;
    void encodeWord(const std::string& word, std::vector<int32_t>& out) const;
    // A fragment between raw-matched added tokens: normalized, cut at the
    // normalized-matched ones, pre-tokenized, merged.
    void encodeFragment(std::string_view fragment, bool atStart, bool parseSpecial, std::vector<int32_t>& out) const;

    SentencePieceBpeVocab vocab_;
    std::string name_;
    std::unordered_map<std::string_view, int32_t> index_;  // views into vocab_.tokens
    std::unordered_map<uint64_t, std::pair<int32_t, int32_t>> merges_;  // (left id, right id) -> (rank, merged id)
    std::array<int32_t, 256> byteToId_{};  // -1: no <0xNN> token
    std::vector<std::string> bytes_;       // what each id decodes to
    std::vector<std::string> normalizedTexts_;  // each token's text; normalized added tokens' normalized
    std::vector<int32_t> rawAdded_, rawAddedControl_;    // matched in the raw text, longest first
    std::vector<int32_t> normAdded_, normAddedControl_;  // matched in the normalized text
    std::vector<bool> lstrip_, rstrip_;
    std::vector<int32_t> eog_;
};

}  // namespace kvlens
