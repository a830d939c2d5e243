// Which tokens of a tokenized text spell given byte ranges of it: the ground truth of
// a task's needle (the positions a method had to keep), for any tokenizer.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/tokenizer/Tokenizer.h"

namespace kvlens {

struct ByteSpan {
    size_t begin = 0, end = 0;  // [begin, end) in the text's bytes
};

// ids: `text` encoded by `tokenizer` (a BOS or other control tokens spell nothing).
// Returns, ascending, the positions of the tokens whose bytes overlap any span: a
// token that straddles a span's edge (SentencePiece's " One", the space before a
// word) counts. Throws an Error when the tokens' bytes do not spell the text
// (optionally after the one leading space SentencePiece prefixes): a tokenizer that
// normalises the text, or ids of another text.
std::vector<int64_t> tokensCovering(const Tokenizer& tokenizer, const std::vector<int32_t>& ids,
                                    const std::string& text, const std::vector<ByteSpan>& spans);

}  // namespace kvlens
