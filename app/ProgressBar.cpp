#include "app/ProgressBar.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace kvlens {

ProgressBar::ProgressBar(std::string label)
    : label_(std::move(label)),
      tty_(isatty(STDERR_FILENO) == 1),
      start_(std::chrono::steady_clock::now()),
      lastDraw_(start_) {}

ProgressBar::~ProgressBar() { finish(); }

void ProgressBar::update(double fraction, const std::string& what) {
    fraction = std::clamp(fraction, 0.0, 1.0);
    const auto now = std::chrono::steady_clock::now();
    const double elapsed = std::chrono::duration<double>(now - start_).count();
    if (tty_) {
        if (fraction < 1.0 && now - lastDraw_ < std::chrono::milliseconds(100) && drawn_) return;
        const int width = 30, filled = static_cast<int>(fraction * width);
        std::fprintf(stderr, "\r%s [%s%s] %3d%% %-28.28s", label_.c_str(),
                     std::string(filled, '#').c_str(), std::string(width - filled, ' ').c_str(),
                     static_cast<int>(fraction * 100), what.c_str());
        std::fflush(stderr);
        drawn_ = true;
        lastDraw_ = now;
    } else if (elapsed > 2.0) {
        const int quarter = static_cast<int>(fraction * 4);
        if (quarter != lastQuarter_) {
            std::fprintf(stderr, "%s: %d%% (%s, %.1f s)\n", label_.c_str(),
                         static_cast<int>(fraction * 100), what.c_str(), elapsed);
            lastQuarter_ = quarter;
        }
    }
}

void ProgressBar::finish() {
    if (finished_) return;
    finished_ = true;
    if (tty_ && drawn_) {
        std::fprintf(stderr, "\r%*s\r", 80, "");
        std::fflush(stderr);
    }
}

}  // namespace kvlens
