#include "app/NiahSweep.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "app/ModelOptions.h"
#include "app/PressOptions.h"
#include "app/RunSaver.h"
#include "app/ProgressBar.h"
#include "core/Error.h"
#include "engine/compress/Capture.h"
#include "engine/compress/MethodEvaluator.h"
#include "engine/compress/presses/Press.h"
#include "engine/eval/AnswerMetrics.h"
#include "engine/eval/NeedleKept.h"
#include "engine/eval/NeedleTaskName.h"
#include "sessions/RunRecorder.h"
#include "sessions/SessionStore.h"

namespace kvlens {

namespace {

// The most depths one --depths yields.
constexpr int64_t kMaxDepths = 100000;

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

}  // namespace

double parseDepth(const std::string& item, const std::string& what) {
    char* end = nullptr;
    const double v = std::strtod(item.c_str(), &end);
    if (item.empty() || *end != '\0' || !std::isfinite(v)) throw Error(what + ": '" + item + "' is not a number");
    if (v < 0.0 || v > 100.0) throw Error(what + ": " + item + " is outside 0-100");
    return v;
}

std::vector<double> parseDepths(const std::string& text, const std::string& what) {
    std::vector<double> out;
    if (text.find(':') != std::string::npos) {
        std::vector<std::string> parts;
        std::stringstream in(text);
        for (std::string p; std::getline(in, p, ':');) parts.push_back(p);
        if (parts.size() != 3) throw Error(what + ": '" + text + "' is not first:last:step");
        const double a = parseDepth(parts[0], what), b = parseDepth(parts[1], what);
        char* end = nullptr;
        const double step = std::strtod(parts[2].c_str(), &end);
        if (parts[2].empty() || *end != '\0' || !(step > 0.0)) throw Error(what + ": step '" + parts[2] + "' is not positive");
        if (a > b) throw Error(what + ": '" + text + "' yields no depth (first:last:step counts up from first to last)");
        // Counted before any is made: a tiny step is refused here, not by the memory.
        const double count = std::floor((b - a) / step + 1e-9) + 1.0;
        if (count > double(kMaxDepths)) {
            char many[32];  // past int64 for a tiny step: written as a double then
            if (count < 9e18)
                std::snprintf(many, sizeof many, "%lld", (long long)count);
            else
                std::snprintf(many, sizeof many, "%.4g", count);
            throw Error(what + ": '" + text + "' yields " + many + " depths, over " + std::to_string(kMaxDepths));
        }
        for (int64_t i = 0; i < int64_t(count); ++i) out.push_back(std::min(b, a + double(i) * step));
        return out;
    }
    for (const std::string& item : splitList(text, what)) out.push_back(parseDepth(item, what));
    return out;
}

NiahSweep::NiahSweep(LoadedModel& loaded, const std::string& modelSpec, sessions::SessionStore* store,
                     const std::string& sessionName)
    : loaded_(loaded), store_(store) {
    if (!store_) return;
    modelId_ = RunSaver::saveModel(*store_, loaded, modelSpec);
    sessionId_ = store_->openSession(sessionName).id;
    for (const sessions::NiahRunRecord& r : store_->niahRuns(sessionId_)) saved_.insert(r.key());
}

void NiahSweep::checkContext(const NiahTask& task) const {
    const int64_t context = loaded_.model->config().contextLength;
    for (int64_t L : task.lengths) {
        if (L + task.newTokens > context) {
            throw Error("--lengths: " + std::to_string(L) + " tokens and -n " + std::to_string(task.newTokens) +
                        " are over the model's context of " + std::to_string(context));
        }
    }
}

void NiahSweep::checkPrompts(const NiahTask& task, const std::vector<PressParams>& runs) const {
    const NeedleTaskName name = NeedleTaskName::of(task.kind, task.filler, task.noBos);
    std::vector<const PressParams*> all;
    for (const PressParams& p : runs) all.push_back(&p);
    for (int64_t L : task.lengths) {
        // The first depth's first sample: its prompt, tokenized (no prefill).
        const NeedleSample sample = makeNeedleSample(
            name.sampleSpec(task.taskSeed, L, task.depths.front(), 0, task.filler, loaded_.tokenizer->addBosByDefault()),
            *loaded_.tokenizer);
        const int64_t T = task.questionAfter ? sample.contextTokens : static_cast<int64_t>(sample.tokens.size());
        char where[96];
        std::snprintf(where, sizeof where, "length %lld, depth %g%%, sample 0", (long long)L, task.depths.front());
        checkRunsFit(all, T, where, loaded_.model->config());
    }
}

void NiahSweep::run(const NiahTask& task, const std::vector<PressParams>& runs, int64_t firstIndex, const Shard& shard,
                    const std::function<void(const NiahRunResult&)>& onRun, ProgressBar& bar, int64_t& done,
                    int64_t planned, const std::string& promptsDir) {
    checkContext(task);
    // The task as the store keys it: another filler or no BOS is another sample, so a
    // resumed sweep with either changed does not skip what it has not run.
    const NeedleTaskName name = NeedleTaskName::of(task.kind, task.filler, task.noBos);
    const std::string taskName = name.str();
    const int64_t n = task.newTokens;
    int64_t index = firstIndex;
    for (int64_t L : task.lengths) {
        for (double depth : task.depths) {
            for (int64_t s = 0; s < task.samples; ++s) {
                if (!shard.holds(index++)) continue;
                char where[96];
                std::snprintf(where, sizeof where, "length %lld, depth %g%%, sample %lld", (long long)L, depth,
                              (long long)s);
                bar.update(double(done++) / double(std::max<int64_t>(1, planned)), where);
                // Each run's record as the store keys it; a sample whose runs are all
                // saved is skipped whole (no prefill).
                auto recordOf = [&](const PressParams& p) {
                    sessions::NiahRunRecord r;
                    r.sessionId = sessionId_;
                    r.modelId = modelId_;
                    r.task = taskName;
                    r.taskSeed = task.taskSeed;
                    r.length = L;
                    r.depth = depth;
                    r.sample = s;
                    r.questionAfter = task.questionAfter;
                    r.newTokens = n;
                    r.method = p.method;
                    r.params = p.describe();
                    return r;
                };
                std::vector<const PressParams*> pending;
                for (const PressParams& p : runs)
                    if (!store_ || !saved_.count(recordOf(p).key())) pending.push_back(&p);
                skipped_ += static_cast<int64_t>(runs.size() - pending.size());
                if (pending.empty()) continue;
                const NeedleSpec spec =
                    name.sampleSpec(task.taskSeed, L, depth, s, task.filler, loaded_.tokenizer->addBosByDefault());
                const NeedleSample sample = makeNeedleSample(spec, *loaded_.tokenizer);
                if (!promptsDir.empty()) savePrompt(promptsDir, L, depth, s, sample);
                const auto t0 = std::chrono::steady_clock::now();
                // Query-aware: the whole prompt captured. Query-agnostic: its context
                // tokens, the question's fed to every cache before the answer.
                const auto split =
                    sample.tokens.begin() +
                    (task.questionAfter ? sample.contextTokens : static_cast<int64_t>(sample.tokens.size()));
                const std::vector<int32_t> prompt(sample.tokens.begin(), split), question(split, sample.tokens.end());
                // Every pending run's settings against this prompt, before its prefill.
                checkRunsFit(pending, static_cast<int64_t>(prompt.size()), where, loaded_.model->config());
                auto capture = captureTokens(loaded_, prompt, n + static_cast<int64_t>(question.size()), {},
                                             [&](double f, const std::string&) {
                                                 bar.update((double(done - 1) + f) /
                                                                double(std::max<int64_t>(1, planned)),
                                                            std::string(where) + ", prefill");
                                             });
                captureSeconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
                const auto f0 = std::chrono::steady_clock::now();
                MethodEvaluator evaluator(*loaded_.model, capture, n, {}, question);  // the full cache's answer, once
                fullSeconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - f0).count();
                ++captures_;
                for (const PressParams* run : pending) {
                    PressParams p = *run;
                    const auto r0 = std::chrono::steady_clock::now();
                    prepareMethod(loaded_, *capture, p);
                    const Selection selection = Press::create(p.method)->select(*capture, p);
                    const RunMetrics m = evaluator.evaluate(selection);
                    runSeconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - r0).count();
                    NiahRunResult out;
                    out.length = L;
                    out.tokens = static_cast<int64_t>(sample.tokens.size());
                    out.depth = depth;
                    out.sample = s;
                    out.params = p;
                    out.budget = budgetLabel(p);
                    out.answer = loaded_.tokenizer->decode(m.tokens);
                    out.contains = containsAll(out.answer, sample.answers);
                    out.exact = exactAll(out.answer, sample.answers);
                    out.needleKept = needleKept(selection, sample.needlePositions).mean;
                    out.agreement = m.tokenAgreement;
                    out.meanKl = m.meanKl;
                    out.kvRatio = m.ratio;
                    if (store_) {
                        sessions::NiahRunRecord r = recordOf(*run);
                        r.tokens = out.tokens;
                        r.budget = out.budget;
                        r.contains = out.contains;
                        r.exact = out.exact;
                        r.needleKept = out.needleKept;
                        r.agreement = out.agreement;
                        r.meanKl = out.meanKl;
                        r.answer = out.answer;
                        r.expected = sample.answers;
                        r.needlePositions.assign(sample.needlePositions.begin(), sample.needlePositions.end());
                        if (store_->saveNiahRun(r)) {
                            ++stored_;
                            saved_.insert(r.key());
                        }
                    }
                    if (onRun) onRun(out);
                }
            }
        }
    }
}

}  // namespace kvlens
