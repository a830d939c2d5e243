#include "app/EvalSweep.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "app/ModelOptions.h"
#include "app/PressOptions.h"
#include "app/RunSaver.h"
#include "app/ProgressBar.h"
#include "core/Error.h"
#include "engine/compress/Capture.h"
#include "engine/compress/MethodEvaluator.h"
#include "engine/compress/presses/Press.h"
#include "engine/eval/AnswerMetrics.h"
#include "engine/eval/TokenSpans.h"
#include "sessions/RunRecorder.h"
#include "sessions/SessionStore.h"

namespace kvlens {

namespace {

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

// The task's records (or generated samples) for this tokenizer.
std::vector<EvalItem> itemsOf(const EvalTask& task, const Tokenizer& tokenizer, bool bos) {
    std::vector<EvalItem> items;
    if (!task.data.empty()) {
        for (const LongBenchRecord& r : task.records) {
            if (task.limit && static_cast<int64_t>(items.size()) >= task.limit) break;
            EvalItem item;
            item.where = task.data + ":" + std::to_string(r.line);
            item.record = "line " + std::to_string(r.line);
            item.dataset = r.dataset;
            // The template with {context} and {input} filled; the cut between context and
            // question sits right after the context.
            const std::string& t = task.templateText;
            const size_t c = t.find("{context}");
            item.context = t.substr(0, c) + r.context;
            const std::string rest = t.substr(c + 9);
            const size_t q = rest.find("{input}");
            item.question = rest.substr(0, q) + r.input + rest.substr(q + 7);
            item.answers = r.answers;
            item.classes = r.allClasses;
            item.metric = task.metric.empty() ? longBenchMetric(r.dataset) : task.metric;
            if (item.metric == "classification" && item.classes.empty())
                throw Error(item.where + ": the classification metric needs the record's all_classes");
            std::string d = r.dataset;
            if (d.size() > 2 && d.compare(d.size() - 2, 2, "_e") == 0) d.resize(d.size() - 2);
            item.firstLine = d == "trec" || d == "triviaqa" || d == "samsum" || d == "lsht";
            items.push_back(std::move(item));
        }
        return items;
    }
    for (int64_t i = 0; i < task.samples; ++i) {
        NeedleSpec spec;
        spec.kind = task.kind;
        spec.tokens = task.length;
        spec.depth = task.samples == 1 ? 50.0 : 100.0 * double(i) / double(task.samples - 1);
        spec.seed = task.taskSeed + static_cast<uint64_t>(i) * 1000003u;
        spec.addBos = bos;
        const NeedleSample s = makeNeedleSample(spec, tokenizer);
        EvalItem item;
        item.where = std::string(needleKindName(task.kind)) + " #" + std::to_string(i);
        item.record = "#" + std::to_string(i);
        item.dataset = needleKindName(task.kind);
        item.context = s.context;
        item.question = s.question;
        item.answers = s.answers;
        item.metric = task.metric.empty() ? "contains" : task.metric;
        items.push_back(std::move(item));
    }
    return items;
}

}  // namespace

EvalSweep::EvalSweep(LoadedModel& loaded, const std::string& modelSpec, sessions::SessionStore* store,
                     const std::string& sessionName)
    : loaded_(loaded), store_(store) {
    if (!store_) return;
    modelId_ = RunSaver::saveModel(*store_, loaded, modelSpec);
    sessionId_ = store_->openSession(sessionName).id;
    for (const sessions::EvalRunRecord& r : store_->evalRuns(sessionId_)) saved_.insert(r.key());
}

void EvalSweep::run(const EvalTask& task, const std::vector<PressParams>& runs, int64_t firstIndex,
                    const Shard& shard, const std::function<void(const EvalRunResult&)>& onRun, ProgressBar* bar,
                    int64_t& done, int64_t planned) {
    const bool bos = !task.noBos && loaded_.tokenizer->addBosByDefault();
    const std::vector<EvalItem> items = itemsOf(task, *loaded_.tokenizer, bos);
    const std::string source = task.source(), sourceName = task.sourceName();
    const int64_t context = loaded_.model->config().contextLength;
    const int64_t n = task.newTokens;
    int64_t index = firstIndex;
    for (const EvalItem& item : items) {
        if (!shard.holds(index++)) continue;
        if (bar) bar->update(double(done) / double(std::max<int64_t>(1, planned)), item.where);
        ++done;
        // Each run's record as the store keys it; a record whose runs are all saved is skipped
        // whole (no prefill).
        auto recordOf = [&](const PressParams& p) {
            sessions::EvalRunRecord r;
            r.sessionId = sessionId_;
            r.modelId = modelId_;
            r.source = source;
            r.sourceName = sourceName;
            r.record = item.record;
            r.dataset = item.dataset;
            r.metric = item.metric;
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
        std::vector<int32_t> ids = loaded_.tokenizer->encode(item.context + item.question, bos);
        const std::vector<int64_t> inContext = tokensCovering(*loaded_.tokenizer, ids, item.context + item.question,
                                                              {{0, item.context.size()}});
        int64_t split = inContext.empty() ? 0 : inContext.back() + 1;
        const int64_t over = static_cast<int64_t>(ids.size()) + n - context;
        if (over > 0) {
            if (!task.truncate)
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
        const auto at = ids.begin() + (task.questionAfter ? split : static_cast<int64_t>(ids.size()));
        const std::vector<int32_t> prompt(ids.begin(), at), question(at, ids.end());
        // Every run's settings against this prompt, before its prefill.
        const int64_t T = static_cast<int64_t>(prompt.size());
        checkRunsFit(pending, T, item.where, loaded_.model->config());
        const auto t0 = std::chrono::steady_clock::now();
        std::function<void(double, const std::string&)> progress;
        if (bar) {
            const std::string where = item.where;
            progress = [&, where](double f, const std::string&) {
                bar->update((double(done - 1) + f) / double(std::max<int64_t>(1, planned)), where + ", prefill");
            };
        }
        auto capture = captureTokens(loaded_, prompt, n + static_cast<int64_t>(question.size()), {}, progress);
        MethodEvaluator evaluator(*loaded_.model, capture, n, {}, question);
        captureSeconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        ++captures_;
        for (const PressParams* p0 : pending) {
            PressParams p = *p0;
            const auto r0 = std::chrono::steady_clock::now();
            prepareMethod(loaded_, *capture, p);
            const RunMetrics m = evaluator.evaluate(Press::create(p.method)->select(*capture, p));
            runSeconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - r0).count();
            EvalRunResult out;
            out.where = item.where;
            out.dataset = item.dataset;
            out.metric = item.metric;
            out.tokens = static_cast<int64_t>(ids.size());
            out.params = p;
            out.budget = budgetLabel(p);
            out.answer = loaded_.tokenizer->decode(m.tokens);
            if (item.firstLine) {
                const size_t first = out.answer.find_first_not_of('\n');
                out.answer.erase(0, first == std::string::npos ? out.answer.size() : first);
                out.answer = out.answer.substr(0, out.answer.find('\n'));
            }
            out.score = scoreAnswer(item.metric, out.answer, item.answers, item.classes);
            out.agreement = m.tokenAgreement;
            out.meanKl = m.meanKl;
            if (store_) {
                sessions::EvalRunRecord r = recordOf(*p0);
                r.tokens = out.tokens;
                r.budget = out.budget;
                r.score = out.score;
                r.agreement = out.agreement;
                r.meanKl = out.meanKl;
                r.answer = out.answer;
                r.expected = item.answers;
                if (store_->saveEvalRun(r)) {
                    ++stored_;
                    saved_.insert(r.key());
                }
            }
            if (onRun) onRun(out);
        }
    }
}

}  // namespace kvlens
