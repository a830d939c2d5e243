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

// The most depths one --depths yields, and the most captures (prefills) a sweep runs
// without --yes.
constexpr int64_t kMaxDepths = 100000;
constexpr int64_t kCapturesWithoutYes = 10000;

double parseDepth(const std::string& item) {
    char* end = nullptr;
    const double v = std::strtod(item.c_str(), &end);
    if (item.empty() || *end != '\0' || !std::isfinite(v)) throw Error("--depths: '" + item + "' is not a number");
    if (v < 0.0 || v > 100.0) throw Error("--depths: " + item + " is outside 0-100");
    return v;
}

// "0:100:10" (first:last:step) or "0,50,100".
std::vector<double> parseDepths(const std::string& text) {
    std::vector<double> out;
    if (text.find(':') != std::string::npos) {
        std::vector<std::string> parts;
        std::stringstream in(text);
        for (std::string p; std::getline(in, p, ':');) parts.push_back(p);
        if (parts.size() != 3) throw Error("--depths: '" + text + "' is not first:last:step");
        const double a = parseDepth(parts[0]), b = parseDepth(parts[1]);
        char* end = nullptr;
        const double step = std::strtod(parts[2].c_str(), &end);
        if (parts[2].empty() || *end != '\0' || !(step > 0.0)) throw Error("--depths: step '" + parts[2] + "' is not positive");
        if (a > b) throw Error("--depths: '" + text + "' yields no depth (first:last:step counts up from first to last)");
        // Counted before any is made: a tiny step is refused here, not by the memory.
        const double count = std::floor((b - a) / step + 1e-9) + 1.0;
        if (count > double(kMaxDepths)) {
            throw Error("--depths: '" + text + "' yields " + std::to_string(int64_t(count)) + " depths, over " +
                        std::to_string(kMaxDepths));
        }
        for (int64_t i = 0; i < int64_t(count); ++i) out.push_back(std::min(b, a + double(i) * step));
        return out;
    }
    for (const std::string& item : splitList(text, "--depths")) out.push_back(parseDepth(item));
    return out;
}

// Every expected answer in the first line, and nothing else but "and" between them.
double exactAll(const std::string& answer, const std::vector<std::string>& expected) {
    const std::string line = answer.substr(0, answer.find('\n'));
    if (expected.size() == 1) return exactMatch(line, expected);
    std::multiset<std::string> got, want;
    std::stringstream words(normalizedAnswer(line));
    for (std::string w; words >> w;)
        if (w != "and") got.insert(w);
    for (const std::string& e : expected) {
        std::stringstream ew(normalizedAnswer(e));
        for (std::string w; ew >> w;) want.insert(w);
    }
    return got == want ? 1.0 : 0.0;
}

void writeFile(const std::string& path, const std::string& text) {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f << text;
    if (!f) throw Error("--save-prompts: cannot write " + path);
}

void savePrompt(const std::string& dir, int64_t length, double depth, int64_t sample, const NeedleSample& s) {
    char name[96];
    std::snprintf(name, sizeof name, "/L%lld_d%g_s%lld", (long long)length, depth, (long long)sample);
    writeFile(dir + name + ".txt", s.prompt());
    nlohmann::json j;
    j["answers"] = s.answers;
    j["needle_positions"] = s.needlePositions;
    j["tokens"] = s.tokens.size();
    j["context_tokens"] = s.contextTokens;
    writeFile(dir + name + ".json", j.dump(1) + "\n");
}

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
    const std::vector<double> depths = parseDepths(args.get("--depths", "0:100:10"));
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

    int64_t shard = 1, shards = 1;
    if (args.has("--shard")) {
        const std::string t = args.get("--shard");
        char* end = nullptr;
        shard = std::strtoll(t.c_str(), &end, 10);
        if (end == t.c_str() || *end != '/' || (shards = std::strtoll(end + 1, &end, 10)) < 1 || *end != '\0' ||
            shard < 1 || shard > shards)
            throw Error("--shard: '" + t + "' is not I/N with 1 <= I <= N");
    }
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

    const ModelOptions modelOptions = ModelOptions::fromCommandLine(args);
    LoadedModel loaded = modelOptions.load();
    const int64_t context = loaded.model->config().contextLength;
    int64_t sessionId = 0, modelId = 0;
    std::set<std::string> saved;  // keys of the runs the session holds
    if (store) {
        sessions::ModelRecord m;
        m.spec = modelOptions.model;
        m.isFile = loaded.spec.kind == ModelSpec::Kind::File;
        m.path = m.isFile ? loaded.spec.path : "";
        static_cast<ModelShape&>(m) = loaded.model->config().shape();
        sessions::RunRecorder recorder(*store);
        modelId = store->saveModel(recorder.describeFile(m));
        sessionId = store->openSession(args.get("--session", "niah")).id;
        for (const sessions::NiahRunRecord& r : store->niahRuns(sessionId)) saved.insert(r.key());
    }
    int64_t skipped = 0, stored = 0;
    // The task as the store keys it: another filler or no BOS is another sample, so a
    // resumed sweep with either changed does not skip what it has not run.
    const NeedleTaskName task = NeedleTaskName::of(kind, filler, args.has("--no-bos"));
    const std::string taskName = task.str();
    for (int64_t L : lengths) {
        if (L + n > context) {
            throw Error("--lengths: " + std::to_string(L) + " tokens and -n " + std::to_string(n) +
                        " are over the model's context of " + std::to_string(context));
        }
    }
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
    double captureSeconds = 0.0, fullSeconds = 0.0, runSeconds = 0.0;
    int64_t captures = 0;
    int64_t index = 0;
    // Progress over this shard's samples (a bar on a terminal, a line every quarter in logs).
    const int64_t total = int64_t(lengths.size()) * int64_t(depths.size()) * samples;
    const int64_t planned = total >= shard ? (total - shard) / shards + 1 : 0;
    int64_t done = 0;
    ProgressBar bar("niah: " + std::to_string(planned) + " samples");
    for (int64_t L : lengths) {
        for (double depth : depths) {
            for (int64_t s = 0; s < samples; ++s) {
                if (index++ % shards != shard - 1) continue;
                char where[96];
                std::snprintf(where, sizeof where, "length %lld, depth %g%%, sample %lld", (long long)L, depth,
                              (long long)s);
                bar.update(double(done++) / double(std::max<int64_t>(1, planned)), where);
                // Each run's record as the store keys it; a sample whose runs are all
                // saved is skipped whole (no prefill).
                auto recordOf = [&](const PressParams& p) {
                    sessions::NiahRunRecord r;
                    r.sessionId = sessionId;
                    r.modelId = modelId;
                    r.task = taskName;
                    r.taskSeed = taskSeed;
                    r.length = L;
                    r.depth = depth;
                    r.sample = s;
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
                const NeedleSpec spec =
                    task.sampleSpec(taskSeed, L, depth, s, filler, loaded.tokenizer->addBosByDefault());
                const NeedleSample sample = makeNeedleSample(spec, *loaded.tokenizer);
                if (!promptsDir.empty()) savePrompt(promptsDir, L, depth, s, sample);
                const auto t0 = std::chrono::steady_clock::now();
                // Query-aware: the whole prompt captured. Query-agnostic: its context
                // tokens, the question's fed to every cache before the answer.
                const auto split = sample.tokens.begin() + (questionAfter ? sample.contextTokens
                                                                          : static_cast<int64_t>(sample.tokens.size()));
                const std::vector<int32_t> prompt(sample.tokens.begin(), split), question(split, sample.tokens.end());
                // Every pending run's settings against this prompt, before its prefill.
                const int64_t T = static_cast<int64_t>(prompt.size());
                for (const PressParams* run : pending)
                    run->validate(T, Capture::windowCapacityFor(T));
                auto capture = captureTokens(
                    loaded, prompt, n + static_cast<int64_t>(question.size()), {}, [&](double f, const std::string&) {
                        bar.update((double(done - 1) + f) / double(std::max<int64_t>(1, planned)),
                                   std::string(where) + ", prefill");
                    });
                captureSeconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
                const auto f0 = std::chrono::steady_clock::now();
                MethodEvaluator evaluator(*loaded.model, capture, n, {}, question);  // the full cache's answer, once
                fullSeconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - f0).count();
                ++captures;
                for (const PressParams* run : pending) {
                    const PressParams& p0 = *run;
                    PressParams p = p0;
                    const auto r0 = std::chrono::steady_clock::now();
                    prepareMethod(loaded, *capture, p);
                    const Selection selection = Press::create(p.method)->select(*capture, p);
                    const RunMetrics m = evaluator.evaluate(selection);
                    runSeconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - r0).count();
                    const std::string answer = loaded.tokenizer->decode(m.tokens);
                    const double contains = containsAll(answer, sample.answers);
                    const double exact = exactAll(answer, sample.answers);
                    const double kept = needleKept(selection, sample.needlePositions).mean;
                    const std::string budget = budgetLabel(p);
                    const auto key = std::make_pair(p.method, budget);
                    if (!totals.count(key)) order.push_back(key);
                    Totals& t = totals[key];
                    t.contains += contains;
                    t.exact += exact;
                    t.kept += kept;
                    t.agreement += m.tokenAgreement;
                    t.kl += m.meanKl;
                    t.kv += m.ratio;
                    ++t.runs;
                    if (store) {
                        sessions::NiahRunRecord r = recordOf(p0);
                        r.tokens = static_cast<int64_t>(sample.tokens.size());
                        r.budget = budget;
                        r.contains = contains;
                        r.exact = exact;
                        r.needleKept = kept;
                        r.agreement = m.tokenAgreement;
                        r.meanKl = m.meanKl;
                        r.answer = answer;
                        r.expected = sample.answers;
                        r.needlePositions.assign(sample.needlePositions.begin(), sample.needlePositions.end());
                        stored += store->saveNiahRun(r) ? 1 : 0;
                    }
                    if (csv) {
                        std::string quoted;
                        for (char c : answer) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
                        std::printf("%lld,%lld,%g,%lld,%s,%s,\"%s\",%.6f,%.6f,%.6f,%.6f,%.8g,\"%s\"\n", (long long)L,
                                    (long long)sample.tokens.size(), depth, (long long)s, p.method.c_str(),
                                    budget.c_str(), p.describe().c_str(), contains, exact, kept, m.tokenAgreement,
                                    m.meanKl, quoted.c_str());
                        std::fflush(stdout);
                    }
                }
            }
        }
    }
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
        std::fprintf(stderr, "niah: saved %lld runs to session '%s' of %s%s\n", (long long)stored,
                     args.get("--session", "niah").c_str(), store->path().c_str(),
                     skipped ? (", skipped " + std::to_string(skipped) + " already saved").c_str() : "");
    }
    if (captures == 0) return 0;
    const size_t perCapture = runs.size();
    std::fprintf(stderr,
                 "niah: %lld captures (prefills) in %.1f s, the full cache's answers in %.1f s, %lld runs re-selected on "
                 "the captures in %.1f s; a prefill per run would have added %.1f s\n",
                 (long long)captures, captureSeconds, fullSeconds,
                 (long long)(captures * static_cast<int64_t>(perCapture)), runSeconds,
                 captureSeconds * double(perCapture - 1));
    return 0;
}

}  // namespace kvlens
