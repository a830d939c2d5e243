#include "app/ModelOptions.h"

#include "engine/tokenizer/Utf8.h"

#include <ATen/Parallel.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>

#include "app/ProgressBar.h"
#include "core/Error.h"

namespace kvlens {

const std::set<std::string>& ModelOptions::flags() {
    static const std::set<std::string> f = {"--model", "--dtype", "--device", "--threads", "--sliding-window"};
    return f;
}

ModelOptions ModelOptions::fromCommandLine(const CommandLine& args) {
    ModelOptions o;
    o.model = ModelSpec::resolveDefault(args.get("--model"), args.has("--model"));
    o.device = parseDevice(args.get("--device", "cpu"));
    o.dtype = resolveDType(parseDType(args.get("--dtype", "auto")), o.device);
    const int hw = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    o.threads = static_cast<int>(args.getInt("--threads", hw, 1, 1024));
    at::set_num_threads(o.threads);
    const std::string window = args.get("--sliding-window", "apply");
    if (window != "apply" && window != "ignore") {
        throw Error("--sliding-window '" + window + "': apply or ignore");
    }
    o.ignoreSlidingWindow = window == "ignore";
    return o;
}

LoadedModel ModelOptions::load() const {
    ProgressBar bar("loading " + model);
    LoadedModel m = loadModel(model, device, dtype,
                              [&](double f, const std::string& what) { bar.update(f, what); });
    bar.finish();
    if (ignoreSlidingWindow) m.model->ignoreSlidingWindow();
    return m;
}

std::shared_ptr<Capture> capturePrompt(LoadedModel& loaded, const std::string& prompt, bool addBos,
                                       int64_t newTokens,
                                       const std::vector<std::pair<int64_t, int64_t>>& fullQueryHeads,
                                       bool parseSpecial) {
    return captureTokens(loaded, loaded.tokenizer->encode(prompt, addBos && loaded.tokenizer->addBosByDefault(),
                                                          parseSpecial),
                         newTokens, fullQueryHeads);
}

std::shared_ptr<Capture> captureTokens(LoadedModel& loaded, const std::vector<int32_t>& ids, int64_t newTokens,
                                       const std::vector<std::pair<int64_t, int64_t>>& fullQueryHeads,
                                       const std::function<void(double, const std::string&)>& progress) {
    const int64_t context = loaded.model->config().contextLength;
    const int64_t promptTokens = static_cast<int64_t>(ids.size());
    if (promptTokens <= context && promptTokens + newTokens > context) {
        throw Error("-n " + std::to_string(newTokens) + " does not fit: the prompt is " +
                    std::to_string(promptTokens) + " tokens of the model's context of " +
                    std::to_string(context));
    }
    std::optional<ProgressBar> bar;
    if (!progress) bar.emplace("prefill of " + std::to_string(ids.size()) + " tokens");
    auto capture = Capture::fromPrefill(*loaded.model, ids, [&](double f, const std::string& what) {
        if (bar) bar->update(f, what);
        else progress(f, what);
    }, fullQueryHeads, newTokens);
    if (bar) bar->finish();
    capture->setRepeatPrompt(RepeatPrompt::from(*loaded.tokenizer));
    return capture;
}

void prepareMethod(LoadedModel& loaded, const Capture& capture, const PressParams& params) {
    const std::string what = capture.pendingWork(params);
    if (what.empty()) return;
    ProgressBar bar(what + ", " + std::to_string(capture.promptLength()) + " tokens");
    capture.keepScoresFor(*loaded.model, params, [&](double f, const std::string& w) { bar.update(f, w); });
    bar.finish();
}

namespace {

// Prompts are UTF-8 text: a byte that is not is refused (never replaced), so
// that what is tokenized is exactly what the user wrote.
const std::string& requireUtf8(const std::string& prompt, const std::string& what) {
    const size_t bad = Utf8::firstInvalid(prompt);
    if (bad != std::string::npos) {
        char byte[8];
        std::snprintf(byte, sizeof byte, "0x%02X", unsigned(static_cast<unsigned char>(prompt[bad])));
        throw Error(what + ": is not UTF-8 text (byte " + std::to_string(bad) + " is " + byte +
                    "); KV Lens reads prompts as UTF-8");
    }
    return prompt;
}

}  // namespace

std::string readFlagFile(const CommandLine& args, const std::string& flag, const std::string& what) {
    const std::string path = args.get(flag);
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error(flag + " " + path + ": cannot read: " + std::strerror(errno));
    std::ostringstream text;
    text << in.rdbuf();
    if (text.str().empty()) throw Error(flag + " " + path + ": the " + what + " is empty");
    return text.str();
}

std::string readPrompt(const CommandLine& args) {
    if (args.has("--prompt") && args.has("--prompt-file")) {
        throw Error("give either --prompt or --prompt-file, not both");
    }
    if (args.has("--prompt-file")) {
        const std::string path = args.get("--prompt-file");
        return requireUtf8(readFlagFile(args, "--prompt-file", "prompt"), "--prompt-file " + path);
    }
    if (!args.has("--prompt")) throw Error("no prompt: pass --prompt TEXT or --prompt-file PATH");
    const std::string prompt = args.get("--prompt");
    if (prompt.empty()) throw Error("--prompt: the prompt is empty");
    return requireUtf8(prompt, "--prompt");
}

}  // namespace kvlens
