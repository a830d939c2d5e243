#include "engine/compress/RepeatPrompt.h"

#include "engine/tokenizer/Tokenizer.h"

namespace kvlens {

RepeatPrompt RepeatPrompt::from(const Tokenizer& tokenizer) {
    RepeatPrompt p;
    p.first = tokenizer.encode("\n\nRepeat the previous context exactly.", false);
    p.later = tokenizer.encode("\n\nRepeat the part of the previous context exactly, starting with", false);
    p.suffix = tokenizer.encode("\n", false);
    return p;
}

}  // namespace kvlens
