// Enum <-> text for the press knobs stored in a run.
#include "sessions/ParamText.h"

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "core/Error.h"

namespace kvlens::sessions {

std::string ParamText::of(GqaMode mode) { return gqaModeName(mode); }
std::string ParamText::of(Pooling pooling) { return poolingName(pooling); }
std::string ParamText::of(PyramidSchedule schedule) { return scheduleName(schedule); }

GqaMode ParamText::gqa(const std::string& text, const std::string& what) {
    return parseGqaMode(text, what + ":");
}

Pooling ParamText::pooling(const std::string& text, const std::string& what) {
    return parsePooling(text, what + ":");
}

PyramidSchedule ParamText::schedule(const std::string& text, const std::string& what) {
    return parseSchedule(text, what + ":");
}

Convention ParamText::convention(const std::string& text, const std::string& what) {
    return parseConvention(text, what + ":");
}

namespace {

// JSON has no NaN: write null, read it back as NaN.
nlohmann::json real(double v) {
    return std::isnan(v) ? nlohmann::json(nullptr) : nlohmann::json(v);
}
double real(const nlohmann::json& j) {
    return j.is_null() ? std::numeric_limits<double>::quiet_NaN() : j.get<double>();
}

}  // namespace

std::string ParamText::toJson(const PressParams& p) {
    const nlohmann::json j = {{"method", p.method},
                              {"budget", p.budget},
                              {"budget_ratio", real(p.budgetRatio)},
                              {"window", p.window},
                              {"kernel", p.kernel},
                              {"pool", of(p.pooling)},
                              {"beta", real(p.beta)},
                              {"alpha", real(p.alpha)},
                              {"gqa", of(p.gqa)},
                              {"schedule", of(p.schedule)},
                              {"sinks", p.sinks},
                              {"seed", p.seed},
                              {"lag", p.lag},
                              {"chunk", p.chunk},
                              {"future", p.future},
                              {"scorer", p.scorer},
                              {"tau1", p.tau1},
                              {"tau2", p.tau2},
                              {"gamma", p.gamma},
                              {"lazy", p.lazy},
                              {"layer_weights", p.layerWeights},
                              {"sketch", p.sketch},
                              {"attn_chunk", p.attnChunk},
                              {"blend", p.blend},
                              {"think", p.think},
                              {"repeat_chunk", p.repeatChunk},
                              {"finch_chunk", p.finchChunk},
                              {"convention", conventionName(p.convention)}};
    return j.dump();
}

PressParams ParamText::fromJson(const std::string& json, const std::string& what) {
    try {
        const nlohmann::json j = nlohmann::json::parse(json);
        PressParams p;
        p.method = j.at("method").get<std::string>();
        p.budget = j.at("budget").get<int64_t>();
        p.budgetRatio = real(j.at("budget_ratio"));
        p.window = j.at("window").get<int64_t>();
        p.kernel = j.at("kernel").get<int64_t>();
        p.pooling = pooling(j.at("pool").get<std::string>(), what + ".pool");
        p.beta = real(j.at("beta"));
        p.alpha = real(j.at("alpha"));
        p.gqa = gqa(j.at("gqa").get<std::string>(), what + ".gqa");
        p.schedule = schedule(j.at("schedule").get<std::string>(), what + ".schedule");
        p.sinks = j.at("sinks").get<int64_t>();
        p.seed = j.at("seed").get<uint64_t>();
        // Written since schema 3; older runs hold the defaults.
        p.lag = j.value("lag", p.lag);
        p.chunk = j.value("chunk", p.chunk);
        p.future = j.value("future", p.future);
        // Written since schema 5.
        p.scorer = j.value("scorer", p.scorer);
        p.tau1 = j.value("tau1", p.tau1);
        p.tau2 = j.value("tau2", p.tau2);
        p.gamma = j.value("gamma", p.gamma);
        p.lazy = j.value("lazy", p.lazy);
        p.layerWeights = j.value("layer_weights", p.layerWeights);
        // Written since schema 6.
        p.sketch = j.value("sketch", p.sketch);
        p.attnChunk = j.value("attn_chunk", p.attnChunk);
        p.blend = j.value("blend", p.blend);
        p.think = j.value("think", p.think);
        // Written since schema 7.
        p.repeatChunk = j.value("repeat_chunk", p.repeatChunk);
        // Written since schema 8.
        p.finchChunk = j.value("finch_chunk", p.finchChunk);
        // Written since schema 9.
        if (j.contains("convention")) p.convention = convention(j.at("convention").get<std::string>(), what + ".convention");
        return p;
    } catch (const nlohmann::json::exception& e) {
        throw Error(what + ": malformed press parameters (" + std::string(e.what()) + ")");
    }
}

}  // namespace kvlens::sessions
