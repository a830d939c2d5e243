// Chat families: detection by template markers, and each one's single-turn format.
#include "engine/tokenizer/ChatTemplate.h"

#include "core/Error.h"

namespace kvlens {

namespace {

std::string trim(const std::string& s) {
    const char* ws = " \t\n\r";
    const size_t a = s.find_first_not_of(ws);
    if (a == std::string::npos) return "";
    return s.substr(a, s.find_last_not_of(ws) - a + 1);
}

}  // namespace

const char* ChatTemplate::name(Family f) {
    switch (f) {
        case Family::Llama3:
            return "llama3";
        case Family::ChatML:
            return "chatml";
        case Family::MistralV1:
            return "mistral-v1";
        case Family::MistralV3:
            return "mistral-v3";
        case Family::MistralV3Tekken:
            return "mistral-v3-tekken";
        case Family::MistralV7:
            return "mistral-v7";
        case Family::Llama2:
            return "llama2";
        case Family::Gemma:
            return "gemma";
        case Family::Phi3:
            return "phi3";
        case Family::DeepSeekCoder:
            return "deepseek-coder";
        case Family::DeepSeek3:
            return "deepseek3";
    }
    return "?";
}

ChatTemplate::Family ChatTemplate::detect(const std::string& t, const std::string& source) {
    auto has = [&](const char* s) { return t.find(s) != std::string::npos; };
    if (has("<|im_start|>") && !has("<|im_sep|>")) return Family::ChatML;
    if (has("[INST]")) {
        if (has("[SYSTEM_PROMPT]")) return Family::MistralV7;
        if (has("' [INST] ' + system_message") || has("[AVAILABLE_TOOLS]")) {
            if (has(" [INST]")) return Family::MistralV1;
            if (has("\"[INST]\"")) return Family::MistralV3Tekken;
            return Family::MistralV3;
        }
        return Family::Llama2;
    }
    if (has("<|assistant|>") && has("<|end|>")) return Family::Phi3;
    if (has("<start_of_turn>")) return Family::Gemma;
    if (has("### Instruction:") && has("<|EOT|>")) return Family::DeepSeekCoder;
    if (has("<|start_header_id|>") && has("<|end_header_id|>")) return Family::Llama3;
    if (has("<\xEF\xBD\x9C"
            "Assistant\xEF\xBD\x9C>") &&
        has("<\xEF\xBD\x9C"
            "User\xEF\xBD\x9C>"))
        return Family::DeepSeek3;
    std::string head = t.substr(0, 60);
    for (char& c : head)
        if (c == '\n' || c == '\r' || c == '\t') c = ' ';
    throw Error(source + ": tokenizer.chat_template is not one KV Lens recognises (it begins '" +
                head + (t.size() > 60 ? "...'" : "'") +
                "; known: Llama 3, ChatML, Mistral [INST], Llama 2, Gemma, Phi-3, DeepSeek): send "
                "plain text, with the turn markers written into the prompt yourself");
}

std::string ChatTemplate::apply(Family f, const std::string& system, const std::string& user) {
    std::string s;
    switch (f) {
        case Family::Llama3:
            if (!system.empty())
                s += "<|start_header_id|>system<|end_header_id|>\n\n" + trim(system) + "<|eot_id|>";
            s += "<|start_header_id|>user<|end_header_id|>\n\n" + trim(user) + "<|eot_id|>";
            return s + "<|start_header_id|>assistant<|end_header_id|>\n\n";
        case Family::ChatML:
            if (!system.empty()) s += "<|im_start|>system\n" + system + "<|im_end|>\n";
            return s + "<|im_start|>user\n" + user + "<|im_end|>\n<|im_start|>assistant\n";
        case Family::MistralV7:
            if (!system.empty()) s += "[SYSTEM_PROMPT] " + system + "[/SYSTEM_PROMPT]";
            return s + "[INST] " + user + "[/INST]";
        case Family::MistralV1:
        case Family::MistralV3:
        case Family::MistralV3Tekken: {
            const std::string lead = f == Family::MistralV1 ? " " : "";
            const std::string trail = f == Family::MistralV3Tekken ? "" : " ";
            s = lead + "[INST]" + trail;
            if (!system.empty()) s += system + "\n\n";
            return s + user + lead + "[/INST]";
        }
        case Family::Llama2:
            s = "[INST] ";
            if (!system.empty()) s += "<<SYS>>\n" + system + "\n<</SYS>>\n\n";
            return s + user + " [/INST]";
        case Family::Gemma:
            // Gemma has no system role: the system text opens the user turn.
            s = "<start_of_turn>user\n";
            if (!trim(system).empty()) s += trim(system) + "\n\n";
            return s + trim(user) + "<end_of_turn>\n<start_of_turn>model\n";
        case Family::Phi3:
            if (!system.empty()) s += "<|system|>\n" + system + "<|end|>\n";
            return s + "<|user|>\n" + user + "<|end|>\n<|assistant|>\n";
        case Family::DeepSeekCoder:
            return system + "### Instruction:\n" + user + "\n### Response:\n";
        case Family::DeepSeek3:
            if (!system.empty()) s += system + "\n\n";
            return s +
                   "<\xEF\xBD\x9C"
                   "User\xEF\xBD\x9C>" +
                   user +
                   "<\xEF\xBD\x9C"
                   "Assistant\xEF\xBD\x9C>";
    }
    return user;
}

}  // namespace kvlens
