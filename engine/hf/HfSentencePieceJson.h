// A Hugging Face tokenizer.json whose model is a SentencePiece-style BPE
// (byte_fallback, a Metaspace pre-tokenizer, or the Prepend/Replace
// normalizer: Llama 2, Mistral, Gemma, Phi-3 folders) as the engine's
// SentencePieceBpe, read from the file alone (no tokenizer.model needed):
// model.vocab, model.merges by rank, byte_fallback, unk_token, fuse_unk,
// ignore_merges; added_tokens with special, normalized, lstrip and rstrip; the
// normalizer (Prepend, Replace of a literal, NFC, Sequences of them); the
// pre-tokenizer (Metaspace with replacement, prepend_scheme first / always /
// never or the older add_prefix_space, split; Split at a literal with any
// behaviour; Sequences); the decoder (Replace, ByteFallback, Fuse, Strip,
// Metaspace). The `legacy` behaviour of transformers' Llama tokenizer is what
// the file spells: Prepend in the normalizer puts '▁' before every text run,
// Metaspace's "first" only before the text's start.
//
// Anything else (a Regex in a Replace or Split, another normalizer,
// pre-tokenizer or decoder, BPE dropout, affixes) is one line naming the file
// and the field.
#pragma once

#include <memory>
#include <string>

#include "engine/hf/HfTokenizerJson.h"
#include "engine/tokenizer/SentencePieceBpe.h"

namespace kvlens {

class HfSentencePieceJson {
public:
    // Throws kvlens::Error ("<source>: <field> ...") as described above.
    static std::unique_ptr<SentencePieceBpe> parse(const std::string& text, const std::string& source,
                                                   const HfTokenizerJson::Extras& extras);
    // "SentencePiece-style BPE, normalizer Prepend, Replace; byte fallback" for `kvlens info`.
    static std::string describe(const std::string& text);
};

}  // namespace kvlens
