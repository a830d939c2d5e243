// Progress of long work on stderr: a redrawn bar on a terminal, a line every
// quarter in logs once the work has taken more than two seconds.
#pragma once

#include <chrono>
#include <string>

namespace kvlens {

class ProgressBar {
public:
    explicit ProgressBar(std::string label);
    ~ProgressBar();
    void update(double fraction, const std::string& what);
    void finish();

private:
    std::string label_;
    bool tty_;
    bool drawn_ = false;
    bool finished_ = false;
    int lastQuarter_ = -1;
    std::chrono::steady_clock::time_point start_, lastDraw_;
};

}  // namespace kvlens
