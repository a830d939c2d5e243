// A Hugging Face tokenizer.json whose model is byte-level BPE (Llama 3, Qwen2/3,
// GPT-2, DeepSeek, Falcon, StarCoder) as the engine's BpeTokenizer: model.vocab,
// model.merges (as "a b" strings or [a, b] pairs), model.ignore_merges,
// added_tokens (special: control tokens; others: user-defined, cut out of every
// text), the normalizer (none or NFC), and the pre_tokenizer translated into the
// regexes it runs: Split (a Regex or String pattern, Isolated), ByteLevel (its
// GPT-2 regex when use_regex), Digits, Punctuation, and Sequences of them.
// The ByteLevel decoder is the byte-level decode the BPE vocabulary does already.
//
// Steps after a ByteLevel step match each piece's byte-level spelling, as
// Hugging Face runs them (Falcon's Digits see "½" as 'Â' '½').
//
// Anything else (a SentencePiece-style model with byte_fallback or Metaspace,
// which HfSentencePieceJson reads; a WordPiece model, an unknown component or
// behaviour) is one line naming the file and the field.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/tokenizer/BpeTokenizer.h"

namespace kvlens {

class HfTokenizerJson {
public:
    // What the folder's other files say about the vocabulary.
    struct Extras {
        std::string bosToken, eosToken;  // tokenizer_config.json's texts ("" when absent)
        int addBos = -1;                 // tokenizer_config.json's add_bos_token (-1: absent)
        std::vector<int32_t> endIds;     // generation_config.json / config.json EOS ids
        int64_t vocabSize = 0;           // config.json's vocab_size: pad up to it (0: no padding)
    };

    // Throws kvlens::Error ("<source>: ...") as described above.
    static std::unique_ptr<BpeTokenizer> parse(const std::string& text, const std::string& source,
                                               const Extras& extras);
    // Whether tokenizer.json's model is SentencePiece-style BPE (byte_fallback, or a
    // Metaspace pre-tokenizer / Prepend normalizer): then HfSentencePieceJson reads
    // it, or the folder's tokenizer.model when it has one.
    static bool sentencePieceStyle(const std::string& text);
    // "byte-level BPE, pre-tokenizer: Split, ByteLevel" for `kvlens info`.
    static std::string describe(const std::string& text);
};

}  // namespace kvlens
