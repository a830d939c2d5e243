// The flags that describe a compression method (--method, --budget, --window,
// --kernel, --pool, --beta, --alpha, --gqa, --schedule, --sinks, --seed),
// shared by run, compare and select.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "app/CommandLine.h"
#include "core/PressParams.h"
#include "engine/model/ModelConfig.h"

namespace kvlens {

struct PressOptions {
    static const std::set<std::string>& flags();
    // One method's flags; a knob's flag the method does not read is named on stderr (ignored).
    static PressParams fromCommandLine(const CommandLine& args);
    // The flags shared by several methods (bench's --methods): each knob's flag given must be
    // read by one of `methods` at least, or is named on stderr; the method field is left as parsed.
    static PressParams sharedFromCommandLine(const CommandLine& args, const std::vector<std::string>& methods);
    // Notes on the methods parsed so far ("select: note: adakv compares knorm's scores across
    // KV heads, ..."): main prints them on stderr after a command that succeeded, so that an
    // error stays one line.
    static const std::vector<std::string>& notes();
    // Whether the command line sets a budget: --budget, or --compression-ratio (kvpress's form).
    static bool hasBudget(const CommandLine& args) { return args.has("--budget") || args.has("--compression-ratio"); }
    // The sweep of --methods and --budgets (lists; `methods` and `budgets` when not
    // given): every method at every budget ("full" once), the window halved for
    // budgets at or below it unless --window was given, each run's settings
    // validated. Throws naming the flag (--method/--budget instead are refused).
    static std::vector<PressParams> sweepFromCommandLine(const CommandLine& args, const std::string& methods,
                                                         const std::string& budgets);
    // The core of a sweep: every method of `methods` (kvpress's twin under its convention) at
    // every budget of `budgets`, from `base`'s knobs; "full" once; a window above a budget
    // halved unless `windowGiven`. Errors name `methodsField` / `budgetsField`.
    static std::vector<PressParams> sweepOf(const PressParams& base, const std::vector<std::string>& methods,
                                            const std::vector<std::string>& budgets, bool windowGiven,
                                            const std::string& methodsField, const std::string& budgetsField);
};

// "a,b,c" as its items; throws kvlens::Error naming `flag` for an empty list or item.
std::vector<std::string> splitList(const std::string& text, const std::string& flag);

// "128" (entries per head, window included) or "12.5%" (of the prompt); throws
// kvlens::Error naming `flag`.
void parseBudget(const std::string& text, const std::string& flag, PressParams& params);

// Each run against a prompt of `promptTokens` before its prefill: a budget that holds the whole
// prompt (it would keep everything, saved as if it had compressed) or a setting that does not
// fit throws kvlens::Error naming the run and `where` (the prompt's sample or record); so does a
// method `model` cannot run yet (Press::requireModelSupport: a sliding window, Gemma's soft-cap).
void checkRunsFit(const std::vector<const PressParams*>& runs, int64_t promptTokens, const std::string& where,
                  const ModelConfig& model);

// A run's budget as the tables show it: "-" for full, the entries, or the ratio ("12.5%").
std::string budgetLabel(const PressParams& params);

// "1500" or "2k" (x1024) as a token count; throws kvlens::Error naming `flag`.
int64_t parseTokenCount(const std::string& item, const std::string& flag);

}  // namespace kvlens
