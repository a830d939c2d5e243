// kvlens compare: one prefill, then every (method, budget) against the full
// cache: KV memory, ratio, token agreement, KL and top-1 agreement.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>

#include "app/ChatOptions.h"
#include "app/CommandLine.h"
#include "app/Commands.h"
#include "app/ModelOptions.h"
#include "app/PressOptions.h"
#include "app/ProgressBar.h"
#include "app/KeptOut.h"
#include "app/RunSaver.h"
#include "core/Error.h"
#include "core/Methods.h"
#include "engine/compress/Capture.h"
#include "engine/compress/MethodEvaluator.h"
#include "engine/compress/DecodeCompressor.h"
#include "engine/compress/presses/Press.h"

namespace kvlens {

int runCompare(const std::vector<std::string>& argv) {
    std::set<std::string> valueFlags = ModelOptions::flags();
    valueFlags.insert(PressOptions::flags().begin(), PressOptions::flags().end());
    valueFlags.insert({"--prompt", "--prompt-file", "-n", "--methods", "--budgets", "--system", "--decode-every", "--kept-out"});
    valueFlags.insert(RunSaver::valueFlags().begin(), RunSaver::valueFlags().end());
    CommandLine args("compare", argv, valueFlags, {"--csv", "--no-bos", "--special", "--chat", "--save", "--help"});
    if (args.has("--help")) {
        // The default list, every method of the table, wrapped under "--methods".
        std::string list = "       [--methods ";
        size_t lineStart = 0;
        for (size_t i = 0; i < methods::names().size(); ++i) {
            const std::string item = methods::names()[i] + (i + 1 < methods::names().size() ? "," : "]\n");
            if (list.size() - lineStart + item.size() > 100) {
                list += "\n";
                lineStart = list.size();
                list += "        ";
            }
            list += item;
        }
        std::fputs(("usage: kvlens compare [--model M] (--prompt TEXT | --prompt-file F)\n" + list).c_str(), stdout);
        std::fputs(
            "       [--budgets 64,128,256] [method flags as for run] [-n N] [--decode-every N] [--csv]\n"
            "       [--special] [--chat [--system T]]\n"
            "       [--save [--session NAME] [--store PATH]] [--kept-out FILE.json]\n"
            "  one prefill, then every (method, budget); a table (or CSV) of KV MB, ratio,\n"
            "  tokens agreed before the first divergence, overall agreement, mean KL, top-1,\n"
            "  hit rate (share of each query head's top-16 attended prompt positions kept)\n"
            "  --decode-every N: every run but full keeps its cache at the budget while decoding,\n"
            "  compressing every N steps (methods with a decode form, as run's --decode-every);\n"
            "  the table adds each run's largest cache, entries per head\n"
            "  --save: keep every run, as it finishes, in session NAME (default 'default')\n"
            "  --kept-out FILE.json: every run's kept positions [layer][head] and layer budgets, with\n"
            "  the prompt's token ids, as JSON (rewritten as each run finishes)\n",
            stdout);
        return 0;
    }
    std::string everyMethod;  // the default --methods: the whole table
    for (const std::string& m : methods::names()) everyMethod += (everyMethod.empty() ? "" : ",") + m;
    std::vector<PressParams> runs = PressOptions::sweepFromCommandLine(
        args, everyMethod, "64,128,256");
    const int64_t n = args.getInt("-n", 64, 1, 1 << 20);
    const int64_t every = args.has("--decode-every") ? args.getInt("--decode-every", 1, -(1 << 20), 1 << 20) : 0;
    if (args.has("--decode-every")) DecodeCompressor::checkEvery(every);
    // Each run's decode rule (none for full, whose cache keeps everything): a method without
    // one, or a ratio budget, throws naming --decode-every.
    auto decodeRule = [every](const PressParams& p) -> std::unique_ptr<DecodeCompressor> {
        if (every == 0 || p.isFull()) return nullptr;
        return std::make_unique<DecodeCompressor>(p, every);
    };
    // A ratio budget fails every method alike: one line, not a line per method left out.
    for (const PressParams& p : runs)
        if (every > 0 && !p.isFull() && p.budget <= 0) decodeRule(p);
    const std::unique_ptr<RunSaver> saver = RunSaver::fromCommandLine(args);  // a bad store fails here
    const std::unique_ptr<KeptOut> keptOut = KeptOut::fromCommandLine(args);  // so does a bad --kept-out
    const ModelOptions modelOptions = ModelOptions::fromCommandLine(args);
    const ChatPrompt chat = ChatOptions::apply(args, modelOptions.model, readPrompt(args));
    const std::string& prompt = chat.text;  // what is tokenized, and stored
    LoadedModel loaded = modelOptions.load();
    if (every > 0) DecodeCompressor::requireModelSupport(loaded.model->config());  // before the prefill
    const std::vector<int32_t> ids = loaded.tokenizer->encode(
        prompt, !args.has("--no-bos") && loaded.tokenizer->addBosByDefault(), chat.parseSpecial);
    // Every run's settings against the prompt, before its prefill (seconds on a long one).
    const int64_t T = static_cast<int64_t>(ids.size());
    if (args.has("--methods")) {
        for (const PressParams& p : runs) {
            p.validate(T, Capture::windowCapacityFor(T));
            Press::requireModelSupport(loaded.model->config(), T, p);
            decodeRule(p);
        }
    } else {
        // The default list names every method: one whose own settings cannot fit this prompt
        // and budget (LagKV's tail at a small budget, say) is left out with its reason, not
        // the whole comparison.
        std::vector<PressParams> fitting;
        for (const PressParams& p : runs) {
            try {
                p.validate(T, Capture::windowCapacityFor(T));
                Press::requireModelSupport(loaded.model->config(), T, p);  // a sliding window, Gemma's soft-cap
                decodeRule(p);  // with --decode-every: methods without a decode form are left out
                fitting.push_back(p);
            } catch (const Error& e) {
                std::fprintf(stderr, "compare: left out %s: %s\n", p.describe().c_str(), e.what());
            }
        }
        runs = std::move(fitting);
    }
    auto capture = captureTokens(loaded, ids, n);
    MethodEvaluator evaluator(*loaded.model, capture, n);
    if (saver) saver->begin(loaded, modelOptions, prompt, !args.has("--no-bos"), n, *capture);
    if (keptOut) keptOut->begin(modelOptions.model, ids);

    const bool csv = args.has("--csv");
    if (csv) {
        std::printf("method,budget,params,kv_bytes,kv_mb,ratio,agreed_prefix,token_agreement,mean_kl,top1_agreement,"
                    "select_ms,hit_rate,decode_every,max_cache_entries\n");
    } else {
        std::printf("prompt %lld tokens, %lld new tokens per run, %s\n", (long long)capture->promptLength(),
                    (long long)n, modelOptions.model.c_str());
        if (every > 0) {
            std::printf("compressed every %lld decode steps; cache: the largest, entries per head (the mean over "
                        "layers and heads, rounded up)\n",
                        (long long)every);
        }
        std::printf("\n%-15s %7s %4s %10s %7s %10s %9s %10s %7s %6s%s\n", "method", "budget", "W", "KV MB", "ratio",
                    "agreed@div", "agreement", "mean KL", "top-1", "hit", every > 0 ? "   cache" : "");
    }
    for (size_t i = 0; i < runs.size(); ++i) {
        const PressParams& p = runs[i];
        prepareMethod(loaded, *capture, p);
        ProgressBar bar("run " + std::to_string(i + 1) + "/" + std::to_string(runs.size()));
        bar.update(0.0, p.describe());
        const auto selectStart = std::chrono::steady_clock::now();
        const Selection selection = Press::create(p.method)->select(*capture, p);
        const double selectSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - selectStart).count();
        const std::unique_ptr<DecodeCompressor> rule = decodeRule(p);
        const RunMetrics m = rule ? evaluator.evaluate(selection, *rule, selectSeconds)
                                  : evaluator.evaluate(selection, selectSeconds);
        // The largest cache while decoding, entries per head ("" without compression).
        const std::string largest =
            m.cacheEntries.empty() ? ""
                                   : std::to_string(*std::max_element(m.cacheEntries.begin(), m.cacheEntries.end()));
        bar.finish();
        if (saver) {
            saver->save(p, selection, m, loaded.tokenizer->decode(m.fullTokens), loaded.tokenizer->decode(m.tokens));
        }
        if (keptOut) keptOut->add(p, selection, m);
        const std::string budget = budgetLabel(p);
        if (csv) {
            std::printf("%s,%s,\"%s\",%lld,%.6f,%.6f,%lld,%.6f,%.8g,%.6f,%.3f,%.6f,%lld,%s\n", p.method.c_str(),
                        budget.c_str(), p.describe().c_str(), (long long)m.bytes, double(m.bytes) / 1e6,
                        m.ratio, (long long)m.agreedPrefix, m.tokenAgreement, m.meanKl,
                        m.top1Agreement, m.selectSeconds * 1e3, m.hitRate, (long long)m.decodeEvery, largest.c_str());
        } else {
            const std::string window = p.usesWindow() ? std::to_string(p.window) : "-";
            std::printf("%-15s %7s %4s %10.4f %6.1f%% %6lld/%-3lld %8.1f%% %10.4g %6.1f%% %5.1f%%%s\n",
                        p.method.c_str(), budget.c_str(), window.c_str(), double(m.bytes) / 1e6, 100.0 * m.ratio,
                        (long long)m.agreedPrefix, (long long)n, 100.0 * m.tokenAgreement, m.meanKl,
                        100.0 * m.top1Agreement, 100.0 * m.hitRate,
                        every > 0 ? (" " + std::string(7 - std::min<size_t>(7, largest.size()), ' ') + largest).c_str()
                                  : "");
        }
        std::fflush(stdout);
    }
    if (saver) saver->report();
    return 0;
}

}  // namespace kvlens
