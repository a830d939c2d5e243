// The testbed model's vocabulary: word-level SentencePiece pieces for every word of
// a corpus. Each word w gets "▁w" (after a space) and "w" (after punctuation, as in
// "silent-harbor"), with every prefix of both, so llama.cpp's SentencePiece merge
// (LlamaTokenizer) always ends a known word as one token whatever the merge order:
// the leftmost symbol and its neighbour always concatenate to a longer prefix, and
// no piece spans a space or punctuation. Single letters and digits (both forms),
// punctuation and the 256 byte tokens cover any other text.
#pragma once

#include <string>

#include "engine/tokenizer/LlamaTokenizer.h"

namespace kvlens {

class TestbedVocabulary {
public:
    // <unk> 0, <s> 1, </s> 2, <0x00>..<0xFF> 3..258, then the pieces (sorted).
    static LlamaVocab build(const std::string& corpus);
    // The words the testbed is trained on: the needle tasks' built-in text.
    static LlamaVocab standard();
};

}  // namespace kvlens
