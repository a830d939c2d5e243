// kvlens eval: task accuracy of every method and budget on records with answers:
// LongBench-format .jsonl files (a user's own LongBench or RULER exports) or samples
// of a generated needle task. One capture per record; each method and budget is a
// re-selection on it, scored with the record's metric against its answers.
#include <chrono>
#include <cstdio>
#include <map>
#include <set>

#include "app/CommandLine.h"
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

const char* kDefaultTemplate = "{context}\n\nQuestion: {input}\nAnswer:";

// One record to score: the prompt's two parts and how to score the answer.
struct EvalItem {
    std::string where;    // "FILE:N" or "single #3"
    std::string record;   // as the store keys it: "line N" or "#3"
    std::string dataset;  // as recorded ("" when absent)
    std::string context, question;  // prompt = context + question
    std::vector<std::string> answers, classes;
    std::string metric;
    bool firstLine = false;  // LongBench scores only the answer's first line (trec, triviaqa, samsum, lsht)
};

// The template with {context} and {input} filled; the cut between context and
// question sits right after the context.
void fill(const std::string& tmpl, const LongBenchRecord& r, EvalItem& item) {
    const size_t c = tmpl.find("{context}"), q = tmpl.find("{input}");
    if (c == std::string::npos || q == std::string::npos || q < c)
        throw Error("--template: needs {context} and then {input}");
    item.context = tmpl.substr(0, c) + r.context;
    std::string rest = tmpl.substr(c + 9);
    const size_t q2 = rest.find("{input}");
    item.question = rest.substr(0, q2) + r.input + rest.substr(q2 + 7);
}

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
    const std::string tmpl = args.has("--template") ? readFlagFile(args, "--template", "file") : kDefaultTemplate;
    const std::string metricFlag = args.get("--metric", "");
    if (!metricFlag.empty()) scoreAnswer(metricFlag, "", {""});  // an unknown one fails now
    const int64_t limit = args.getInt("--limit", 0, 0, 1 << 30);
    const std::vector<PressParams> runs =
        PressOptions::sweepFromCommandLine(args, "full,snapkv,pyramidkv,streamingllm,h2o,random", "64,128,256");
    const int64_t n = args.getInt("-n", 32, 1, 1 << 16);
    const bool csv = args.has("--csv"), questionAfter = args.has("--question-after");
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
    std::vector<EvalItem> items;
    std::vector<LongBenchRecord> records;
    if (args.has("--data")) {
        records = readLongBenchRecords(args.get("--data"));
        EvalItem probe;
        fill(tmpl, LongBenchRecord{}, probe);  // a bad template fails before the model loads
    }
    // What the records come from, as the store keys them: the data file's bytes or the
    // generated task's settings, with the template, truncation and BOS that make the prompts.
    sessions::Sha256 sourceHash;
    std::string sourceName;
    if (args.has("--data")) {
        sourceHash.update("data\n" + readFlagFile(args, "--data", "file"));
        sourceName = std::filesystem::path(args.get("--data")).filename().string();
    } else {
        sourceHash.update("task\n" + args.get("--task") + "\n" + args.get("--length", "4k") + "\n" +
                          args.get("--samples", "10") + "\n" + args.get("--task-seed", "1") + "\n");
        sourceName = args.get("--task");
    }
    sourceHash.update("\ntemplate\n" + tmpl + (args.has("--truncate") ? "\ntruncate" : "") +
                      (args.has("--no-bos") ? "\nno-bos" : "") + "\nlimit " + std::to_string(limit));
    const std::string source = sourceHash.finishHex();
    const ModelOptions modelOptions = ModelOptions::fromCommandLine(args);
    LoadedModel loaded = modelOptions.load();
    const bool bos = !args.has("--no-bos") && loaded.tokenizer->addBosByDefault();
    if (args.has("--data")) {
        for (const LongBenchRecord& r : records) {
            if (limit && static_cast<int64_t>(items.size()) >= limit) break;
            EvalItem item;
            item.where = args.get("--data") + ":" + std::to_string(r.line);
            item.record = "line " + std::to_string(r.line);
            item.dataset = r.dataset;
            fill(tmpl, r, item);
            item.answers = r.answers;
            item.classes = r.allClasses;
            item.metric = metricFlag.empty() ? longBenchMetric(r.dataset) : metricFlag;
            if (item.metric == "classification" && item.classes.empty())
                throw Error(item.where + ": the classification metric needs the record's all_classes");
            std::string d = r.dataset;
            if (d.size() > 2 && d.compare(d.size() - 2, 2, "_e") == 0) d.resize(d.size() - 2);
            item.firstLine = d == "trec" || d == "triviaqa" || d == "samsum" || d == "lsht";
            items.push_back(std::move(item));
        }
    } else {
        const NeedleKind kind = needleKindNamed(args.get("--task"));
        const int64_t samples = args.getInt("--samples", 10, 1, 1 << 20);
        const uint64_t seed = args.getSeed("--task-seed", 1);
        const int64_t length = parseTokenCount(args.get("--length", "4k"), "--length");
        for (int64_t i = 0; i < samples; ++i) {
            NeedleSpec spec;
            spec.kind = kind;
            spec.tokens = length;
            spec.depth = samples == 1 ? 50.0 : 100.0 * double(i) / double(samples - 1);
            spec.seed = seed + static_cast<uint64_t>(i) * 1000003u;
            spec.addBos = bos;
            const NeedleSample s = makeNeedleSample(spec, *loaded.tokenizer);
            EvalItem item;
            item.where = std::string(needleKindName(kind)) + " #" + std::to_string(i);
            item.record = "#" + std::to_string(i);
            item.dataset = needleKindName(kind);
            item.context = s.context;
            item.question = s.question;
            item.answers = s.answers;
            item.metric = metricFlag.empty() ? "contains" : metricFlag;
            items.push_back(std::move(item));
        }
    }
    if (items.empty()) throw Error(args.get("--data") + ": no records");

    const int64_t context = loaded.model->config().contextLength;
    int64_t sessionId = 0, modelId = 0, stored = 0, skipped = 0, captures = 0;
    std::set<std::string> saved;  // keys of the runs the session holds
    if (store) {
        sessions::ModelRecord mr;
        mr.spec = modelOptions.model;
        mr.isFile = loaded.spec.kind == ModelSpec::Kind::File;
        mr.path = mr.isFile ? loaded.spec.path : "";
        static_cast<ModelShape&>(mr) = loaded.model->config().shape();
        sessions::RunRecorder recorder(*store);
        modelId = store->saveModel(recorder.describeFile(mr));
        sessionId = store->openSession(args.get("--session", "eval")).id;
        for (const sessions::EvalRunRecord& r : store->evalRuns(sessionId)) saved.insert(r.key());
    }
    if (csv) std::printf("record,dataset,metric,tokens,method,budget,params,score,agreement,mean_kl,answer\n");
    std::map<std::tuple<std::string, std::string, std::string>, Totals> totals;
    std::vector<std::tuple<std::string, std::string, std::string>> order;
    double captureSeconds = 0, runSeconds = 0;
    int64_t index = 0;
    for (const EvalItem& item : items) {
        if (!shard.holds(index++)) continue;
        // Each run's record as the store keys it; a record whose runs are all saved is skipped
        // whole (no prefill).
        auto recordOf = [&](const PressParams& p) {
            sessions::EvalRunRecord r;
            r.sessionId = sessionId;
            r.modelId = modelId;
            r.source = source;
            r.sourceName = sourceName;
            r.record = item.record;
            r.dataset = item.dataset;
            r.metric = item.metric;
            r.questionAfter = questionAfter;
            r.newTokens = n;
            r.method = p.method;
            r.params = p.describe();
            return r;
        };
        std::vector<const PressParams*> pending;
        for (const PressParams& p : runs)
            if (!store || !saved.count(recordOf(p).key())) pending.push_back(&p);
        skipped += static_cast<int64_t>(runs.size() - pending.size());
        if (pending.empty()) continue;
        std::vector<int32_t> ids = loaded.tokenizer->encode(item.context + item.question, bos);
        const std::vector<int64_t> inContext = tokensCovering(*loaded.tokenizer, ids, item.context + item.question,
                                                              {{0, item.context.size()}});
        int64_t split = inContext.empty() ? 0 : inContext.back() + 1;
        const int64_t over = static_cast<int64_t>(ids.size()) + n - context;
        if (over > 0) {
            if (!args.has("--truncate"))
                throw Error(item.where + ": " + std::to_string(ids.size()) + " tokens and -n " + std::to_string(n) +
                            " are over the model's context of " + std::to_string(context) + " (--truncate cuts the middle)");
            // LongBench: the first and the last halves of what fits.
            const int64_t keep = context - n, head = keep / 2, tail = keep - head;
            if (tail < static_cast<int64_t>(ids.size()) - split)
                throw Error(item.where + ": the question alone leaves no room for the context");
            std::vector<int32_t> cut(ids.begin(), ids.begin() + head);
            cut.insert(cut.end(), ids.end() - tail, ids.end());
            split -= static_cast<int64_t>(ids.size()) - keep;
            ids = std::move(cut);
        }
        const auto at = ids.begin() + (questionAfter ? split : static_cast<int64_t>(ids.size()));
        const std::vector<int32_t> prompt(ids.begin(), at), question(at, ids.end());
        // Every run's settings against this prompt, before its prefill.
        const int64_t T = static_cast<int64_t>(prompt.size());
        for (const PressParams* p : pending) {
            if (!p->isFull() && p->budget > 0 && p->budget >= T)
                throw Error(item.where + ": " + p->describe() + ": a budget of " + std::to_string(p->budget) +
                            " entries holds the whole " + std::to_string(T) + "-token prompt (a budget must be under "
                            "the prompt's tokens)");
            p->validate(T, Capture::windowCapacityFor(T));
        }
        const auto t0 = std::chrono::steady_clock::now();
        auto capture = captureTokens(loaded, prompt, n + static_cast<int64_t>(question.size()));
        MethodEvaluator evaluator(*loaded.model, capture, n, {}, question);
        captureSeconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        ++captures;
        for (const PressParams* p0 : pending) {
            PressParams p = *p0;
            const auto r0 = std::chrono::steady_clock::now();
            prepareMethod(loaded, *capture, p);
            const RunMetrics m = evaluator.evaluate(Press::create(p.method)->select(*capture, p));
            runSeconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - r0).count();
            std::string answer = loaded.tokenizer->decode(m.tokens);
            if (item.firstLine) {
                answer.erase(0, answer.find_first_not_of('\n') == std::string::npos ? answer.size()
                                                                                      : answer.find_first_not_of('\n'));
                answer = answer.substr(0, answer.find('\n'));
            }
            const double score = scoreAnswer(item.metric, answer, item.answers, item.classes);
            const std::string budget = budgetLabel(p);
            const auto key = std::make_tuple(item.dataset.empty() ? std::string("-") : item.dataset, p.method, budget);
            if (!totals.count(key)) order.push_back(key);
            Totals& t = totals[key];
            t.score += score;
            t.agreement += m.tokenAgreement;
            t.kl += m.meanKl;
            ++t.runs;
            if (store) {
                sessions::EvalRunRecord r = recordOf(*p0);
                r.tokens = static_cast<int64_t>(ids.size());
                r.budget = budget;
                r.score = score;
                r.agreement = m.tokenAgreement;
                r.meanKl = m.meanKl;
                r.answer = answer;
                r.expected = item.answers;
                if (store->saveEvalRun(r)) ++stored;
            }
            if (csv) {
                std::string quoted;
                for (char c : answer) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
                std::printf("\"%s\",\"%s\",%s,%zu,%s,%s,\"%s\",%.6f,%.6f,%.8g,\"%s\"\n", item.where.c_str(),
                            item.dataset.c_str(), item.metric.c_str(), ids.size(), p.method.c_str(), budget.c_str(),
                            p.describe().c_str(), score, m.tokenAgreement, m.meanKl, quoted.c_str());
                std::fflush(stdout);
            }
        }
    }
    if (!csv) {
        std::printf("%zu records, %zu runs each, %lld answer tokens, question %s, %s\n\n", items.size(), runs.size(),
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
        std::fprintf(stderr, "eval: saved %lld runs to session '%s' of %s%s\n", (long long)stored,
                     args.get("--session", "eval").c_str(), store->path().c_str(),
                     skipped ? (", skipped " + std::to_string(skipped) + " already saved").c_str() : "");
    }
    std::fprintf(stderr, "eval: %lld captures in %.1f s, %lld runs re-selected on them in %.1f s\n",
                 (long long)captures, captureSeconds, (long long)(captures * int64_t(runs.size())), runSeconds);
    return 0;
}

}  // namespace kvlens
