// A method's parameters as JSON, written and read through the knob table (core/Methods):
// `run --json`, `select --json`, `sessions show --json`, a saved selection's parameters and
// a stored run's knobs (the store's runs.params column) are all this one form.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "core/PressParams.h"

namespace kvlens::methods {

// {"window": 32, "pool": "max", ..., "blend": "auto", "layer_weights": [], "convention": "paper"}:
// every knob under its JSON key, each as its type writes it (numbers, words, a list).
nlohmann::json knobsJson(const PressParams& p);
// knobsJson with "method", "budget" (entries per head; 0: a ratio) and "budget_ratio".
nlohmann::json paramsJson(const PressParams& p);

// Sets the knobs an object names onto `p` (what it leaves out keeps its value); refuses a key
// that is no knob and a value of the wrong type or range: "WHAT.window: expected an integer,
// got string", "WHAT.window '0' is not an integer in [1, 1048576]". `also` lists keys the
// caller reads itself (skipped here).
void setKnobs(PressParams& p, const nlohmann::json& object, const std::string& what,
              std::initializer_list<const char*> also = {});
// What paramsJson wrote (keys it leaves out keep their defaults).
PressParams paramsFromJson(const nlohmann::json& object, const std::string& what);

}  // namespace kvlens::methods
