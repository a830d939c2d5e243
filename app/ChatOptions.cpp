// Wrapping a prompt in the model's chat template.
#include "app/ChatOptions.h"

#include "app/CommandLine.h"
#include "core/Error.h"
#include "engine/hf/HfFolder.h"
#include "engine/model/ModelLoader.h"
#include "engine/model/ModelSpec.h"
#include "engine/tokenizer/ChatTemplate.h"

namespace kvlens {

const std::set<std::string>& ChatOptions::valueFlags() {
    static const std::set<std::string> f = {"--system"};
    return f;
}

ChatPrompt ChatOptions::apply(const CommandLine& args, const std::string& model,
                              const std::string& prompt) {
    ChatPrompt out{prompt, args.has("--special")};
    if (!args.has("--chat")) {
        if (args.has("--system"))
            throw Error("--system goes with --chat (kvlens " + args.command() + " --chat ...)");
        return out;
    }
    const ModelSpec spec = ModelSpec::parse(model);
    if (spec.kind != ModelSpec::Kind::File) {
        throw Error("--chat: " + model +
                    " has no chat template (random models have no tokenizer.chat_template)");
    }
    const std::optional<std::string> chatTemplate = loadChatTemplate(model);
    if (!chatTemplate) {
        throw Error("--chat: " + spec.path +
                    (HfFolder::isFolder(spec.path) ? " has no chat_template in tokenizer_config.json"
                                                   : " has no tokenizer.chat_template") +
                    "; run without --chat");
    }
    const ChatTemplate::Family family = ChatTemplate::detect(*chatTemplate, spec.path);
    out.text = ChatTemplate::apply(family, args.get("--system", ""), prompt);
    out.parseSpecial = true;  // the template's markers are control tokens
    return out;
}

}  // namespace kvlens
