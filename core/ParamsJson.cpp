#include "core/ParamsJson.h"

#include <algorithm>

#include "core/Error.h"
#include "core/Methods.h"

namespace kvlens::methods {

namespace {

const char* typeOf(const nlohmann::json& j) {
    if (j.is_null()) return "null";
    if (j.is_boolean()) return "a boolean";
    if (j.is_number_integer() || j.is_number_unsigned()) return "an integer";
    if (j.is_number()) return "a number";
    if (j.is_string()) return "a string";
    if (j.is_array()) return "a list";
    return "an object";
}

[[noreturn]] void wrongType(const std::string& field, const char* expected, const nlohmann::json& got) {
    throw Error(field + ": expected " + expected + ", got " + typeOf(got));
}

// A JSON value as the knob's text (setKnob then reads and range-checks it).
std::string textOf(const KnobInfo& k, const nlohmann::json& v, const std::string& field) {
    switch (k.type) {
        case KnobType::Int:
            if (v.is_number_unsigned()) return std::to_string(v.get<uint64_t>());
            if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
            wrongType(field, "an integer", v);
        case KnobType::Seed:
            if (v.is_number_unsigned()) return std::to_string(v.get<uint64_t>());
            if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
            wrongType(field, "a non-negative integer", v);
        case KnobType::Real:
            if (k.knob == Knob::Blend && v.is_string()) return v.get<std::string>();
            if (v.is_number()) return shortestText(v.get<double>());
            wrongType(field, k.knob == Knob::Blend ? "a number or \"auto\"" : "a number", v);
        case KnobType::Word:
        case KnobType::Name:
            if (v.is_string()) return v.get<std::string>();
            wrongType(field, "a string", v);
        case KnobType::Reals: {
            if (!v.is_array()) wrongType(field, "a list of numbers", v);
            if (v.empty()) return "equal";
            std::string out;
            for (const nlohmann::json& w : v) {
                if (!w.is_number()) wrongType(field + "[]", "a number", w);
                out += (out.empty() ? "" : ",") + shortestText(w.get<double>());
            }
            return out;
        }
    }
    return "";
}

}  // namespace

nlohmann::json knobsJson(const PressParams& p) {
    nlohmann::json out = nlohmann::json::object();
    for (const KnobInfo& k : knobs()) {
        const std::string text = knobValue(p, k.knob);
        nlohmann::json& v = out[k.json];
        switch (k.type) {
            case KnobType::Int: v = std::stoll(text); break;
            case KnobType::Seed: v = p.seed; break;
            case KnobType::Real:
                if (k.knob == Knob::Blend && p.blend < 0.0) v = "auto";
                else v = std::strtod(text.c_str(), nullptr);
                break;
            case KnobType::Word:
            case KnobType::Name: v = text; break;
            case KnobType::Reals: v = p.layerWeights; break;
        }
    }
    return out;
}

nlohmann::json paramsJson(const PressParams& p) {
    nlohmann::json out = knobsJson(p);
    out["method"] = p.method;
    out["budget"] = p.budget;
    out["budget_ratio"] = p.budgetRatio;
    return out;
}

void setKnobs(PressParams& p, const nlohmann::json& object, const std::string& what,
              std::initializer_list<const char*> also) {
    if (!object.is_object()) wrongType(what, "an object of parameters", object);
    for (const auto& [key, value] : object.items()) {
        if (std::any_of(also.begin(), also.end(), [&](const char* a) { return key == a; })) continue;
        const auto k = std::find_if(knobs().begin(), knobs().end(), [&](const KnobInfo& i) { return key == i.json; });
        if (k == knobs().end()) throw Error(what + ": '" + key + "' is not a parameter of a method");
        const std::string field = what + "." + key;
        setKnob(p, k->knob, textOf(*k, value, field), field);
    }
}

PressParams paramsFromJson(const nlohmann::json& object, const std::string& what) {
    PressParams p;
    setKnobs(p, object, what, {"method", "budget", "budget_ratio"});
    const auto method = object.find("method");
    if (method == object.end()) throw Error(what + ": no method");
    if (!method->is_string()) wrongType(what + ".method", "a string", *method);
    p.method = named(method->get<std::string>(), what + ".method").name;
    if (const auto b = object.find("budget"); b != object.end()) {
        if (!b->is_number_integer()) wrongType(what + ".budget", "an integer", *b);
        constexpr int64_t kMax = int64_t(1) << 31;  // the longest prompt a run takes
        if (b->is_number_unsigned() ? b->get<uint64_t>() > uint64_t(kMax) : (b->get<int64_t>() < 0 || b->get<int64_t>() > kMax))
            throw Error(what + ".budget " + b->dump() + " is outside [0, " + std::to_string(kMax) + "]");
        p.budget = b->get<int64_t>();
    }
    if (const auto r = object.find("budget_ratio"); r != object.end()) {
        if (!r->is_number()) wrongType(what + ".budget_ratio", "a number", *r);
        const double v = r->get<double>();
        if (!(v >= 0.0 && v <= 1.0)) throw Error(what + ".budget_ratio " + shortestText(v) + " is outside [0, 1]");
        p.budgetRatio = v;
    }
    return p;
}

}  // namespace kvlens::methods
