#include "app/PressOptions.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "core/Error.h"
#include "engine/compress/Capture.h"
#include "engine/compress/presses/Press.h"

namespace kvlens {

const std::set<std::string>& PressOptions::flags() {
    static const std::set<std::string> f = [] {
        std::set<std::string> out = {"--method", "--budget", "--compression-ratio"};
        for (const KnobInfo& k : methods::knobs()) out.insert(k.flag);
        return out;
    }();
    return f;
}

namespace {

// --scorer, --think and --convention have their own checks, which name what takes them.
bool checkedElsewhere(Knob k) { return k == Knob::Scorer || k == Knob::Think || k == Knob::Convention; }

std::string flagsRead(const PressParams& p) {
    const KnobSet read = methods::effectiveKnobs(p);
    std::vector<std::string> flags;
    for (const KnobInfo& k : methods::knobs())
        if (!checkedElsewhere(k.knob) && read.has(k.knob)) flags.push_back(k.flag);
    if (flags.empty()) return "no knob";
    std::string out;
    for (size_t i = 0; i < flags.size(); ++i)
        out += (i == 0 ? "" : i + 1 == flags.size() ? " and " : ", ") + flags[i];
    return out;
}

// A knob's flag that no run reads changes nothing: said on stderr in one line, naming the flag,
// so a loop passing the same flags to every method still runs.
void warnUnreadFlags(const CommandLine& args, const std::vector<PressParams>& runs, bool sweep) {
    // An unknown method is named by the validation, with the list of known ones.
    if (std::any_of(runs.begin(), runs.end(), [](const PressParams& p) { return !methods::find(p.method); })) return;
    for (const KnobInfo& k : methods::knobs()) {
        // One method's --layer-weights is refused by its validation, which names perlayer.
        if (checkedElsewhere(k.knob) || (!sweep && k.knob == Knob::LayerWeights) || !args.has(k.flag)) continue;
        if (std::any_of(runs.begin(), runs.end(), [&](const PressParams& p) { return methods::effectiveKnobs(p).has(k.knob); }))
            continue;
        const PressParams& p = runs.front();
        const std::string who = sweep ? std::string("read by none of --methods")
                                      : "not read by --method " + p.method +
                                            (p.convention == Convention::Kvpress ? " under --convention kvpress" : "") +
                                            " (it reads " + flagsRead(p) + ")";
        std::fprintf(stderr, "%s: %s is %s: ignored; %s is for %s\n", args.command().c_str(), k.flag,
                     who.c_str(), k.flag, methods::knobReaders(k).c_str());
    }
}

std::vector<std::string>& pendingNotes() {
    static std::vector<std::string> notes;
    return notes;
}

// A note (PressOptions::notes) where a method compares scores across heads that share no scale.
void noteCrossHead(const CommandLine& args, const std::vector<PressParams>& runs) {
    std::vector<std::string>& said = pendingNotes();
    for (const PressParams& p : runs) {
        const std::string note = methods::crossHeadNote(p);
        if (note.empty()) continue;
        const std::string line = args.command() + ": note: " + note;
        if (std::find(said.begin(), said.end(), line) == said.end()) said.push_back(line);
    }
}

PressParams pressFromFlags(const CommandLine& args) {
    PressParams p;
    p.method = args.get("--method", p.method);
    if (args.has("--budget")) parseBudget(args.get("--budget"), "--budget", p);
    if (args.has("--compression-ratio")) {
        if (args.has("--budget")) throw Error("--compression-ratio and --budget both set the budget: give one");
        const std::string text = args.get("--compression-ratio");
        char* end = nullptr;
        errno = 0;
        const double r = std::strtod(text.c_str(), &end);
        if (text.empty() || *end != '\0' || errno != 0 || !(r >= 0.0 && r < 1.0))
            throw Error("--compression-ratio '" + text + "' is not a share of the prompt dropped, in [0, 1)");
        p.budget = 0;
        p.budgetRatio = 1.0 - r;  // kvpress's (1 - compression_ratio), the same double
    }
    // Every knob's flag, read as the knob table says (type, range).
    for (const KnobInfo& k : methods::knobs())
        if (args.has(k.flag)) methods::setKnob(p, k.knob, args.get(k.flag), k.flag);
    // Under kvpress's convention ChunkKV and Finch are kvpress's ports of them.
    if (const std::string twin = methods::underConvention(p.method, p.convention); twin != p.method) {
        std::fprintf(stderr, "%s: --convention kvpress runs --method %s as %s (kvpress's form of it)\n",
                     args.command().c_str(), p.method.c_str(), twin.c_str());
        p.method = twin;
    }
    // kvpress pools only by avg: under its convention that is the default (--pool max is refused).
    if (!args.has("--pool") && p.convention == Convention::Kvpress) p.pooling = Pooling::Avg;
    return p;
}

}  // namespace

const std::vector<std::string>& PressOptions::notes() { return pendingNotes(); }

PressParams PressOptions::fromCommandLine(const CommandLine& args) {
    PressParams p = pressFromFlags(args);
    warnUnreadFlags(args, {p}, false);
    noteCrossHead(args, {p});
    return p;
}

PressParams PressOptions::sharedFromCommandLine(const CommandLine& args, const std::vector<std::string>& methodList) {
    const PressParams p = pressFromFlags(args);
    std::vector<PressParams> runs;
    for (const std::string& m : methodList) {
        runs.push_back(p);
        runs.back().method = m;
    }
    warnUnreadFlags(args, runs, true);
    noteCrossHead(args, runs);
    return p;
}

void parseBudget(const std::string& text, const std::string& flag, PressParams& params) {
    char* end = nullptr;
    errno = 0;
    if (!text.empty() && text.back() == '%') {
        const std::string number = text.substr(0, text.size() - 1);
        const double v = std::strtod(number.c_str(), &end);
        if (number.empty() || *end != '\0' || errno != 0 || !(v > 0.0 && v <= 100.0)) {
            throw Error(flag + " '" + text + "' is not a percentage in (0, 100]");
        }
        params.budget = 0;
        params.budgetRatio = v / 100.0;
        return;
    }
    const long long v = std::strtoll(text.c_str(), &end, 10);
    if (text.empty() || *end != '\0' || errno != 0 || v < 1) {
        throw Error(flag + " '" + text + "' is not a positive number of entries or a percentage like 25%");
    }
    params.budget = v;
    params.budgetRatio = 0.0;
}

std::vector<std::string> splitList(const std::string& text, const std::string& flag) {
    std::vector<std::string> out;
    std::stringstream in(text);
    std::string item;
    while (std::getline(in, item, ',')) {
        if (item.empty()) throw Error(flag + " '" + text + "' has an empty item");
        out.push_back(item);
    }
    if (out.empty()) throw Error(flag + " is empty");
    return out;
}

std::vector<PressParams> PressOptions::sweepFromCommandLine(const CommandLine& args, const std::string& methodList,
                                                            const std::string& budgetList) {
    if (args.has("--method") || args.has("--budget") || args.has("--compression-ratio")) {
        throw Error(args.command() + " takes --methods and --budgets (lists), not --method/--budget" +
                    (args.has("--compression-ratio") ? "/--compression-ratio (a budget like 75% keeps int(T x 0.75))"
                                                     : ""));
    }
    std::vector<std::string> methods = splitList(args.get("--methods", methodList), "--methods");
    const std::vector<std::string> budgets = splitList(args.get("--budgets", budgetList), "--budgets");
    const PressParams base = pressFromFlags(args);
    if (!args.has("--methods") && base.convention == Convention::Kvpress) {
        // The default list, under kvpress's convention: the methods it reproduces (named --methods are refused).
        std::string left;
        std::vector<std::string> kept;
        for (const std::string& m : methods) {
            const MethodInfo* info = methods::find(m);
            if (info && info->kvpressForm == KvpressForm::None)
                left += (left.empty() ? "" : ", ") + m;
            else
                kept.push_back(m);
        }
        if (!left.empty())
            std::fprintf(stderr, "%s: --convention kvpress leaves out %s (kvpress's forms are not reproduced)\n",
                         args.command().c_str(), left.c_str());
        methods = std::move(kept);
    }
    std::vector<PressParams> runs =
        sweepOf(base, methods, budgets, args.has("--window"), "--methods", "--budgets");
    warnUnreadFlags(args, runs, true);
    // Settings that do not depend on the prompt fail before the model loads.
    for (const PressParams& p : runs) p.validateSettings();
    return runs;
}

std::vector<PressParams> PressOptions::sweepOf(const PressParams& base, const std::vector<std::string>& methods,
                                              const std::vector<std::string>& budgets, bool windowGiven,
                                              const std::string& methodsField, const std::string& budgetsField) {
    // Under kvpress's convention chunkkv and finch run as chunkkv-kvpress and finch-kvpress: once.
    std::vector<std::string> asRun;
    for (const std::string& m : methods) {
        const std::string twin = methods::underConvention(m, base.convention);
        if (std::find(asRun.begin(), asRun.end(), twin) == asRun.end()) asRun.push_back(twin);
    }
    std::vector<PressParams> runs;
    for (const std::string& method : asRun) {
        const auto& known = PressParams::methodNames();
        if (std::find(known.begin(), known.end(), method) == known.end()) {
            std::string list;
            for (const auto& n : known) list += (list.empty() ? "" : ", ") + n;
            throw Error(methodsField + ": '" + method + "' is not one of " + list);
        }
        for (const std::string& budget : budgets) {
            PressParams p = base;
            p.method = method;
            if (!p.takesScorer()) p.scorer.clear();  // --scorer is for the methods that take one
            if (!p.reads(Knob::LayerWeights)) p.layerWeights.clear();
            parseBudget(budget, budgetsField, p);
            // A sweep may go below the default window (with the sinks a method keeps beside
            // it): halve it for those budgets (the W column shows it) unless --window was given.
            const int64_t fixed = p.window + (p.usesSinks() ? p.sinks : 0);
            if (!windowGiven && p.budget > 0 && p.budget <= fixed && p.usesWindow()) {
                p.window = std::max<int64_t>(1, p.budget / 2);
            }
            if (methods::named(method).id == MethodId::Full) {
                // One run says all there is, and its budget is 100% whichever budget came
                // first: a sweep given --budgets 256,128 is the same sweep as 128,256.
                p.budget = 0;
                p.budgetRatio = 1.0;
                runs.push_back(p);
                break;
            }
            runs.push_back(p);
        }
    }
    if (!base.scorer.empty() &&
        std::none_of(runs.begin(), runs.end(), [](const PressParams& p) { return p.takesScorer(); }))
        throw Error("--scorer is for " + methods::listWhere([](const MethodInfo& m) { return m.takesScorer; }) +
                    ", and " + methodsField + " names none of them");
    return runs;
}

void checkRunsFit(const std::vector<const PressParams*>& runs, int64_t T, const std::string& where,
                  const ModelConfig& model) {
    for (const PressParams* run : runs) {
        // A budget that holds the whole prompt keeps everything: a run measured so would be
        // saved under its budget as if it had compressed.
        if (!run->isFull() && run->budget > 0 && run->budget >= T) {
            throw Error(run->describe() + ": a budget of " + std::to_string(run->budget) + " entries holds the whole " +
                        std::to_string(T) + "-token prompt of " + where + " (a budget must be under the prompt's tokens)");
        }
        run->validate(T, Capture::windowCapacityFor(T));
        Press::requireModelSupport(model, T, *run);  // a sliding window, Gemma's soft-cap or local RoPE
    }
}

std::string budgetLabel(const PressParams& p) {
    if (p.isFull()) return "-";
    if (p.budget > 0) return std::to_string(p.budget);
    char text[32];
    std::snprintf(text, sizeof text, "%.10g%%", p.budgetRatio * 100);  // 50%, 12.5%, 33.33333333%
    return text;
}

int64_t parseTokenCount(const std::string& item, const std::string& flag) {
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
        throw Error(flag + ": '" + item + "' is not a token count (like 1500 or 2k)");
    }
    return v * scale;
}

}  // namespace kvlens
