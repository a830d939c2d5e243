// Flags of one `kvlens` command: `--flag value`, `--flag=value`, and switches.
// Unknown flags and malformed values throw kvlens::Error naming the flag.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace kvlens {

class CommandLine {
public:
    CommandLine(std::string command, const std::vector<std::string>& args,
                const std::set<std::string>& valueFlags, const std::set<std::string>& switches);

    const std::string& command() const { return command_; }
    bool has(const std::string& flag) const;
    std::string get(const std::string& flag, const std::string& fallback = "") const;
    int64_t getInt(const std::string& flag, int64_t fallback, int64_t min, int64_t max) const;
    uint64_t getSeed(const std::string& flag, uint64_t fallback) const;
    double getDouble(const std::string& flag, double fallback) const;

private:
    std::string command_;
    std::map<std::string, std::string> values_;
    std::set<std::string> switches_;
};

}  // namespace kvlens
