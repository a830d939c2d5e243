// A run's press parameters as stores of schema 1 to 9 hold them: one runs column per knob
// (window_size, kernel, ..., convention), each added by a migration of its own. Schema 10
// moved the knobs into one JSON column (runs.params); this reads the old columns, for the
// migration to 10 and for older stores opened read-only (which cannot migrate).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/PressParams.h"

namespace kvlens::sessions {

class Statement;

class LegacyRunParams {
public:
    // Columns the list below selects.
    static constexpr int kColumns = 28;
    // method, budget, budget_ratio and every knob column, each after `prefix` ("r." in a join),
    // as a store of `schema` (1 to 9) holds them; the knobs its schema had no column for yet
    // are their defaults.
    static std::string columns(int64_t schema, const std::string& prefix = "");
    // The parameters from the kColumns columns from `first`; throws naming `what` and the field.
    static PressParams read(const Statement& s, int first, const std::string& what);
    // The knob columns of schema 9 (dropped by the migration to 10).
    static const std::vector<const char*>& knobColumns();
};

}  // namespace kvlens::sessions
