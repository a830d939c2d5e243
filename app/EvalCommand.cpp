// kvlens eval: task accuracy of every method and budget on records with answers:
// LongBench-format .jsonl files (a user's own LongBench or RULER exports) or samples
// of a generated needle task. One capture per record; each method and budget is a
// re-selection on it, scored with the record's metric against its answers.
#include <chrono>
#include <cstdio>
#include <map>
#include <set>

#include "app/CommandLine.h"
#include "app/EvalSweep.h"
#include "app/EvalTask.h"
#include "app/Commands.h"
#include "app/ModelOptions.h"
#include "app/PressOptions.h"
#include "app/RunSaver.h"
#include "app/Shard.h"
#include "core/Error.h"
#include "engine/compress/Capture.h"
#include "engine/compress/MethodEvaluator.h"
#include "engine/compress/presses/Press.h"
#include "engine/eval/AnswerMetrics.h"
#include "engine/eval/LongBenchRecords.h"
#include "engine/eval/NeedleTask.h"
#include "engine/eval/TokenSpans.h"
#include "sessions/RunRecorder.h"
#include "sessions/SessionStore.h"
#include "sessions/Sha256.h"

namespace kvlens {
namespace {

struct Totals {
    double score = 0, agreement = 0, kl = 0;
    int runs = 0;
};

}  // namespace

int runEval(const std::vector<std::string>& argv) {
    std::set<std::string> valueFlags = ModelOptions::flags();
    valueFlags.insert(PressOptions::flags().begin(), PressOptions::flags().end());
    valueFlags.insert({"--data", "--task", "--length", "--samples", "--task-seed", "--template", "--metric", "--limit",
                       "-n", "--methods", "--budgets", "--shard"});
    valueFlags.insert(RunSaver::valueFlags().begin(), RunSaver::valueFlags().end());
    CommandLine args("eval", argv, valueFlags,
                     {"--csv", "--question-after", "--truncate", "--no-bos", "--save", "--help"});
    if (args.has("--help")) {
        std::fputs(
            "usage: kvlens eval (--data FILE.jsonl | --task single|multikey|multivalue|multiquery|kv|vt\n"
            "       [--length 4k] [--samples 10] [--task-seed S]) [--template FILE] [--metric M] [--limit K]\n"
            "       [--methods ...] [--budgets ...] [method flags as for run] [-n 32] [--question-after]\n"
            "       [--truncate] [--csv] [--save [--session NAME] [--store PATH]] [--shard I/N]\n"
            "  task accuracy per method and budget. --data: LongBench-format records (context,\n"
            "  input or question, answers, optional dataset, all_classes, length), each scored\n"
            "  with its dataset's metric (f1 for the QA sets, rouge for summaries, classification\n"
            "  for trec/lsht, contains for RULER's exports, em otherwise; --metric em|f1|rouge|\n"
            "  contains|classification overrides). The prompt is --template FILE with {context}\n"
            "  and {input} (default: \"{context}\\n\\nQuestion: {input}\\nAnswer:\"). --task: samples of a\n"
            "  generated needle task at --length, depths spread evenly, scored with contains.\n"
            "  --question-after: compress the context alone, then append the question (as in niah).\n"
            "  A prompt over the model's context is an error naming its line; --truncate cuts its\n"
            "  middle instead, as LongBench does. --csv: one row per record and run.\n"
            "  --save: every run into the session store (session 'eval' by default) as it is\n"
            "  measured; run again, it skips what the session holds (a killed eval resumes).\n"
            "  --shard I/N: only records I, I+N, I+2N, ... (1-based), e.g. one store per shard,\n"
            "  joined by 'kvlens sessions merge'.\n",
            stdout);
        return 0;
    }
    if (args.has("--data") == args.has("--task")) throw Error("kvlens eval: give --data FILE.jsonl or --task NAME");
    EvalTask task;
    if (args.has("--template")) task.templateText = readFlagFile(args, "--template", "file");
    task.metric = args.get("--metric", "");
    task.limit = args.getInt("--limit", 0, 0, 1 << 30);
    const std::vector<PressParams> runs =
        PressOptions::sweepFromCommandLine(args, "full,snapkv,pyramidkv,streamingllm,h2o,random", "64,128,256");
    task.newTokens = args.getInt("-n", 32, 1, 1 << 16);
    const int64_t n = task.newTokens;
    const bool csv = args.has("--csv"), questionAfter = args.has("--question-after");
    task.questionAfter = questionAfter;
    task.truncate = args.has("--truncate");
    task.noBos = args.has("--no-bos");
    const Shard shard = args.has("--shard") ? Shard::parse(args.get("--shard"), "--shard") : Shard{};
    // The store opens before the model loads, so a bad store fails first.
    if (!args.has("--save")) {
        for (const char* flag : {"--session", "--store"})
            if (args.has(flag)) throw Error(std::string(flag) + " goes with --save (kvlens eval ... --save)");
    }
    if (args.has("--session") && args.get("--session").empty()) throw Error("--session: the name is empty");
    std::unique_ptr<sessions::SessionStore> store;
    if (args.has("--save"))
        store = std::make_unique<sessions::SessionStore>(RunSaver::storePath(args),
                                                         sessions::SessionStore::Access::ReadWrite);
    if (args.has("--data")) {
        task.data = args.get("--data");
    } else {
        task.kind = needleKindNamed(args.get("--task"));
        task.samples = args.getInt("--samples", 10, 1, 1 << 20);
        task.taskSeed = args.getSeed("--task-seed", 1);
        task.length = parseTokenCount(args.get("--length", "4k"), "--length");
    }
    task.prepare();  // the records, the template and the metric, before the model loads
    const ModelOptions modelOptions = ModelOptions::fromCommandLine(args);
    LoadedModel loaded = modelOptions.load();
    EvalSweep sweep(loaded, modelOptions.model, store.get(), args.get("--session", "eval"));
    if (csv) std::printf("record,dataset,metric,tokens,method,budget,params,score,agreement,mean_kl,answer\n");
    std::map<std::tuple<std::string, std::string, std::string>, Totals> totals;
    std::vector<std::tuple<std::string, std::string, std::string>> order;
    int64_t done = 0;
    sweep.run(task, runs, 0, shard, [&](const EvalRunResult& r) {
        const auto key = std::make_tuple(r.dataset.empty() ? std::string("-") : r.dataset, r.params.method, r.budget);
        if (!totals.count(key)) order.push_back(key);
        Totals& t = totals[key];
        t.score += r.score;
        t.agreement += r.agreement;
        t.kl += r.meanKl;
        ++t.runs;
        if (csv) {
            std::string quoted;
            for (char c : r.answer) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
            std::printf("\"%s\",\"%s\",%s,%lld,%s,%s,\"%s\",%.6f,%.6f,%.8g,\"%s\"\n", r.where.c_str(),
                        r.dataset.c_str(), r.metric.c_str(), (long long)r.tokens, r.params.method.c_str(),
                        r.budget.c_str(), r.params.describe().c_str(), r.score, r.agreement, r.meanKl, quoted.c_str());
            std::fflush(stdout);
        }
    }, nullptr, done, task.count());
    if (!csv) {
        std::printf("%lld records, %zu runs each, %lld answer tokens, question %s, %s\n\n", (long long)task.count(), runs.size(),
                    (long long)n, questionAfter ? "after the compressed context" : "inside the prompt",
                    modelOptions.model.c_str());
        std::printf("%-16s %-13s %7s %8s %10s %10s\n", "dataset", "method", "budget", "score", "agreement", "mean KL");
        for (const auto& key : order) {
            const Totals& t = totals[key];
            std::printf("%-16s %-13s %7s %7.1f%% %9.1f%% %10.4g\n", std::get<0>(key).c_str(), std::get<1>(key).c_str(),
                        std::get<2>(key).c_str(), 100.0 * t.score / t.runs, 100.0 * t.agreement / t.runs,
                        t.kl / t.runs);
        }
    }
    if (store) {
        std::fprintf(stderr, "eval: saved %lld runs to session '%s' of %s%s\n", (long long)sweep.stored(),
                     args.get("--session", "eval").c_str(), store->path().c_str(),
                     sweep.skipped() ? (", skipped " + std::to_string(sweep.skipped()) + " already saved").c_str() : "");
    }
    std::fprintf(stderr, "eval: %lld captures in %.1f s, %lld runs re-selected on them in %.1f s\n",
                 (long long)sweep.captures(), sweep.captureSeconds(),
                 (long long)(sweep.captures() * int64_t(runs.size())), sweep.runSeconds());
    return 0;
}

}  // namespace kvlens
