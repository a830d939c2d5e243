// kvlens generate: prefill the prompt, then decode with the full KV cache,
// streaming text to stdout (or one JSON object with --json).
#include <algorithm>
#include <cstdio>
#include <vector>
#include <nlohmann/json.hpp>

#include "app/ChatOptions.h"
#include "app/CommandLine.h"
#include "app/Commands.h"
#include "app/ModelOptions.h"
#include "app/ProgressBar.h"
#include "engine/model/Generator.h"

namespace kvlens {
namespace {

// The k largest logits as [[id, logit], ...], best first (ties to the lower id).
nlohmann::json topLogits(const at::Tensor& logits, int64_t k) {
    nlohmann::json out = nlohmann::json::array();
    if (!logits.defined()) return out;
    const at::Tensor l = logits.to(at::kFloat).contiguous().view({-1});
    const float* p = l.data_ptr<float>();
    std::vector<int32_t> ids(size_t(l.numel()));
    for (size_t i = 0; i < ids.size(); ++i) ids[i] = int32_t(i);
    const size_t n = std::min(ids.size(), size_t(k));
    std::partial_sort(ids.begin(), ids.begin() + n, ids.end(),
                      [&](int32_t a, int32_t b) { return p[a] > p[b] || (p[a] == p[b] && a < b); });
    for (size_t i = 0; i < n; ++i) out.push_back({ids[i], double(p[ids[i]])});
    return out;
}

}  // namespace


int runGenerate(const std::vector<std::string>& argv) {
    std::set<std::string> valueFlags = ModelOptions::flags();
    valueFlags.insert({"--prompt", "--prompt-file", "-n", "--seed", "--temperature", "--top-k",
                       "--top-p", "--system"});
    CommandLine args("generate", argv, valueFlags,
                     {"--ignore-eos", "--no-bos", "--special", "--chat", "--json", "--help"});
    if (args.has("--help")) {
        std::fputs(
            "usage: kvlens generate [--model M] (--prompt TEXT | --prompt-file PATH) [-n N]\n"
            "       [--temperature T] [--top-k K] [--top-p P] [--seed S] [--ignore-eos] [--no-bos] [--special]\n"
            "       [--chat [--system TEXT]]\n"
            "       [--dtype auto|f32|bf16] [--device cpu|cuda] [--threads N] [--sliding-window apply|ignore] [--json]\n"
            "  greedy (argmax, ties to the lowest id) unless --temperature > 0; stops at EOS\n"
            "  unless --ignore-eos, after N tokens (default 64), or at the model's context.\n"
            "  --json prints {\"prompt_token_ids\", \"generated_token_ids\", \"text\", \"first_step_top8\"} only\n"
            "  (first_step_top8: the 8 best [id, logit] after the prompt, as llamacpp-reference prints them).\n"
            "  --sliding-window apply|ignore: a model's sliding window (Phi-3, Mistral v0.1, Gemma) is applied\n"
            "  here and by the compression commands (their scores, and a local layer keeps at most its\n"
            "  window); ignore attends over all (as llama.cpp runs Mistral). Every model command takes it.\n",
            stdout);
        return 0;
    }
    const std::string text = readPrompt(args);
    GenerationOptions options;
    options.maxNewTokens = args.getInt("-n", 64, 0, 1 << 24);
    options.ignoreEos = args.has("--ignore-eos");
    options.sampling.temperature = args.getDouble("--temperature", 0.0);
    options.sampling.topK = args.getInt("--top-k", 0, 0, 1 << 30);
    options.sampling.topP = args.getDouble("--top-p", 1.0);
    options.sampling.seed = args.getSeed("--seed", 0);
    Sampler check(options.sampling);  // rejects bad sampling flags before the load

    const ModelOptions modelOptions = ModelOptions::fromCommandLine(args);
    const ChatPrompt prompt = ChatOptions::apply(args, modelOptions.model, text);  // before the load
    LoadedModel loaded = modelOptions.load();
    const Tokenizer& tokenizer = *loaded.tokenizer;
    const std::vector<int32_t> ids =
        tokenizer.encode(prompt.text, !args.has("--no-bos") && tokenizer.addBosByDefault(), prompt.parseSpecial);
    options.stopIds = tokenizer.endOfGeneration();

    const bool json = args.has("--json");
    ProgressBar prefillBar("prefill of " + std::to_string(ids.size()) + " tokens");
    options.prefillProgress = [&](double f, const std::string& what) { prefillBar.update(f, what); };
    int32_t previous = ids.empty() ? -1 : ids.back();
    Generator generator(*loaded.model);
    GenerationResult result = generator.generate(ids, options, [&](int32_t token) {
        prefillBar.finish();
        if (!json) {
            const std::string bytes = tokenizer.tokenBytes(token, previous);
            std::fwrite(bytes.data(), 1, bytes.size(), stdout);
            std::fflush(stdout);
        }
        previous = token;
        return true;
    });
    if (json) {
        nlohmann::json j = {{"prompt_token_ids", ids},
                            {"generated_token_ids", result.tokens},
                            {"text", tokenizer.decode(result.tokens)},
                            {"first_step_top8", topLogits(result.promptLogits, 8)}};
        std::printf("%s\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    } else {
        std::printf("\n");
        std::fflush(stdout);
    }
    const double decodeRate =
        result.decodeSteps > 0 ? double(result.decodeSteps) / result.decodeSeconds : 0.0;
    std::fprintf(stderr,
                 "[%zu prompt tokens, %zu generated%s; prefill %.1f tok/s, decode %.1f tok/s; %s on "
                 "%s, %d threads]\n",
                 ids.size(), result.tokens.size(),
                 result.stoppedAtEos ? ", stopped at EOS"
                                     : (result.stoppedAtContext ? ", stopped at the context" : ""),
                 double(ids.size()) / result.prefillSeconds, decodeRate,
                 dtypeName(modelOptions.dtype), modelOptions.device.str().c_str(),
                 modelOptions.threads);
    return 0;
}

}  // namespace kvlens
