#include "sessions/SessionMerge.h"

#include <filesystem>
#include <memory>
#include <set>

#include "core/Error.h"
#include "sessions/SessionExport.h"
#include "sessions/SessionStore.h"
#include "sessions/TemporaryFiles.h"

namespace kvlens::sessions {
namespace {

std::string canonical(const std::string& path) {
    std::error_code ec;
    const auto p = std::filesystem::weakly_canonical(path, ec);
    return ec ? path : p.string();
}

}  // namespace

SessionMerge::Result SessionMerge::merge(const std::vector<std::string>& sources, const std::string& into) {
    if (sources.empty()) throw Error("sessions merge: no stores to merge");
    std::set<std::string> seen;
    const std::string target = canonical(into);
    for (const std::string& s : sources) {
        const std::string c = canonical(s);
        if (c == target) throw Error("sessions merge: " + s + " is also the target (--into)");
        if (!seen.insert(c).second) throw Error("sessions merge: " + s + " is given twice");
    }
    std::vector<std::unique_ptr<SessionStore>> in;
    for (const std::string& s : sources) {
        if (!std::filesystem::exists(s)) throw Error(s + ": no such store");
        in.push_back(std::make_unique<SessionStore>(s, SessionStore::Access::ReadOnly));
    }
    // A merge that fails leaves no store of its own making behind (nothing of it was
    // committed: writeAll is one transaction).
    const bool existed = std::filesystem::exists(into);
    try {
        SessionStore to(into, SessionStore::Access::ReadWrite);
        Result r;
        to.writeAll([&] {
            std::set<std::string> touched;
            for (auto& from : in) {
                for (const SessionInfo& info : from->sessions()) {
                    if (const std::string problem = SessionStore::nameProblem(info.name); !problem.empty())
                        throw Error(from->path() + ": " + problem + " (the store is damaged)");
                    SessionInfo dest;
                    if (auto found = to.findSession(info.name)) {
                        dest = *found;
                    } else {
                        dest = to.createSession(info);
                        to.setSessionTimes(info.name, info.createdMs, info.updatedMs);
                    }
                    const SessionExport::Copied c = SessionExport::copyInto(*from, info.id, to, dest.id);
                    r.runs += c.runs;
                    r.niahRuns += c.niahRuns;
                    r.niahDuplicates += c.niahDuplicates;
                    r.evalRuns += c.evalRuns;
                    r.evalDuplicates += c.evalDuplicates;
                    if (c.runs + c.niahRuns + c.evalRuns > 0) touched.insert(info.name);
                }
            }
            r.sessions = static_cast<int64_t>(touched.size());
        });
        return r;
    } catch (...) {
        if (!existed) TemporaryFiles::remove(into);
        throw;
    }
}

}  // namespace kvlens::sessions
