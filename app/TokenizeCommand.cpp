// kvlens tokenize: the token ids and pieces of a prompt.
#include <cstdio>
#include <nlohmann/json.hpp>

#include "app/ChatOptions.h"
#include "app/CommandLine.h"
#include "app/Commands.h"
#include "app/ModelOptions.h"
#include "engine/model/ModelLoader.h"
#include "engine/model/ModelSpec.h"

namespace kvlens {

int runTokenize(const std::vector<std::string>& argv) {
    CommandLine args("tokenize", argv, {"--model", "--prompt", "--prompt-file", "--system"},
                     {"--no-bos", "--special", "--chat", "--json", "--help"});
    if (args.has("--help")) {
        std::fputs(
            "usage: kvlens tokenize [--model M] (--prompt TEXT | --prompt-file PATH) [--no-bos] "
            "[--special] [--chat [--system TEXT]] [--json]\n  one line per token: position, id, piece; --special reads control\n"
            "  tokens' texts (\"<|eot_id|>\") in the prompt as those tokens; --chat wraps the prompt as one\n"
            "  user turn of the model's chat template\n",
            stdout);
        return 0;
    }
    const std::string model = ModelSpec::resolveDefault(args.get("--model"), args.has("--model"));
    const ChatPrompt prompt = ChatOptions::apply(args, model, readPrompt(args));
    auto tokenizer = loadTokenizer(model);
    const std::vector<int32_t> ids =
        tokenizer->encode(prompt.text, !args.has("--no-bos") && tokenizer->addBosByDefault(), prompt.parseSpecial);
    if (args.has("--json")) {
        nlohmann::json pieces = nlohmann::json::array();
        for (int32_t id : ids) pieces.push_back(tokenizer->piece(id));
        nlohmann::json j = {{"token_ids", ids}, {"pieces", pieces}};
        std::printf("%s\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
        return 0;
    }
    for (size_t i = 0; i < ids.size(); ++i) {
        std::printf("%6zu %8d  %s\n", i, ids[i], nlohmann::json(tokenizer->piece(ids[i]))
                                                   .dump(-1, ' ', false,
                                                         nlohmann::json::error_handler_t::replace)
                                                   .c_str());
    }
    std::fprintf(stderr, "%zu tokens\n", ids.size());
    return 0;
}

}  // namespace kvlens
