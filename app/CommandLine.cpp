#include "app/CommandLine.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "core/Error.h"

namespace kvlens {

CommandLine::CommandLine(std::string command, const std::vector<std::string>& args,
                         const std::set<std::string>& valueFlags,
                         const std::set<std::string>& switches)
    : command_(std::move(command)) {
    for (size_t i = 0; i < args.size(); ++i) {
        std::string flag = args[i];
        std::string value;
        bool inlineValue = false;
        const size_t eq = flag.find('=');
        if (flag.rfind("--", 0) == 0 && eq != std::string::npos) {
            value = flag.substr(eq + 1);
            flag = flag.substr(0, eq);
            inlineValue = true;
        }
        if (valueFlags.count(flag)) {
            if (!inlineValue) {
                if (i + 1 >= args.size()) {
                    throw Error("kvlens " + command_ + ": " + flag + " needs a value");
                }
                value = args[++i];
            }
            // A value flag given twice is refused: the last one silently winning hid typos
            // in long sweep command lines.
            if (const auto seen = values_.find(flag); seen != values_.end()) {
                throw Error("kvlens " + command_ + ": " + flag + " is given twice ('" + seen->second + "' and '" +
                            value + "')");
            }
            values_[flag] = value;
        } else if (switches.count(flag) && !inlineValue) {
            switches_.insert(flag);
        } else {
            throw Error("kvlens " + command_ + ": unknown flag '" + args[i] + "' (see kvlens " +
                        command_ + " --help)");
        }
    }
}

bool CommandLine::has(const std::string& flag) const {
    return values_.count(flag) > 0 || switches_.count(flag) > 0;
}

std::string CommandLine::get(const std::string& flag, const std::string& fallback) const {
    auto it = values_.find(flag);
    return it == values_.end() ? fallback : it->second;
}

int64_t CommandLine::getInt(const std::string& flag, int64_t fallback, int64_t min,
                            int64_t max) const {
    auto it = values_.find(flag);
    if (it == values_.end()) return fallback;
    const std::string& text = it->second;
    char* end = nullptr;
    errno = 0;
    const long long v = std::strtoll(text.c_str(), &end, 10);
    if (text.empty() || *end != '\0' || errno != 0 || v < min || v > max) {
        throw Error(flag + " '" + text + "' is not an integer in [" + std::to_string(min) + ", " +
                    std::to_string(max) + "]");
    }
    return v;
}

uint64_t CommandLine::getSeed(const std::string& flag, uint64_t fallback) const {
    auto it = values_.find(flag);
    if (it == values_.end()) return fallback;
    const std::string& text = it->second;
    char* end = nullptr;
    errno = 0;
    const unsigned long long v = std::strtoull(text.c_str(), &end, 10);
    if (text.empty() || text[0] == '-' || *end != '\0' || errno != 0) {
        throw Error(flag + " '" + text + "' is not a non-negative integer");
    }
    return v;
}

double CommandLine::getDouble(const std::string& flag, double fallback) const {
    auto it = values_.find(flag);
    if (it == values_.end()) return fallback;
    const std::string& text = it->second;
    char* end = nullptr;
    errno = 0;
    const double v = std::strtod(text.c_str(), &end);
    if (text.empty() || *end != '\0' || errno != 0 || !std::isfinite(v)) {
        throw Error(flag + " '" + text + "' is not a number");
    }
    return v;
}

}  // namespace kvlens
