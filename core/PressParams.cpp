#include "core/PressParams.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "core/Error.h"
#include "core/Methods.h"

namespace kvlens {

const char* gqaModeName(GqaMode mode) { return mode == GqaMode::KvHead ? "kv-head" : "query-head"; }
const char* poolingName(Pooling pooling) { return pooling == Pooling::Max ? "max" : "avg"; }
const char* conventionName(Convention convention) { return convention == Convention::Paper ? "paper" : "kvpress"; }
const char* scheduleName(PyramidSchedule s) { return s == PyramidSchedule::Exact ? "exact" : "factory"; }

namespace {

// "--budget 128 must exceed --window 256 (...)", or for a ratio which share of
// which prompt rounded to what.
std::string budgetTooSmall(const PressParams& p, int64_t promptLength, int64_t resolved, const char* flag,
                           int64_t floor, const char* why) {
    std::ostringstream s;
    s << "--budget ";
    if (p.budget > 0) {
        s << p.budget;
    } else {
        s << p.budgetRatio * 100 << "% of the " << promptLength << "-token prompt "
          << (p.convention == Convention::Kvpress ? "truncates" : "rounds") << " to " << resolved
          << ", which";
    }
    s << " must exceed " << flag << " " << floor << " (" << why << ")";
    return s.str();
}

}  // namespace

const std::vector<std::string>& PressParams::methodNames() { return methods::names(); }

const std::vector<std::string>& PressParams::scorerNames() { return methods::scorerNames(); }

const MethodInfo* PressParams::info() const { return methods::find(method); }

bool PressParams::takesScorer() const {
    const MethodInfo* m = info();
    return m && m->takesScorer;
}

bool PressParams::reads(Knob knob) const { return methods::effectiveKnobs(*this).has(knob); }

bool PressParams::ranksBy(const std::string& name) const {
    const std::string s = takesScorer() ? scorerInEffect() : method;
    if (s == name) return true;
    // Compactor blends LeverageScore's and non-causal attention's scores: it ranks by both.
    const MethodInfo* ranked = methods::find(s);
    return ranked && ranked->id == MethodId::Compactor &&
           (name == methods::info(MethodId::Leverage).name || name == methods::info(MethodId::NonCausal).name);
}

double PressParams::blendFor(int64_t promptLength) const {
    if (blend >= 0.0) return blend;
    return promptLength > 0 ? std::max(0.0, 1.0 - double(resolveBudget(promptLength)) / double(promptLength)) : 0.0;
}

std::pair<int64_t, int64_t> PressParams::rankedSpan(int64_t T) const {
    if (!reads(Knob::Blend)) return {0, T};
    const int64_t lo = std::clamp<int64_t>(sinks, 0, T);
    return {lo, std::max(lo, T - std::max<int64_t>(window, 0))};
}

std::string PressParams::scorerInEffect() const {
    if (!takesScorer()) return "";
    if (!scorer.empty()) return scorer;
    return info()->defaultScorer;
}

bool PressParams::usesWindow() const {
    PressParams noThink = *this;
    noThink.think = 0.0;
    return noThink.reads(Knob::Window);
}

bool PressParams::usesSinks() const { return reads(Knob::Sinks); }

int64_t PressParams::keptTail(int64_t T) const {
    // A wrapper ranking by LagKV keeps its tail (its scorer's end) beside the window.
    if (!takesScorer() || !reads(Knob::Lag)) return window;
    return std::max(window, T - lagTailStart(T));
}

int64_t PressParams::keptEndStart(int64_t T) const {
    if (keepsOwn(Keep::LagTail)) return lagTailStart(T);
    if (usesWindow()) return std::max<int64_t>(0, T - keptTail(T));
    return T;
}

bool PressParams::keptEndIsLagTail(int64_t T) const { return keepsOwn(Keep::LagTail) || keptTail(T) > window; }

bool PressParams::keepsOwn(Keep keep) const {
    const MethodInfo* m = info();
    return m && methods::keepsUnder(*m, convention).has(keep);
}

std::string PressParams::keptEndName(int64_t T) const {
    return keptEndIsLagTail(T) ? "LagKV's tail" : "observation window";
}

int64_t PressParams::lagTailStart(int64_t T) const {
    const int64_t full = lag > 0 ? std::max<int64_t>(0, (T - sinks) / lag) : 0;
    return std::min(T, sinks + std::max<int64_t>(0, full - 1) * lag);
}

int64_t PressParams::resolveBudget(int64_t promptLength) const {
    if (budget > 0) return budget;
    if (convention == Convention::Kvpress)
        return std::max<int64_t>(1, static_cast<int64_t>(std::floor(double(promptLength) * budgetRatio)));
    return std::max<int64_t>(1, std::llround(budgetRatio * double(promptLength)));
}

void PressParams::validate(int64_t promptLength, int64_t maxWindow) const {
    const MethodInfo& m = methods::named(method);
    const KnobSet knobs = methods::effectiveKnobs(*this);
    if (!scorer.empty()) {
        if (!m.takesScorer)
            throw Error("--scorer is for " + methods::listWhere([](const MethodInfo& i) { return i.takesScorer; }) +
                        ", not --method " + method);
        const auto& scorers = scorerNames();
        if (std::find(scorers.begin(), scorers.end(), scorer) == scorers.end()) {
            std::string list;
            for (const auto& n : scorers) list += (list.empty() ? "" : ", ") + n;
            throw Error("--scorer '" + scorer + "' is not one of " + list);
        }
    }
    if (!layerWeights.empty() && !knobs.has(Knob::LayerWeights))
        throw Error("--layer-weights is for --method " +
                    methods::listWhere([](const MethodInfo& i) { return i.knobs.has(Knob::LayerWeights); }) +
                    ", not " + method);
    for (double w : layerWeights) {
        if (!(w > 0.0 && std::isfinite(w))) {
            std::ostringstream s;
            s << "--layer-weights: " << w << " is not a positive weight";
            throw Error(s.str());
        }
    }
    if (!(think >= 0.0 && think < 1.0)) {
        std::ostringstream s;
        s << "--think " << think << " must be in [0, 1) (the share of each key's channels ThinK prunes)";
        throw Error(s.str());
    }
    // ThinK scores the channels by the window's queries.
    if (think > 0.0 && window < 1) throw Error("--window must be at least 1 (ThinK scores channels by the window's queries)");
    if (convention == Convention::Kvpress) {
        if (m.kvpressTwin) {
            throw Error(std::string("--convention kvpress: kvpress's form of ") + m.name + " is --method " +
                        methods::info(*m.kvpressTwin).name + " (the command line runs it for --method " + m.name +
                        ")");
        }
        const MethodInfo* s = m.takesScorer ? methods::find(scorerInEffect()) : nullptr;
        if (m.kvpressForm == KvpressForm::None || (s && s->kvpressForm == KvpressForm::None)) {
            const MethodInfo& off = m.kvpressForm == KvpressForm::None ? m : *s;
            throw Error(std::string("--convention kvpress: ") + (&off == &m ? "--method " : "--scorer ") + off.name +
                        " does not keep kvpress's positions (" +
                        (*off.kvpress ? std::string(off.kvpressDelta) : "kvpress has no such press") +
                        "); the methods that can: " +
                        methods::listWhere([](const MethodInfo& i) { return i.kvpressForm != KvpressForm::None; }));
        }
        // kvpress's SnapKV (and every press built on its votes) averages the pooled window votes of
        // each KV head's query heads.
        if (knobs.has(Knob::Pooling) && pooling != Pooling::Avg)
            throw Error("--pool max: kvpress pools the window's votes by avg (--convention kvpress)");
        if (knobs.has(Knob::Gqa) && gqa != GqaMode::KvHead)
            throw Error("--gqa query-head: kvpress averages each KV head's query heads (--convention kvpress)");
    }
    if (m.id == MethodId::Full) return;  // keeps everything: no budget to check
    if (budget < 0) throw Error("--budget must be positive");
    if (budget == 0 && !(budgetRatio > 0.0 && budgetRatio <= 1.0)) {
        throw Error("--budget as a ratio must be in (0, 100%]");
    }
    const int64_t B = resolveBudget(promptLength);
    // Keep-all wins whenever the budget holds the whole prompt, whatever the
    // window (the reference code keeps everything when T <= B): the window and
    // sink checks below only matter when something is dropped.
    const bool keepsAll = B >= promptLength;
    if (usesWindow()) {
        if (window < 1) throw Error("--window must be at least 1");
        if (!keepsAll && window >= promptLength) {
            throw Error("--window " + std::to_string(window) + " must be below the prompt length " +
                        std::to_string(promptLength) + " (or the budget must hold the whole prompt)");
        }
        // (Finch runs its question itself: its window is not the capture's window queries.)
        if (!keepsAll && window > maxWindow && !m.needs.has(Need::SecondPrefill)) {
            throw Error("--window " + std::to_string(window) + " is above the " +
                        std::to_string(maxWindow) + " window queries the capture holds");
        }
        // (kvpress's ChunkKV keeps no window as such: its scorer's window only scores high.)
        if (!keepsAll && B <= window && m.keeps.has(Keep::Window))
            throw Error(budgetTooSmall(*this, promptLength, B, "--window", window, "the budget includes the window"));
    }
    if (knobs.has(Knob::Kernel)) {
        if (kernel < 1 || kernel % 2 == 0) {
            throw Error("--kernel " + std::to_string(kernel) + " must be odd and positive");
        }
    }
    // Below 1 the last layer's P/beta passes the first layer's 2P - P/beta: the budget would
    // rise across layers, and below 0.5 the first layer's would go negative.
    if (knobs.has(Knob::Beta) && !(beta >= 1.0)) {
        std::ostringstream s;
        s << "--beta " << beta << " must be at least 1 (layers fall from 2P - P/beta to P/beta)";
        throw Error(s.str());
    }
    if (knobs.has(Knob::Alpha) && !(alpha >= 0.0 && alpha <= 1.0)) {
        std::ostringstream s;
        s << "--alpha " << alpha << " must be in [0, 1]";
        throw Error(s.str());
    }
    if (knobs.has(Knob::Tau1)) {
        for (const auto& [flag, v] : {std::pair<const char*, double>{"--tau1", tau1}, {"--tau2", tau2}}) {
            if (!(v > 0.0 && std::isfinite(v))) {
                std::ostringstream s;
                s << flag << " " << v << " must be positive (CAKE raises the dispersion to 1/tau)";
                throw Error(s.str());
            }
        }
    }
    // CAKE's layer preference and its indicator both take a variance over the window's rows
    // (n - 1): one row has none (NaN would mark every position as always kept).
    if ((knobs.has(Knob::Tau1) || knobs.has(Knob::Gamma)) && window < 2)
        throw Error("--window " + std::to_string(window) +
                    " is too short for CAKE, which measures the attention's variance over the window's rows: use 2 or more");
    if (knobs.has(Knob::Gamma) && !(gamma >= 0.0 && std::isfinite(gamma))) {
        std::ostringstream s;
        s << "--gamma " << gamma << " must be >= 0";
        throw Error(s.str());
    }
    if (knobs.has(Knob::Sketch) && sketch < 1)
        throw Error("--sketch " + std::to_string(sketch) + " must be at least 1 (the columns of the keys' Gaussian sketch)");
    if (knobs.has(Knob::RepeatChunk) && repeatChunk < 1)
        throw Error("--repeat-chunk " + std::to_string(repeatChunk) +
                    " must be at least 1 (the context positions KVzip repeats per reconstruction pass)");
    if (knobs.has(Knob::FinchChunk) && finchChunk < 1)
        throw Error("--finch-chunk " + std::to_string(finchChunk) +
                    " must be at least 1 (the context positions Finch prefills per step)");
    // Finch prefills its own cache, finch-kvpress re-rotates the kept keys: no channel to score.
    if (think > 0.0 && *m.noThink) throw Error(m.noThink);
    if (knobs.has(Knob::AttnChunk) && attnChunk < 1)
        throw Error("--attn-chunk " + std::to_string(attnChunk) + " must be at least 1");
    if (knobs.has(Knob::Blend) && !(std::isfinite(blend) && (blend >= 0.0 || blend == -1.0))) {
        std::ostringstream s;
        s << "--blend " << blend << " must be >= 0 (or auto: the compression ratio)";
        throw Error(s.str());
    }
    if (knobs.has(Knob::Lazy) && !(lazy >= 0.0 && lazy <= 1.0)) {
        std::ostringstream s;
        s << "--lazy " << lazy << " must be in [0, 1]";
        throw Error(s.str());
    }
    if (usesSinks()) {
        if (sinks < 0) throw Error("--sinks must be >= 0");
        if (methods::effectiveNeeds(*this).has(Need::QueryStats)) {
            if (!keepsAll && sinks > kMaxQuerySinks) {
            throw Error("--sinks " + std::to_string(sinks) + " is above the " + std::to_string(kMaxQuerySinks) +
                        " first queries the capture keeps (Expected Attention leaves the sinks' queries out of its statistics)");
            }
        }
        // (kvpress's ChunkKV keeps no position as such: its scorer's sinks only score high.)
        const bool keepsEnds = !m.takesScorer || m.keeps.has(Keep::ScorerEnds);
        if (!keepsAll && keepsEnds && B <= sinks)
            throw Error(budgetTooSmall(*this, promptLength, B, "--sinks", sinks, "the budget includes the sinks"));
        // A wrapper keeps its window and its scorer's sinks beside what it ranks.
        if (!keepsAll && keepsEnds && usesWindow() && B <= window + sinks)
            throw Error(budgetTooSmall(*this, promptLength, B, "--window + --sinks", window + sinks,
                                       "the budget includes the window and the scorer's sinks"));
        if (!keepsAll && usesWindow() && window + sinks >= promptLength)
            throw Error("--window " + std::to_string(window) + " and --sinks " + std::to_string(sinks) +
                        " leave nothing of the " + std::to_string(promptLength) + "-token prompt to rank");
    }
    if (knobs.has(Knob::Lag) && lag < 1)
        throw Error("--lag " + std::to_string(lag) + " must be at least 1");
    // A wrapper ranking by LagKV keeps its tail whole beside the window: something must be left.
    // (The window + sinks check above has passed, so here the tail is the longer.)
    if (knobs.has(Knob::Lag) && m.keeps.has(Keep::ScorerEnds) && !keepsAll &&
        B <= sinks + keptTail(promptLength)) {
        const int64_t tail = promptLength - lagTailStart(promptLength);
        const std::string why = "LagKV keeps its sinks and its last full partition with the remainder whole: " +
                                std::to_string(tail) + " positions at --lag " + std::to_string(lag) + " on a " +
                                std::to_string(promptLength) + "-token prompt; raise the budget or lower --lag";
        throw Error(budgetTooSmall(*this, promptLength, B, "--sinks + LagKV's tail", sinks + tail, why.c_str()));
    }
    if (m.keeps.has(Keep::LagTail) && !keepsAll && B < sinks + promptLength - lagTailStart(promptLength)) {
        const int64_t tail = promptLength - lagTailStart(promptLength);
        throw Error("--budget " + std::to_string(B) + " must hold LagKV's " + std::to_string(sinks) +
                    " sinks and its last partition with the remainder (" + std::to_string(tail) +
                    " positions at --lag " + std::to_string(lag) + " on a " + std::to_string(promptLength) +
                    "-token prompt): raise the budget or lower --lag");
    }
    if (knobs.has(Knob::Chunk) && chunk < 1)
        throw Error("--chunk " + std::to_string(chunk) + " must be at least 1");
    if (m.id == MethodId::ChunkKvKvpress && !keepsAll && chunk > promptLength) {
        throw Error("--chunk " + std::to_string(chunk) + " is longer than the " + std::to_string(promptLength) +
                    "-token prompt (kvpress's ChunkKV then falls back to its scorer alone)");
    }
    const int64_t tail = keptTail(promptLength);
    if (m.id == MethodId::ChunkKv && !keepsAll && B - tail - (usesSinks() ? sinks : 0) < chunk) {
        const int64_t fixed = tail + (usesSinks() ? sinks : 0);
        throw Error("--budget " + std::to_string(B) + " leaves " + std::to_string(B - fixed) + " entries beside " +
                    (tail > window ? "LagKV's last " + std::to_string(tail) + " positions" : "--window " + std::to_string(window)) +
                    (usesSinks() ? " and --sinks " + std::to_string(sinks) : std::string()) +
                    ", less than one --chunk of " + std::to_string(chunk));
    }
    if (knobs.has(Knob::Future) && future < 1) throw Error("--future " + std::to_string(future) + " must be at least 1");
}

namespace {

std::string exact(double v) { return methods::shortestText(v); }

// A ratio as a percentage, the shortest that fromDescription's v / 100 reads back as the same
// double; "" when no decimal does (then describe() adds ratio=, the double itself).
std::string exactPercent(double ratio) {
    for (int decimals = 0; decimals <= 20; ++decimals) {
        char buf[64];
        std::snprintf(buf, sizeof buf, "%.*f", decimals, ratio * 100.0);
        if (std::strtod(buf, nullptr) / 100.0 == ratio) return buf;
    }
    return "";
}

}  // namespace

std::string methods::knobsText(const PressParams& p, KnobSet set) {
    const KnobSet reads = effectiveKnobs(p);
    std::string out;
    for (const KnobInfo& k : knobs()) {
        if (!set.has(k.knob) || !reads.has(k.knob)) continue;
        if (k.knob == Knob::Convention && p.convention == Convention::Paper) continue;  // the default says nothing
        const std::string value = knobValue(p, k.knob);
        if (value.empty()) continue;
        out += (out.empty() ? "" : ", ") + (*k.describeKey ? std::string(k.describeKey) + " " : std::string()) + value;
    }
    return out;
}

std::string PressParams::describe() const {
    std::ostringstream s;
    // A ratio no percentage reads back exactly is written as it is, after the percentage.
    const std::string percent = budget > 0 ? "" : exactPercent(budgetRatio);
    s << method << " B=";
    if (budget > 0) {
        s << budget;
    } else {
        char rounded[64];
        std::snprintf(rounded, sizeof rounded, "%.6g", budgetRatio * 100.0);
        s << (percent.empty() ? std::string(rounded) : percent) << "%";
    }
    const KnobSet knobs = methods::effectiveKnobs(*this);
    for (const KnobInfo& k : methods::knobs()) {
        if (!knobs.has(k.knob)) continue;
        // Defaults that mean "none" leave no word: no --scorer, no weights, blend's auto.
        // (The paper convention, the default, leaves none either: lines written before it existed mean it.)
        if ((k.knob == Knob::Blend && blend < 0.0) || (k.knob == Knob::LayerWeights && layerWeights.empty()) ||
            (k.knob == Knob::Convention && convention == Convention::Paper))
            continue;
        const std::string value = methods::knobValue(*this, k.knob);
        if (value.empty()) continue;
        s << " " << (*k.describeKey ? std::string(k.describeKey) + "=" : std::string()) << value;
    }
    if (budget <= 0 && percent.empty()) s << " ratio=" << exact(budgetRatio);
    return s.str();
}

PressParams PressParams::fromDescription(const std::string& line, const std::string& what) {
    std::istringstream in(line);
    PressParams p;
    if (!(in >> p.method)) throw Error(what + ": the line is empty");
    const auto& names = methodNames();
    if (std::find(names.begin(), names.end(), p.method) == names.end())
        throw Error(what + ": '" + p.method + "' is not a method");
    auto number = [&](const std::string& word, size_t from) {
        const std::string digits = word.substr(from);
        char* end = nullptr;
        const double v = std::strtod(digits.c_str(), &end);
        if (digits.empty() || end == digits.c_str() || (*end != '\0' && std::string(end) != "%"))
            throw Error(what + ": '" + word + "' is not a number");
        return v;
    };
    for (std::string word; in >> word;) {
        const size_t eq = word.find('=');
        const std::string key = eq == std::string::npos ? "" : word.substr(0, eq);
        const std::string value = eq == std::string::npos ? "" : word.substr(eq + 1);
        if (key == "B") {
            const double v = number(word, 2);
            if (word.back() == '%') {
                p.budget = 0;
                p.budgetRatio = v / 100.0;
            } else {
                p.budget = static_cast<int64_t>(std::llround(v));
            }
        } else if (key == "ratio") {
            p.budget = 0;
            p.budgetRatio = number(word, 6);
        } else if (const KnobInfo* k = eq == std::string::npos ? methods::knobByWord(word) : methods::knobByDescribeKey(key)) {
            methods::setKnob(p, k->knob, eq == std::string::npos ? word : value, what + ": " + (eq == std::string::npos ? k->json : key));
        } else {
            throw Error(what + ": '" + word + "' is not a parameter of a method");
        }
    }
    return p;
}

GqaMode parseGqaMode(const std::string& t, const std::string& what) {
    if (t == "kv-head") return GqaMode::KvHead;
    if (t == "query-head") return GqaMode::QueryHead;
    throw Error(what + " '" + t + "' is not kv-head or query-head");
}

Pooling parsePooling(const std::string& t, const std::string& what) {
    if (t == "max") return Pooling::Max;
    if (t == "avg") return Pooling::Avg;
    throw Error(what + " '" + t + "' is not max or avg");
}

PyramidSchedule parseSchedule(const std::string& t, const std::string& what) {
    if (t == "exact") return PyramidSchedule::Exact;
    if (t == "factory") return PyramidSchedule::Factory;
    throw Error(what + " '" + t + "' is not exact or factory");
}

Convention parseConvention(const std::string& t, const std::string& what) {
    if (t == "paper") return Convention::Paper;
    if (t == "kvpress") return Convention::Kvpress;
    throw Error(what + " '" + t + "' is not paper or kvpress");
}

}  // namespace kvlens
