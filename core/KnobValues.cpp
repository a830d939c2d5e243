// Each knob's value as text, and set from text: the one reader of a knob's value that the
// CLI's flags, describe() lines and JSON (runs, selections, the store) all go through.
#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <sstream>

#include "core/Error.h"
#include "core/Methods.h"
#include "core/PressParams.h"

namespace kvlens {

std::string methods::shortestText(double v) {
    char buf[32];
    const auto r = std::to_chars(buf, buf + sizeof buf, v);
    return std::string(buf, r.ptr);
}

namespace {

int64_t intIn(const KnobInfo& k, const std::string& text, const std::string& what) {
    char* end = nullptr;
    errno = 0;
    const long long v = std::strtoll(text.c_str(), &end, 10);
    if (text.empty() || *end != '\0' || errno != 0 || v < k.min || v > k.max)
        throw Error(what + " '" + text + "' is not an integer in [" + std::to_string(k.min) + ", " +
                    std::to_string(k.max) + "]");
    return v;
}

double finite(const std::string& text, const std::string& what) {
    char* end = nullptr;
    errno = 0;
    const double v = std::strtod(text.c_str(), &end);
    if (text.empty() || *end != '\0' || errno != 0 || !std::isfinite(v)) throw Error(what + " '" + text + "' is not a number");
    return v;
}

uint64_t seedOf(const std::string& text, const std::string& what) {
    char* end = nullptr;
    errno = 0;
    const unsigned long long v = std::strtoull(text.c_str(), &end, 10);
    if (text.empty() || text[0] == '-' || *end != '\0' || errno != 0)
        throw Error(what + " '" + text + "' is not a non-negative integer");
    return v;
}

std::vector<double> weightsOf(const std::string& text, const std::string& what) {
    if (text == "equal") return {};
    std::vector<double> out;
    std::stringstream in(text);
    std::string item;
    while (std::getline(in, item, ',')) {
        if (item.empty()) throw Error(what + " '" + text + "' has an empty item");
        char* end = nullptr;
        const double w = std::strtod(item.c_str(), &end);
        if (*end != '\0') throw Error(what + ": '" + item + "' is not a number");
        out.push_back(w);
    }
    if (text.empty() || text.back() == ',') throw Error(what + " '" + text + "' has an empty item");
    return out;
}

bool isWordOf(const KnobInfo& k, std::string_view word) {
    std::string_view words = k.words;
    while (!words.empty()) {
        const size_t bar = words.find('|');
        if (words.substr(0, bar) == word) return true;
        if (bar == std::string_view::npos) break;
        words.remove_prefix(bar + 1);
    }
    return false;
}

}  // namespace

std::string methods::knobValue(const PressParams& p, Knob k) {
    switch (k) {
        case Knob::Window: return std::to_string(p.window);
        case Knob::Scorer: return p.scorer;
        case Knob::Kernel: return std::to_string(p.kernel);
        case Knob::Pooling: return poolingName(p.pooling);
        case Knob::Gqa: return gqaModeName(p.gqa);
        case Knob::Beta: return shortestText(p.beta);
        case Knob::Schedule: return scheduleName(p.schedule);
        case Knob::Alpha: return shortestText(p.alpha);
        case Knob::Sinks: return std::to_string(p.sinks);
        case Knob::Lag: return std::to_string(p.lag);
        case Knob::Chunk: return std::to_string(p.chunk);
        case Knob::Future: return std::to_string(p.future);
        case Knob::Tau1: return shortestText(p.tau1);
        case Knob::Tau2: return shortestText(p.tau2);
        case Knob::Gamma: return shortestText(p.gamma);
        case Knob::Lazy: return shortestText(p.lazy);
        case Knob::LayerWeights: {
            if (p.layerWeights.empty()) return "equal";
            std::string out;
            for (size_t i = 0; i < p.layerWeights.size(); ++i) out += (i ? "," : "") + shortestText(p.layerWeights[i]);
            return out;
        }
        case Knob::Sketch: return std::to_string(p.sketch);
        case Knob::AttnChunk: return std::to_string(p.attnChunk);
        case Knob::RepeatChunk: return std::to_string(p.repeatChunk);
        case Knob::FinchChunk: return std::to_string(p.finchChunk);
        case Knob::Blend: return p.blend >= 0.0 ? shortestText(p.blend) : "auto";
        case Knob::Seed: return std::to_string(p.seed);
        case Knob::Think: return shortestText(p.think);
        case Knob::Convention: return conventionName(p.convention);
        case Knob::Count_: break;
    }
    return "";
}

void methods::setKnob(PressParams& p, Knob k, const std::string& text, const std::string& what) {
    const KnobInfo& info = knob(k);
    switch (k) {
        case Knob::Window: p.window = intIn(info, text, what); return;
        case Knob::Scorer: {
            if (!text.empty()) {
                const auto& scorers = scorerNames();
                if (std::find(scorers.begin(), scorers.end(), text) == scorers.end()) {
                    std::string list;
                    for (const auto& n : scorers) list += (list.empty() ? "" : ", ") + n;
                    throw Error(what + " '" + text + "' is not one of " + list);
                }
            }
            p.scorer = text;
            return;
        }
        case Knob::Kernel: p.kernel = intIn(info, text, what); return;
        case Knob::Pooling: p.pooling = parsePooling(text, what); return;
        case Knob::Gqa: p.gqa = parseGqaMode(text, what); return;
        case Knob::Beta: p.beta = finite(text, what); return;
        case Knob::Schedule: p.schedule = parseSchedule(text, what); return;
        case Knob::Alpha: p.alpha = finite(text, what); return;
        case Knob::Sinks: p.sinks = intIn(info, text, what); return;
        case Knob::Lag: p.lag = intIn(info, text, what); return;
        case Knob::Chunk: p.chunk = intIn(info, text, what); return;
        case Knob::Future: p.future = intIn(info, text, what); return;
        case Knob::Tau1: p.tau1 = finite(text, what); return;
        case Knob::Tau2: p.tau2 = finite(text, what); return;
        case Knob::Gamma: p.gamma = finite(text, what); return;
        case Knob::Lazy: p.lazy = finite(text, what); return;
        case Knob::LayerWeights: p.layerWeights = weightsOf(text, what); return;
        case Knob::Sketch: p.sketch = intIn(info, text, what); return;
        case Knob::AttnChunk: p.attnChunk = intIn(info, text, what); return;
        case Knob::RepeatChunk: p.repeatChunk = intIn(info, text, what); return;
        case Knob::FinchChunk: p.finchChunk = intIn(info, text, what); return;
        case Knob::Blend: {
            if (text == "auto") {
                p.blend = -1.0;
                return;
            }
            const double v = finite(text, what);
            if (!(v >= 0.0)) throw Error(what + " '" + text + "' must be >= 0 (or auto: the compression ratio)");
            p.blend = v;
            return;
        }
        case Knob::Seed: p.seed = seedOf(text, what); return;
        case Knob::Think: p.think = finite(text, what); return;
        case Knob::Convention: p.convention = parseConvention(text, what); return;
        case Knob::Count_: break;
    }
}

const KnobInfo* methods::knobByDescribeKey(std::string_view key) {
    for (const KnobInfo& k : knobs())
        if (*k.describeKey && key == k.describeKey) return &k;
    return nullptr;
}

const KnobInfo* methods::knobByWord(std::string_view word) {
    for (const KnobInfo& k : knobs())
        if (k.type == KnobType::Word && isWordOf(k, word)) return &k;
    return nullptr;
}

}  // namespace kvlens
