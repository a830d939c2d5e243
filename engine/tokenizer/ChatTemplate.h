// Chat templates: a prompt wrapped as one user turn (with an optional system
// message) in the format of the model's family, recognised from the text of
// the file's tokenizer.chat_template by the markers that family's template
// carries (as llama.cpp's llm_chat_detect_template does). The Jinja itself is
// not run: each family's format is written out here from its published
// definition, and docs/cli.md (Chat templates) lists exactly what is sent.
#pragma once

#include <string>

namespace kvlens {

class ChatTemplate {
public:
    enum class Family {
        Llama3,
        ChatML,
        MistralV1,
        MistralV3,
        MistralV3Tekken,
        MistralV7,
        Llama2,
        Gemma,
        Phi3,
        DeepSeekCoder,
        DeepSeek3
    };

    // Throws kvlens::Error showing the template's first characters when no
    // family is recognised, and suggesting plain text.
    static Family detect(const std::string& templateText, const std::string& source);
    static const char* name(Family family);

    // The text of one user turn and the assistant's opening, as the model's
    // template renders it (BOS is left to the tokenizer). Control tokens in it
    // are to be parsed (--special), which callers of a chat do.
    static std::string apply(Family family, const std::string& system, const std::string& user);
};

}  // namespace kvlens
