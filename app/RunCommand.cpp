// kvlens run: one prefill, one compression method, and what it costs against
// the full cache: the two continuations, agreement, KL, top-1 and KV memory.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <limits>
#include <nlohmann/json.hpp>

#include "app/ChatOptions.h"
#include "app/CommandLine.h"
#include "app/HelpText.h"
#include "app/Commands.h"
#include "app/ModelOptions.h"
#include "app/PressOptions.h"
#include "app/ProgressBar.h"
#include "app/KeptOut.h"
#include "app/RunSaver.h"
#include "core/Error.h"
#include "core/ParamsJson.h"
#include "engine/compress/Capture.h"
#include "engine/compress/DecodeCompressor.h"
#include "engine/compress/MethodEvaluator.h"
#include "engine/compress/presses/Press.h"

namespace kvlens {

// Every knob (methods::paramsJson), the scorer as the one in effect (a wrapper's own by default).
static nlohmann::json pressParamsJson(const PressParams& p) {
    nlohmann::json j = methods::paramsJson(p);
    j["scorer"] = p.scorerInEffect();
    return j;
}

static nlohmann::json runMetricsJson(const RunMetrics& m) {
    return {{"agreed_prefix", m.agreedPrefix},
            {"token_agreement", m.tokenAgreement},
            {"mean_kl", m.meanKl},
            {"kl_per_step", m.klPerStep},
            {"top1_agreement", m.top1Agreement},
            {"kv_bytes", m.bytes},
            {"kv_bytes_full", m.fullBytes},
            {"kv_bytes_allocated", m.allocatedBytes},
            {"kv_ratio", m.ratio},
            {"kv_bytes_per_layer", m.bytesPerLayer},
            {"kv_bytes_per_head", m.bytesPerHead},
            {"hit_rate", m.hitRate},
            {"hit_rate_per_layer", m.hitRatePerLayer},
            {"hit_k", m.hitK},
            {"select_ms", m.selectSeconds * 1e3},
            {"gather_ms", m.gatherSeconds * 1e3},
            {"decode_s", m.decodeSeconds}};
}

namespace {

// The methods, their knobs, the scorers and the decode forms, from the method table.
std::string runHelp() {
    std::string h =
        "usage: kvlens run [--model M] (--prompt TEXT | --prompt-file F) --method M --budget B\n"
        "       [--window W] [--kernel K] [--pool max|avg] [--beta X] [--alpha A]\n"
        "       [--gqa kv-head|query-head] [--schedule exact|factory] [--sinks S] [--seed S]\n"
        "       [--lag L] [--chunk C] [--future F] [--scorer S] [--tau1 X] [--tau2 X] [--gamma G]\n"
        "       [--lazy X] [--layer-weights W,W,...] [--sketch K] [--attn-chunk C] [--blend X|auto]\n"
        "       [--think R] [--repeat-chunk C] [--finch-chunk C] [--convention paper|kvpress]\n"
        "       [--compression-ratio R (instead of --budget)]\n"
        "       [-n N] [--dtype ...] [--device ...] [--threads N] [--special] [--chat [--system T]] [--json]\n"
        "       [--save [--session NAME] [--store PATH]] [--decode-every N] [--kept-out FILE.json]\n"
        "  methods (kvlens methods prints the whole table: knobs, needs, decode form, kvpress):\n";
    for (const MethodInfo& m : methods::all()) {
        std::string knobs;
        for (const KnobInfo& k : methods::knobs())
            if (m.knobs.has(k.knob) && k.knob != Knob::Scorer)
                knobs += (knobs.empty() ? "" : ", ") + std::string(k.flag) + "\x1f" + k.defaultText;
        if (m.takesScorer) knobs += std::string(knobs.empty() ? "" : ", ") + "--scorer\x1f" + m.defaultScorer;
        h += foldedHelp("    " + std::string(m.name) + ": " + m.summary + (knobs.empty() ? "" : " (" + knobs + ")"), 6);
    }
    h += foldedHelp("  --scorer: what " + methods::listWhere([](const MethodInfo& m) { return m.takesScorer; }) +
                    " rank by: " + methods::listWhere([](const MethodInfo& m) { return m.usableAsScorer; }, " or ") +
                    " (the scorer's own knobs come with it)",
                4);
    h += "  --think R: ThinK over any method: prunes (zeroes) the share R of each kept prompt key's channels\n"
         "           of lowest window-query x key energy; the KV bytes leave them out, kv_bytes_allocated not\n"
         "  --budget: KV entries per head, window included (128), or a share of the prompt (25%)\n"
         "  prints both greedy continuations of N tokens (default 64) and the metrics\n"
         "  --save: keep the run (parameters, selection, metrics, text) in session NAME\n"
         "  (default 'default') of the store (see kvlens sessions --help)\n"
         "  --kept-out FILE.json: the kept positions [layer][head], the layer budgets and the prompt's\n"
         "  token ids as JSON (for Python, or kvpress's indices)\n";
    h += foldedHelp("  --convention kvpress: keep exactly the positions kvpress's press keeps (a ratio budget as "
                    "int(T x (1 - r)), --compression-ratio r; avg pooling), for " +
                        methods::listWhere([](const MethodInfo& m) { return m.kvpressForm != KvpressForm::None; }) +
                        " (paper, the default: the papers' forms)",
                    4);
    h += foldedHelp(
        "  --decode-every N: keep the cache at the budget while decoding, compressing every N steps by the "
        "method's own rule (" +
            methods::listWhere([](const MethodInfo& m) { return m.decode == DecodeForm::Own; }) + "), or " +
            methods::listWhere([](const MethodInfo& m) { return m.decode == DecodeForm::ViaScorer; }) +
            " by their scorer's (--scorer " +
            methods::listWhere([](const MethodInfo& m) { return m.usableAsScorer && m.decode == DecodeForm::Own; },
                               " or ") +
            "); prints the cache's entries per head over the steps",
        4);
    return h;
}

}  // namespace

int runRun(const std::vector<std::string>& argv) {
    std::set<std::string> valueFlags = ModelOptions::flags();
    valueFlags.insert(PressOptions::flags().begin(), PressOptions::flags().end());
    valueFlags.insert({"--prompt", "--prompt-file", "-n", "--system", "--decode-every", "--kept-out"});
    valueFlags.insert(RunSaver::valueFlags().begin(), RunSaver::valueFlags().end());
    CommandLine args("run", argv, valueFlags, {"--json", "--no-bos", "--special", "--chat", "--save", "--help"});
    if (args.has("--help")) {
        std::fputs(runHelp().c_str(), stdout);
        return 0;
    }
    // A bad flag is named before a missing budget.
    PressParams params = PressOptions::fromCommandLine(args);
    if (!PressOptions::hasBudget(args) && methods::named(params.method).id != MethodId::Full) {
        throw Error("--budget is required (entries per head, e.g. 128, or a share, e.g. 25%, or --compression-ratio r)");
    }
    // Settings that do not depend on the prompt fail before the model loads.
    params.validateSettings();
    const int64_t n = args.getInt("-n", 64, 1, 1 << 20);
    std::unique_ptr<DecodeCompressor> decode;
    if (args.has("--decode-every")) {
        decode = std::make_unique<DecodeCompressor>(params, args.getInt("--decode-every", 1, -(1 << 20), 1 << 20));
    }
    const std::unique_ptr<RunSaver> saver = RunSaver::fromCommandLine(args);  // a bad store fails here
    const std::unique_ptr<KeptOut> keptOut = KeptOut::fromCommandLine(args);  // so does a bad --kept-out
    const ModelOptions modelOptions = ModelOptions::fromCommandLine(args);
    const ChatPrompt chat = ChatOptions::apply(args, modelOptions.model, readPrompt(args));
    const std::string& prompt = chat.text;  // what is tokenized, and stored
    LoadedModel loaded = modelOptions.load();
    if (decode) DecodeCompressor::requireModelSupport(loaded.model->config());  // before the prefill
    const std::vector<int32_t> ids = loaded.tokenizer->encode(
        prompt, !args.has("--no-bos") && loaded.tokenizer->addBosByDefault(), chat.parseSpecial);
    // The budget and window against the prompt fail before its prefill (seconds on a long one),
    // with the window queries the capture will keep.
    const int64_t T = static_cast<int64_t>(ids.size());
    params.validate(T, Capture::windowCapacityFor(T));
    Press::requireModelSupport(loaded.model->config(), T, params);  // a sliding window, Gemma's soft-cap
    auto capture = captureTokens(loaded, ids, n);
    MethodEvaluator evaluator(*loaded.model, capture, n);
    prepareMethod(loaded, *capture, params);
    const auto t0 = std::chrono::steady_clock::now();
    const Selection selection = Press::create(params.method)->select(*capture, params);
    const double selectSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const RunMetrics m = decode ? evaluator.evaluate(selection, *decode, selectSeconds)
                                : evaluator.evaluate(selection, selectSeconds);
    const Tokenizer& tok = *loaded.tokenizer;
    if (keptOut) {
        keptOut->begin(modelOptions.model, ids);
        keptOut->add(params, selection, m);
    }
    if (saver) {
        saver->begin(loaded, modelOptions, prompt, !args.has("--no-bos"), n, *capture);
        saver->save(params, selection, m, tok.decode(m.fullTokens), tok.decode(m.tokens));
        saver->report();
    }

    if (args.has("--json")) {
        nlohmann::json j = {{"model", modelOptions.model},
                            {"prompt_tokens", capture->promptLength()},
                            {"capture_bytes", capture->bytes()},
                            {"params", pressParamsJson(params)},
                            {"layer_budgets", selection.layerBudgets},
                            {"metrics", runMetricsJson(m)},
                            {"full_token_ids", m.fullTokens},
                            {"token_ids", m.tokens},
                            {"full_text", tok.decode(m.fullTokens)},
                            {"text", tok.decode(m.tokens)}};
        if (decode) {
            j["decode_every"] = decode->every();
            j["cache_entries"] = m.cacheEntries;  // entries per head (mean, rounded up) after each answer token but the last
        }
        std::printf("%s\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
        return 0;
    }
    std::printf("method     %s\n", params.describe().c_str());
    std::printf("prompt     %lld tokens; capture %.2f MB\n", (long long)capture->promptLength(),
                double(capture->bytes()) / 1e6);
    std::printf("KV cache   %.3f MB of %.3f MB (%.1f%%); %.3f MB allocated with the room for %lld decode steps\n",
                double(m.bytes) / 1e6, double(m.fullBytes) / 1e6, 100.0 * m.ratio, double(m.allocatedBytes) / 1e6,
                (long long)n);
    std::printf("agreement  %lld of %lld tokens before the first divergence, %.1f%% overall\n",
                (long long)m.agreedPrefix, (long long)n, 100.0 * m.tokenAgreement);
    std::printf("next token mean KL %.4g nats, top-1 agreement %.1f%% (teacher-forced, %lld steps)\n",
                m.meanKl, 100.0 * m.top1Agreement, (long long)n);
    std::printf("hit rate   %.1f%% of each query head's top-%lld attended prompt positions kept (%lld steps)\n",
                100.0 * m.hitRate, (long long)m.hitK, (long long)m.hitSteps);
    std::printf("timing     select %.1f ms, gather %.1f ms, decode %.2f s\n", m.selectSeconds * 1e3,
                m.gatherSeconds * 1e3, m.decodeSeconds);
    if (decode && !m.cacheEntries.empty()) {
        // The cache over the steps: its range, and its entries per head every few steps.
        const auto [lo, hi] = std::minmax_element(m.cacheEntries.begin(), m.cacheEntries.end());
        // AdaKV's heads and PyramidKV's and per-layer's layers share the budget: it holds on average.
        const bool shared = params.reads(Knob::Alpha) || params.reads(Knob::Beta) || params.reads(Knob::LayerWeights);
        std::printf("decoding   compressed to %lld entries per head%s every %lld steps: the cache held %lld-%lld "
                    "entries per head over %zu steps\n           after step",
                    (long long)decode->budget(), shared ? " on average" : "", (long long)decode->every(),
                    (long long)*lo, (long long)*hi,
                    m.cacheEntries.size());
        const size_t stride = std::max<size_t>(1, m.cacheEntries.size() / 16);
        for (size_t i = 0; i < m.cacheEntries.size(); i += stride)
            std::printf(" %zu:%lld", i + 1, (long long)m.cacheEntries[i]);
        std::printf("\n");
    }
    std::printf("\n--- full cache\n%s\n\n--- %s\n%s\n", tok.decode(m.fullTokens).c_str(),
                params.method.c_str(), tok.decode(m.tokens).c_str());
    return 0;
}

}  // namespace kvlens
