// Enum <-> text for the press knobs stored in a run.
#include "sessions/ParamText.h"

#include <nlohmann/json.hpp>

#include "core/Error.h"
#include "core/ParamsJson.h"

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

std::string ParamText::toJson(const PressParams& p) { return methods::paramsJson(p).dump(); }

PressParams ParamText::fromJson(const std::string& json, const std::string& what) {
    nlohmann::json j;
    try {
        j = nlohmann::json::parse(json);
    } catch (const nlohmann::json::exception& e) {
        throw Error(what + ": not JSON (" + std::string(e.what()) + ")");
    }
    if (j.is_object()) {
        // Written before the knob table's JSON (schema 9 and older): NaN as null, and an
        // automatic --blend as -1.
        for (const char* key : {"budget_ratio", "beta", "alpha"})
            if (j.contains(key) && j[key].is_null()) j.erase(key);
        if (j.contains("blend") && j["blend"].is_number() && j["blend"].get<double>() < 0.0) j["blend"] = "auto";
    }
    return methods::paramsFromJson(j, what);
}

}  // namespace kvlens::sessions
