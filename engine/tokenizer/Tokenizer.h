// Text <-> token ids. One interface for the GGUF SentencePiece-style `llama`
// vocabulary and for the byte-level tokenizer of the random-weight presets.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kvlens {

class Tokenizer {
public:
    virtual ~Tokenizer() = default;

    // Token ids for `text`. BOS is prepended when `addBos` and the vocabulary
    // says to (the caller passes the model's add_bos_token setting). With
    // `parseSpecial` the texts of control tokens ("<|eot_id|>", "<s>") in
    // `text` become those tokens; without it only user-defined tokens are.
    virtual std::vector<int32_t> encode(const std::string& text, bool addBos, bool parseSpecial = false) const = 0;

    // Every id that ends a generation: EOS, the file's end-of-turn and
    // end-of-message ids, and control tokens spelled like one ("<|eot_id|>",
    // "<|im_end|>", "<|end|>", "<end_of_turn>", ...).
    virtual std::vector<int32_t> endOfGeneration() const {
        return eosId() >= 0 ? std::vector<int32_t>{eosId()} : std::vector<int32_t>{};
    }

    // The text of a sequence of generated ids, exactly as a user reads it: each id's
    // tokenBytes after the one before it.
    std::string decode(const std::vector<int32_t>& ids) const {
        std::string out;
        int32_t previous = -1;
        for (int32_t id : ids) {
            out += tokenBytes(id, previous);
            previous = id;
        }
        return out;
    }

    // Bytes that token `id` contributes when streamed after `previous`
    // (-1 for none): byte-fallback tokens give their raw byte, control tokens
    // give nothing, the SentencePiece space marker becomes ' '. Concatenating
    // tokenBytes over a sequence gives decode() of it.
    virtual std::string tokenBytes(int32_t id, int32_t previous) const = 0;

    // Display form of a token for listings: pieces with the space marker shown
    // as ' ', control tokens as their text (e.g. "<s>"), byte tokens as <0xNN>.
    virtual std::string piece(int32_t id) const = 0;

    virtual int32_t vocabSize() const = 0;
    virtual int32_t bosId() const = 0;  // -1 when there is none
    virtual int32_t eosId() const = 0;  // -1 when there is none
    virtual bool addBosByDefault() const = 0;
};

}  // namespace kvlens
