#include "app/PressOptions.h"

#include <cerrno>
#include <cstdlib>

#include "core/Error.h"

namespace kvlens {

const std::set<std::string>& PressOptions::flags() {
    static const std::set<std::string> f = {"--method", "--budget", "--window", "--kernel",
                                            "--pool",   "--beta",   "--alpha",  "--gqa",
                                            "--schedule", "--sinks", "--seed"};
    return f;
}

PressParams PressOptions::fromCommandLine(const CommandLine& args) {
    PressParams p;
    p.method = args.get("--method", p.method);
    if (args.has("--budget")) parseBudget(args.get("--budget"), "--budget", p);
    p.window = args.getInt("--window", p.window, 1, 1 << 20);
    p.kernel = args.getInt("--kernel", p.kernel, -(1 << 20), 1 << 20);
    if (args.has("--pool")) p.pooling = parsePooling(args.get("--pool"));
    p.beta = args.getDouble("--beta", p.beta);
    p.alpha = args.getDouble("--alpha", p.alpha);
    if (args.has("--gqa")) p.gqa = parseGqaMode(args.get("--gqa"));
    if (args.has("--schedule")) p.schedule = parseSchedule(args.get("--schedule"));
    p.sinks = args.getInt("--sinks", p.sinks, 0, 1 << 20);
    p.seed = args.getSeed("--seed", p.seed);
    return p;
}

void parseBudget(const std::string& text, const std::string& flag, PressParams& params) {
    char* end = nullptr;
    errno = 0;
    if (!text.empty() && text.back() == '%') {
        const std::string number = text.substr(0, text.size() - 1);
        const double v = std::strtod(number.c_str(), &end);
        if (number.empty() || *end != '\0' || errno != 0 || !(v > 0.0 && v <= 100.0)) {
            throw Error(flag + " '" + text + "' is not a percentage in (0, 100]");
        }
        params.budget = 0;
        params.budgetRatio = v / 100.0;
        return;
    }
    const long long v = std::strtoll(text.c_str(), &end, 10);
    if (text.empty() || *end != '\0' || errno != 0 || v < 1) {
        throw Error(flag + " '" + text + "' is not a positive number of entries or a percentage like 25%");
    }
    params.budget = v;
    params.budgetRatio = 0.0;
}

}  // namespace kvlens
