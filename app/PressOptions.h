// The flags that describe a compression method (--method, --budget, --window,
// --kernel, --pool, --beta, --alpha, --gqa, --schedule, --sinks, --seed),
// shared by run, compare and select.
#pragma once

#include <set>
#include <string>

#include "app/CommandLine.h"
#include "core/PressParams.h"

namespace kvlens {

struct PressOptions {
    static const std::set<std::string>& flags();
    // Everything but the method and budget, which compare sweeps.
    static PressParams fromCommandLine(const CommandLine& args);
};

// "128" (entries per head, window included) or "12.5%" (of the prompt); throws
// kvlens::Error naming `flag`.
void parseBudget(const std::string& text, const std::string& flag, PressParams& params);

}  // namespace kvlens
