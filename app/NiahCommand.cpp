// kvlens niah: needle-in-a-haystack sweeps with ground truth. Per length, depth and
// sample: one generated prompt, one capture, then every (method, budget) by
// re-selection on it: the greedy answer on the compressed cache scored against the
// needle's value (contains, exact), the share of the needle's positions each
// layer's heads kept, and agreement / KL against the full cache.
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <sstream>

#include "app/CommandLine.h"
#include "app/Commands.h"
#include "app/ModelOptions.h"
#include "app/PressOptions.h"
#include "app/ProgressBar.h"
#include "core/Error.h"
#include "engine/compress/MethodEvaluator.h"
#include "engine/compress/presses/Press.h"
#include "engine/eval/AnswerMetrics.h"
#include "engine/eval/NeedleKept.h"
#include "engine/eval/NeedleTask.h"

namespace kvlens {

namespace {

int64_t parseLength(const std::string& item) {
    std::string digits = item;
    int64_t scale = 1;
    if (!digits.empty() && (digits.back() == 'k' || digits.back() == 'K')) {
        scale = 1024;
        digits.pop_back();
    }
    char* end = nullptr;
    errno = 0;
    const long long v = std::strtoll(digits.c_str(), &end, 10);
    if (digits.empty() || *end != '\0' || errno != 0 || v < 1 || v > (1LL << 40) / scale) {
        throw Error("--lengths: '" + item + "' is not a token count (like 1500 or 2k)");
    }
    return v * scale;
}

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
        for (int i = 0; a + i * step <= b + 1e-9; ++i) out.push_back(a + i * step);
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

struct Totals {
    double contains = 0, exact = 0, kept = 0, agreement = 0, kl = 0;
    int runs = 0;
};

}  // namespace

int runNiah(const std::vector<std::string>& argv) {
    std::set<std::string> valueFlags = ModelOptions::flags();
    valueFlags.insert(PressOptions::flags().begin(), PressOptions::flags().end());
    valueFlags.insert({"--lengths", "--depths", "--samples", "--task", "--task-seed", "--filler", "-n", "--methods",
                       "--budgets"});
    CommandLine args("niah", argv, valueFlags, {"--csv", "--no-bos", "--help"});
    if (args.has("--help")) {
        std::fputs(
            "usage: kvlens niah [--model M] [--lengths 1k,2k,4k] [--depths 0:100:10] [--samples N]\n"
            "       [--task single|multikey|multivalue|multiquery|kv|vt] [--task-seed S] [--filler FILE]\n"
            "       [--methods full,snapkv,pyramidkv,streamingllm,h2o,random] [--budgets 64,128,256]\n"
            "       [method flags as for run] [-n N] [--csv]\n"
            "  needle-in-a-haystack with ground truth: per length, depth and sample one generated\n"
            "  prompt (a needle with a value at the depth, filler around it, the question last) and\n"
            "  one capture; every method and budget by re-selection on it. Per run: contains (the\n"
            "  share of expected values in the greedy answer of -n tokens, default 16), exact (the\n"
            "  answer's first line is the value), needle kept (the share of the needle's token\n"
            "  positions each head kept, mean over heads and layers), agreement and KL against the\n"
            "  full cache; then the means per method and budget. --csv: one row per run.\n",
            stdout);
        return 0;
    }
    std::vector<int64_t> lengths;
    for (const std::string& item : splitList(args.get("--lengths", "1k,2k,4k"), "--lengths"))
        lengths.push_back(parseLength(item));
    const std::vector<double> depths = parseDepths(args.get("--depths", "0:100:10"));
    const int64_t samples = args.getInt("--samples", 1, 1, 1 << 20);
    const NeedleKind kind = needleKindNamed(args.get("--task", "single"));
    const uint64_t taskSeed = args.getSeed("--task-seed", 1);
    const std::string filler = args.has("--filler") ? readFlagFile(args, "--filler", "file") : std::string();
    const std::vector<PressParams> runs =
        PressOptions::sweepFromCommandLine(args, "full,snapkv,pyramidkv,streamingllm,h2o,random", "64,128,256");
    const int64_t n = args.getInt("-n", 16, 1, 1 << 16);
    const bool csv = args.has("--csv");

    const ModelOptions modelOptions = ModelOptions::fromCommandLine(args);
    LoadedModel loaded = modelOptions.load();
    const int64_t context = loaded.model->config().contextLength;
    for (int64_t L : lengths) {
        if (L + n > context) {
            throw Error("--lengths: " + std::to_string(L) + " tokens and -n " + std::to_string(n) +
                        " are over the model's context of " + std::to_string(context));
        }
    }
    if (csv) {
        std::printf("length,tokens,depth,sample,method,budget,params,contains,exact,needle_kept,agreement,mean_kl,answer\n");
    } else {
        std::printf("task %s, %zu lengths x %zu depths x %lld samples, %zu runs each, %lld answer tokens, %s\n\n",
                    needleKindName(kind), lengths.size(), depths.size(), (long long)samples, runs.size(),
                    (long long)n, modelOptions.model.c_str());
    }
    std::map<std::pair<std::string, std::string>, Totals> totals;
    std::vector<std::pair<std::string, std::string>> order;
    double captureSeconds = 0.0, fullSeconds = 0.0, runSeconds = 0.0;
    int64_t captures = 0;
    for (int64_t L : lengths) {
        for (double depth : depths) {
            for (int64_t s = 0; s < samples; ++s) {
                NeedleSpec spec;
                spec.kind = kind;
                spec.tokens = L;
                spec.depth = depth;
                spec.seed = taskSeed + static_cast<uint64_t>(s) * 1000003u;
                spec.filler = filler;
                spec.addBos = !args.has("--no-bos") && loaded.tokenizer->addBosByDefault();
                const NeedleSample sample = makeNeedleSample(spec, *loaded.tokenizer);
                const auto t0 = std::chrono::steady_clock::now();
                auto capture = capturePrompt(loaded, sample.prompt(), !args.has("--no-bos"), n);
                if (capture->prompt() != sample.tokens) {
                    throw Error("niah: the capture's tokens differ from the sample's (a tokenizer setting changed)");
                }
                captureSeconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
                const auto f0 = std::chrono::steady_clock::now();
                MethodEvaluator evaluator(*loaded.model, capture, n);  // the full cache's answer, once
                fullSeconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - f0).count();
                ++captures;
                for (const PressParams& p0 : runs) {
                    PressParams p = p0;
                    p.validate(capture->promptLength(), capture->windowCapacity());
                    const auto r0 = std::chrono::steady_clock::now();
                    prepareMethod(loaded, *capture, p.method);
                    const Selection selection = Press::create(p.method)->select(*capture, p);
                    const RunMetrics m = evaluator.evaluate(selection);
                    runSeconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - r0).count();
                    const std::string answer = loaded.tokenizer->decode(m.tokens);
                    const double contains = containsAll(answer, sample.answers);
                    const double exact = exactAll(answer, sample.answers);
                    const double kept = needleKept(selection, sample.needlePositions).mean;
                    const std::string budget = p.method == "full" ? std::string("-")
                                               : p.budget > 0   ? std::to_string(p.budget)
                                                                : std::to_string(p.budgetRatio * 100) + "%";
                    const auto key = std::make_pair(p.method, budget);
                    if (!totals.count(key)) order.push_back(key);
                    Totals& t = totals[key];
                    t.contains += contains;
                    t.exact += exact;
                    t.kept += kept;
                    t.agreement += m.tokenAgreement;
                    t.kl += m.meanKl;
                    ++t.runs;
                    if (csv) {
                        std::string quoted;
                        for (char c : answer) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
                        std::printf("%lld,%lld,%g,%lld,%s,%s,\"%s\",%.6f,%.6f,%.6f,%.6f,%.8g,\"%s\"\n", (long long)L,
                                    (long long)capture->promptLength(), depth, (long long)s, p.method.c_str(),
                                    budget.c_str(), p.describe().c_str(), contains, exact, kept, m.tokenAgreement,
                                    m.meanKl, quoted.c_str());
                        std::fflush(stdout);
                    }
                }
            }
        }
    }
    if (!csv) {
        std::printf("%-13s %7s %9s %7s %12s %10s %10s\n", "method", "budget", "contains", "exact", "needle kept",
                    "agreement", "mean KL");
        for (const auto& key : order) {
            const Totals& t = totals[key];
            std::printf("%-13s %7s %8.1f%% %6.1f%% %11.1f%% %9.1f%% %10.4g\n", key.first.c_str(), key.second.c_str(),
                        100.0 * t.contains / t.runs, 100.0 * t.exact / t.runs, 100.0 * t.kept / t.runs,
                        100.0 * t.agreement / t.runs, t.kl / t.runs);
        }
    }
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
