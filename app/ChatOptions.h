// --chat [--system TEXT] of tokenize, generate and run: the prompt wrapped as
// one user turn in the format of the model file's tokenizer.chat_template
// (engine/tokenizer/ChatTemplate), with the template's control tokens parsed.
#pragma once

#include <set>
#include <string>

namespace kvlens {

class CommandLine;

struct ChatPrompt {
    std::string text;           // what is tokenized
    bool parseSpecial = false;  // --special, or inside a chat template
};

class ChatOptions {
public:
    static const std::set<std::string>& valueFlags();  // --system
    // Throws kvlens::Error for --system without --chat, a model without a
    // chat template (random presets included) or an unrecognised template.
    static ChatPrompt apply(const CommandLine& args, const std::string& model,
                            const std::string& prompt);
};

}  // namespace kvlens
