// The `kvlens` commands. Each parses its own flags and returns the exit code;
// errors a user can cause throw kvlens::Error, which main prints as one line.
#pragma once

#include <string>
#include <vector>

namespace kvlens {

int runInfo(const std::vector<std::string>& args);
int runTokenize(const std::vector<std::string>& args);
int runGenerate(const std::vector<std::string>& args);
int runBench(const std::vector<std::string>& args);
int runSelect(const std::vector<std::string>& args);
int runMethods(const std::vector<std::string>& args);
int runRun(const std::vector<std::string>& args);
int runCompare(const std::vector<std::string>& args);
int runNiah(const std::vector<std::string>& args);
int runSweep(const std::vector<std::string>& args);
int runEval(const std::vector<std::string>& args);
int runInspect(const std::vector<std::string>& args);
int runSessions(const std::vector<std::string>& args);
int runReport(const std::vector<std::string>& args);
int runTrainTestbed(const std::vector<std::string>& args);

}  // namespace kvlens
