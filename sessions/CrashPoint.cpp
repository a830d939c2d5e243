// The crash-point hook: one process-wide function pointer, unset in the tool.
#include "sessions/CrashPoint.h"

#include <atomic>

namespace kvlens::sessions {

namespace {
std::atomic<CrashPoint::Hook> hook{nullptr};
}

void CrashPoint::setHook(Hook h) { hook.store(h); }

void CrashPoint::reach(const char* point) {
    if (const Hook h = hook.load()) h(point);
}

}  // namespace kvlens::sessions
