// Runs the kvlens executable as a user would (no model from the environment,
// no standard input) and checks the one-line error contract.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "support/TinyModelFile.h"

namespace kvlens::test {

struct CliResult {
    int exitCode = -1;
    std::string out, err;
};

inline std::string slurp(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

// `args` are already shell-quoted where needed; `env` goes before the command
// (VAR=value pairs, or a wrapper).
inline CliResult runKvlens(const std::string& args, const std::string& env = "") {
    // CTest runs tests in parallel processes: each gets its own capture files.
    const std::string tag = std::to_string(::getpid());
    const std::string out = testOutputPath("cli_stdout_" + tag + ".txt");
    const std::string err = testOutputPath("cli_stderr_" + tag + ".txt");
    const std::string cmd = "env -u KVLENS_MODEL " + env + " timeout 300 " + std::string(KVLENS_CLI) +
                            " " + args + " >" + out + " 2>" + err + " </dev/null";
    const int status = std::system(cmd.c_str());
    CliResult r;
    r.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    r.out = slurp(out);
    r.err = slurp(err);
    return r;
}

// A failure is exactly one line on stderr, "kvlens: error: ...", containing
// every piece of `parts`, and exit code 1 (not a crash, not a time-out).
inline void expectOneLineError(const CliResult& r, std::initializer_list<std::string> parts) {
    EXPECT_EQ(r.exitCode, 1) << (r.exitCode == 124 ? "timed out" : r.exitCode >= 128 ? "crashed" : "");
    ASSERT_FALSE(r.err.empty());
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "more than one line: " << r.err;
    EXPECT_EQ(r.err.rfind("kvlens: error: ", 0), 0u) << r.err;
    for (const std::string& p : parts) {
        EXPECT_NE(r.err.find(p), std::string::npos) << "missing '" << p << "' in: " << r.err;
    }
}

}  // namespace kvlens::test
