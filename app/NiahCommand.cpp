// kvlens niah: needle-in-a-haystack sweeps with ground truth. Per length, depth and
// sample: one generated prompt, one capture, then every (method, budget) by
// re-selection on it: the greedy answer on the compressed cache scored against the
// needle's value (contains, exact), the share of the needle's positions each
// layer's heads kept, and agreement / KL against the full cache.
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "app/CommandLine.h"
#include "app/Commands.h"
#include "app/ModelOptions.h"
#include "app/NiahSweep.h"
#include "app/PressOptions.h"
#include "app/ProgressBar.h"
#include "app/RunSaver.h"
#include "core/Error.h"
#include "engine/compress/Capture.h"
#include "engine/compress/MethodEvaluator.h"
#include "engine/compress/presses/Press.h"
#include "engine/eval/AnswerMetrics.h"
#include "engine/eval/NeedleKept.h"
#include "engine/eval/NeedleTask.h"
#include "engine/eval/NeedleTaskName.h"
#include "sessions/RunRecorder.h"
#include "sessions/SessionStore.h"

namespace kvlens {

namespace {

// The most captures (prefills) a sweep runs without --yes.
constexpr int64_t kCapturesWithoutYes = 10000;

struct Totals {
    double contains = 0, exact = 0, kept = 0, agreement = 0, kl = 0, kv = 0;
    int runs = 0;
};

}  // namespace

int runNiah(const std::vector<std::string>& argv) {
    std::set<std::string> valueFlags = ModelOptions::flags();
    valueFlags.insert(PressOptions::flags().begin(), PressOptions::flags().end());
    valueFlags.insert({"--lengths", "--depths", "--samples", "--task", "--task-seed", "--filler", "-n", "--methods",
                       "--budgets", "--save-prompts", "--shard"});
    valueFlags.insert(RunSaver::valueFlags().begin(), RunSaver::valueFlags().end());
    CommandLine args("niah", argv, valueFlags, {"--csv", "--no-bos", "--question-after", "--save", "--help", "--yes"});
    if (args.has("--help")) {
        std::fputs(
            "usage: kvlens niah [--model M] [--lengths 1k,2k,4k] [--depths 0:100:10] [--samples N]\n"
            "       [--task single|multikey|multivalue|multiquery|kv|vt] [--task-seed S] [--filler FILE]\n"
            "       [--methods full,snapkv,pyramidkv,streamingllm,h2o,random] [--budgets 64,128,256]\n"
            "       [method flags as for run] [-n N] [--question-after] [--csv] [--save-prompts DIR]\n"
            "       [--save [--session NAME] [--store PATH]] [--shard I/N]\n"
            "  needle-in-a-haystack with ground truth: per length, depth and sample one generated\n"
            "  prompt (a needle with a value at the depth, filler around it, the question last) and\n"
            "  one capture; every method and budget by re-selection on it. Per run: contains (the\n"
            "  share of expected values in the greedy answer of -n tokens, default 16), exact (the\n"
            "  answer's first line is the value), needle kept (the share of the needle's token\n"
            "  positions each head kept, mean over heads and layers), agreement and KL against the\n"
            "  full cache; then the means per method and budget. --csv: one row per run.\n"
            "  --question-after: compress the context alone, then append the question to what\n"
            "  each method kept (query-agnostic, kvpress's default); without it the question is\n"
            "  inside the prompt and its window (query-aware, as in SnapKV's paper).\n"
            "  --save-prompts DIR: each sample's prompt as DIR/L<length>_d<depth>_s<sample>.txt, with\n"
            "  its answers and needle token positions in a .json beside it (open one in run/inspect).\n"
            "  --save: every run into the session store (session 'niah' by default) as it is\n"
            "  measured; run again, a sweep skips what the session already holds (a killed sweep\n"
            "  resumes). --shard I/N: only samples I, I+N, I+2N, ... (1-based), e.g. one store per\n"
            "  shard, joined by 'kvlens sessions merge'.\n"
            "  A sweep of more than 10000 captures (lengths x depths x samples, per shard) runs only\n"
            "  with --yes.\n",
            stdout);
        return 0;
    }
    std::vector<int64_t> lengths;
    for (const std::string& item : splitList(args.get("--lengths", "1k,2k,4k"), "--lengths"))
        lengths.push_back(parseTokenCount(item, "--lengths"));
    const std::vector<double> depths = parseDepths(args.get("--depths", "0:100:10"), "--depths");
    const int64_t samples = args.getInt("--samples", 1, 1, 1 << 20);
    const NeedleKind kind = needleKindNamed(args.get("--task", "single"));
    const uint64_t taskSeed = args.getSeed("--task-seed", 1);
    const std::string filler = args.has("--filler") ? readFlagFile(args, "--filler", "file") : std::string();
    const std::vector<PressParams> runs =
        PressOptions::sweepFromCommandLine(args, "full,snapkv,pyramidkv,streamingllm,h2o,random", "64,128,256");
    const int64_t n = args.getInt("-n", 16, 1, 1 << 16);
    const bool csv = args.has("--csv");
    const bool questionAfter = args.has("--question-after");
    const std::string promptsDir = args.get("--save-prompts", "");
    if (!promptsDir.empty()) {
        std::error_code ec;
        std::filesystem::create_directories(promptsDir, ec);
        if (ec) throw Error("--save-prompts: cannot create " + promptsDir + " (" + ec.message() + ")");
    }

    const Shard shard = args.has("--shard") ? Shard::parse(args.get("--shard"), "--shard") : Shard{};
    const int64_t shards = shard.count;
    // The plan's size before anything loads: a sweep of many prefills is asked for by name.
    {
        const double grid = double(lengths.size()) * double(depths.size()) * double(samples);
        const double captures = std::ceil(grid / double(shards));
        if (captures > double(kCapturesWithoutYes) && !args.has("--yes")) {
            throw Error("niah: " + std::to_string(lengths.size()) + " lengths x " + std::to_string(depths.size()) +
                        " depths x " + std::to_string(samples) + " samples" +
                        (shards > 1 ? " / " + std::to_string(shards) + " shards" : std::string()) + " is " +
                        std::to_string(int64_t(captures)) + " captures (prefills) of " + std::to_string(runs.size()) +
                        " runs each, over " + std::to_string(kCapturesWithoutYes) + ": add --yes to run them");
        }
    }
    // The store opens before the model loads, so a bad store fails first.
    if (!args.has("--save")) {
        for (const char* flag : {"--session", "--store"})
            if (args.has(flag)) throw Error(std::string(flag) + " goes with --save (kvlens niah ... --save)");
    }
    if (args.has("--session") && args.get("--session").empty()) throw Error("--session: the name is empty");
    std::unique_ptr<sessions::SessionStore> store;
    if (args.has("--save"))
        store = std::make_unique<sessions::SessionStore>(RunSaver::storePath(args),
                                                         sessions::SessionStore::Access::ReadWrite);

    NiahTask task;
    task.lengths = lengths;
    task.depths = depths;
    task.samples = samples;
    task.kind = kind;
    task.taskSeed = taskSeed;
    task.filler = filler;
    task.noBos = args.has("--no-bos");
    task.questionAfter = questionAfter;
    task.newTokens = n;
    const ModelOptions modelOptions = ModelOptions::fromCommandLine(args);
    LoadedModel loaded = modelOptions.load();
    NiahSweep sweep(loaded, modelOptions.model, store.get(), args.get("--session", "niah"));
    sweep.checkContext(task);
    if (csv) {
        std::printf("length,tokens,depth,sample,method,budget,params,contains,exact,needle_kept,agreement,mean_kl,answer\n");
    } else {
        std::printf("task %s, %zu lengths x %zu depths x %lld samples, %zu runs each, %lld answer tokens, "
                    "question %s, %s\n\n",
                    needleKindName(kind), lengths.size(), depths.size(), (long long)samples, runs.size(),
                    (long long)n, questionAfter ? "after the compressed context" : "inside the prompt",
                    modelOptions.model.c_str());
    }
    std::map<std::pair<std::string, std::string>, Totals> totals;
    std::vector<std::pair<std::string, std::string>> order;
    // Progress over this shard's samples (a bar on a terminal, a line every quarter in logs).
    const int64_t planned = shard.of(0, task.captures());
    int64_t done = 0;
    ProgressBar bar("niah: " + std::to_string(planned) + " samples");
    sweep.run(task, runs, 0, shard, [&](const NiahRunResult& r) {
        const auto key = std::make_pair(r.params.method, r.budget);
        if (!totals.count(key)) order.push_back(key);
        Totals& t = totals[key];
        t.contains += r.contains;
        t.exact += r.exact;
        t.kept += r.needleKept;
        t.agreement += r.agreement;
        t.kl += r.meanKl;
        t.kv += r.kvRatio;
        ++t.runs;
        if (csv) {
            std::string quoted;
            for (char c : r.answer) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
            std::printf("%lld,%lld,%g,%lld,%s,%s,\"%s\",%.6f,%.6f,%.6f,%.6f,%.8g,\"%s\"\n", (long long)r.length,
                        (long long)r.tokens, r.depth, (long long)r.sample, r.params.method.c_str(), r.budget.c_str(),
                        r.params.describe().c_str(), r.contains, r.exact, r.needleKept, r.agreement, r.meanKl,
                        quoted.c_str());
            std::fflush(stdout);
        }
    }, bar, done, planned, promptsDir);
    bar.finish();
    if (!csv) {
        int width = 13;  // the method column: the longest name (chunkkv-kvpress) widens it
        for (const auto& key : order) width = std::max(width, static_cast<int>(key.first.size()));
        std::printf("%-*s %7s %9s %7s %12s %10s %10s %8s\n", width, "method", "budget", "contains", "exact",
                    "needle kept", "agreement", "mean KL", "KV kept");
        for (const auto& key : order) {
            const Totals& t = totals[key];
            std::printf("%-*s %7s %8.1f%% %6.1f%% %11.1f%% %9.1f%% %10.4g %7.1f%%\n", width, key.first.c_str(),
                        key.second.c_str(), 100.0 * t.contains / t.runs, 100.0 * t.exact / t.runs,
                        100.0 * t.kept / t.runs, 100.0 * t.agreement / t.runs, t.kl / t.runs, 100.0 * t.kv / t.runs);
        }
    }
    if (store) {
        std::fprintf(stderr, "niah: saved %lld runs to session '%s' of %s%s\n", (long long)sweep.stored(),
                     args.get("--session", "niah").c_str(), store->path().c_str(),
                     sweep.skipped() ? (", skipped " + std::to_string(sweep.skipped()) + " already saved").c_str() : "");
    }
    if (sweep.captures() == 0) return 0;
    const size_t perCapture = runs.size();
    std::fprintf(stderr,
                 "niah: %lld captures (prefills) in %.1f s, the full cache's answers in %.1f s, %lld runs re-selected on "
                 "the captures in %.1f s; a prefill per run would have added %.1f s\n",
                 (long long)sweep.captures(), sweep.captureSeconds(), sweep.fullSeconds(),
                 (long long)(sweep.captures() * static_cast<int64_t>(perCapture)), sweep.runSeconds(),
                 sweep.captureSeconds() * double(perCapture - 1));
    return 0;
}

}  // namespace kvlens
