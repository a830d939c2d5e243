#include "sessions/LegacyRunParams.h"

#include <nlohmann/json.hpp>

#include "core/Error.h"
#include "sessions/ParamText.h"
#include "sessions/Statement.h"

namespace kvlens::sessions {

// A read-only schema 2 store has no lag, chunk_size or future column, one before schema 5 no
// scorer, tau1, tau2, gamma or lazy column, one before schema 6 no sketch, attn_chunk, blend or
// think column, one before schema 7 no repeat_chunk column, one before schema 8 no finch_chunk
// column, one before schema 9 no convention column: their defaults stand in.
std::string LegacyRunParams::columns(int64_t schema, const std::string& prefix) {
    std::string out;
    for (const char* c : {"method", "budget", "budget_ratio", "window_size", "kernel", "pooling", "beta", "alpha", "gqa",
                          "schedule", "sinks", "seed"})
        out += (out.empty() ? "" : ", ") + prefix + c;
    const PressParams d;
    if (schema < 3) {
        out += ", " + std::to_string(d.lag) + ", " + std::to_string(d.chunk) + ", " + std::to_string(d.future);
    } else {
        out += ", " + prefix + "lag, " + prefix + "chunk_size, " + prefix + "future";
    }
    if (schema < 5) {
        out += ", '', 1.0, 1.0, 200.0, 0.9, '[]'";  // PressParams' defaults
    } else {
        out += ", " + prefix + "scorer, " + prefix + "tau1, " + prefix + "tau2, " + prefix + "gamma, " + prefix +
               "lazy, " + prefix + "layer_weights";
    }
    if (schema < 6) return out + ", 48, 256, -1.0, 0.0, 2048, " + std::to_string(d.finchChunk) + ", 'paper'";  // PressParams' defaults
    out += ", " + prefix + "sketch, " + prefix + "attn_chunk, " + prefix + "blend, " + prefix + "think";
    if (schema < 7) return out + ", 2048, " + std::to_string(d.finchChunk) + ", 'paper'";
    out += ", " + prefix + "repeat_chunk";
    if (schema < 8) return out + ", " + std::to_string(d.finchChunk) + ", 'paper'";
    out += ", " + prefix + "finch_chunk";
    return schema < 9 ? out + ", 'paper'" : out + ", " + prefix + "convention";
}

PressParams LegacyRunParams::read(const Statement& s, int first, const std::string& what) {
    PressParams p;
    p.method = s.getText(first);
    p.budget = s.getInt(first + 1);
    p.budgetRatio = s.getDouble(first + 2);
    p.window = s.getInt(first + 3);
    p.kernel = s.getInt(first + 4);
    p.pooling = ParamText::pooling(s.getText(first + 5), what + ".pooling");
    p.beta = s.getDouble(first + 6);
    p.alpha = s.getDouble(first + 7);
    p.gqa = ParamText::gqa(s.getText(first + 8), what + ".gqa");
    p.schedule = ParamText::schedule(s.getText(first + 9), what + ".schedule");
    p.sinks = s.getInt(first + 10);
    p.seed = uint64_t(s.getInt(first + 11));
    p.lag = s.getInt(first + 12);
    p.chunk = s.getInt(first + 13);
    p.future = s.getInt(first + 14);
    p.scorer = s.getText(first + 15);
    p.tau1 = s.getDouble(first + 16);
    p.tau2 = s.getDouble(first + 17);
    p.gamma = s.getDouble(first + 18);
    p.lazy = s.getDouble(first + 19);
    try {
        p.layerWeights = nlohmann::json::parse(s.getText(first + 20)).get<std::vector<double>>();
    } catch (const nlohmann::json::exception& e) {
        throw Error(what + ".layer_weights: not a list of numbers (" + std::string(e.what()) + ")");
    }
    p.sketch = s.getInt(first + 21);
    p.attnChunk = s.getInt(first + 22);
    p.blend = s.getDouble(first + 23);
    p.think = s.getDouble(first + 24);
    p.repeatChunk = s.getInt(first + 25);
    p.finchChunk = s.getInt(first + 26);
    p.convention = ParamText::convention(s.getText(first + 27), what + ".convention");
    return p;
}

const std::vector<const char*>& LegacyRunParams::knobColumns() {
    static const std::vector<const char*> c = {
        "window_size", "kernel", "pooling", "beta",  "alpha", "gqa",   "schedule",      "sinks",
        "seed",        "lag",    "chunk_size", "future", "scorer", "tau1", "tau2", "gamma", "lazy",
        "layer_weights", "sketch", "attn_chunk", "blend", "think", "repeat_chunk", "finch_chunk", "convention"};
    return c;
}

}  // namespace kvlens::sessions
