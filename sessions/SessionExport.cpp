// Session copy between stores, used by export (into a fresh file) and import.
#include "sessions/SessionExport.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>

#include "core/Error.h"
#include "sessions/CrashPoint.h"
#include "sessions/StoreFile.h"
#include "sessions/TemporaryFiles.h"

namespace kvlens::sessions {

SessionExport::Copied SessionExport::copyInto(SessionStore& from, int64_t sourceId, SessionStore& to,
                                              int64_t targetId) {
    Copied n;
    // A run whose prompt is not there cannot be copied whole: the session is refused
    // (nothing of it copied) rather than copied without it as if it were all.
    const auto orphans = from.runsWithoutPrompt(sourceId);
    if (!orphans.empty()) {
        throw Error(from.path() + ": run " + std::to_string(orphans[0].first) + " of session '" +
                    from.session(sourceId).name + "' names prompt " + std::to_string(orphans[0].second) +
                    ", which the store does not hold for it" +
                    (orphans.size() > 1 ? " (and " + std::to_string(orphans.size() - 1) + " more runs)" : "") +
                    ": not copying the session without them");
    }
    std::map<int64_t, int64_t> promptIds, modelIds;
    auto modelFor = [&](int64_t id) {
        auto model = modelIds.find(id);
        if (model == modelIds.end()) model = modelIds.emplace(id, to.saveModel(from.model(id))).first;
        return model->second;
    };
    for (const PromptRecord& p : from.prompts(sourceId)) {
        PromptRecord copy = p;
        copy.sessionId = targetId;
        copy.modelId = modelFor(p.modelId);
        promptIds[p.id] = to.savePrompt(copy);
    }
    for (const RunSummary& summary : from.runs(sourceId)) {
        RunRecord run = from.run(summary.id);
        run.sessionId = targetId;
        run.promptId = promptIds.at(run.promptId);
        to.saveRun(run);
        ++n.runs;
    }
    for (NiahRunRecord r : from.niahRuns(sourceId)) {
        r.sessionId = targetId;
        r.modelId = modelFor(r.modelId);
        if (to.saveNiahRun(r))
            ++n.niahRuns;
        else
            ++n.niahDuplicates;
    }
    for (EvalRunRecord r : from.evalRuns(sourceId)) {
        r.sessionId = targetId;
        r.modelId = modelFor(r.modelId);
        if (to.saveEvalRun(r))
            ++n.evalRuns;
        else
            ++n.evalDuplicates;
    }
    return n;
}

SessionInfo SessionExport::copySession(SessionStore& from, const std::string& name,
                                       SessionStore& to, const std::string& newName) {
    const SessionInfo source = from.session(name);
    to.writeAll([&] {
        SessionInfo info = source;
        info.name = newName;
        const SessionInfo created = to.createSession(info);
        copyInto(from, source.id, to, created.id);
        to.setSessionTimes(newName, source.createdMs, source.updatedMs);
    });
    return to.session(newName);
}

int64_t SessionExport::exportSession(SessionStore& from, const std::string& name,
                                     const std::string& file) {
    const SessionInfo info = from.session(name);
    if (StoreFile::exists(file)) throw Error(file + ": already exists; export writes a new file");
    // Written whole under a temporary name, then renamed: a crash leaves no
    // half export at `file`, and the next export removes what it left.
    TemporaryFiles::removeStale(file, ".partial-");
    const std::string partial = TemporaryFiles::nameFor(file, ".partial-");
    TemporaryFiles::remove(partial);
    try {
        {
            SessionStore out(partial, SessionStore::Access::ReadWrite);
            copySession(from, name, out, name);
            out.makeSelfContained();
        }
        CrashPoint::reach("export: partial complete");
        if (StoreFile::exists(file))
            throw Error(file + ": already exists; export writes a new file");
        if (std::rename(partial.c_str(), file.c_str()) != 0) {
            throw Error(file + ": cannot write the export: " + std::strerror(errno));
        }
        CrashPoint::reach("export: renamed");
    } catch (...) {
        TemporaryFiles::remove(partial);
        throw;
    }
    return info.runCount;
}

SessionInfo SessionExport::importSession(SessionStore& to, const std::string& file,
                                         const std::string& session, const std::string& newName) {
    SessionStore in(file, SessionStore::Access::ReadOnly);
    std::string name = session;
    if (name.empty()) {
        const auto all = in.sessions();
        if (all.size() != 1) {
            throw Error(file + ": holds " + std::to_string(all.size()) +
                        " sessions; name the one to import with --session");
        }
        name = all[0].name;
    }
    in.session(name);  // a clear line when it is not there
    const std::string target = newName.empty() ? name : newName;
    if (const std::string problem = SessionStore::nameProblem(target); !problem.empty())
        throw Error(file + ": " + problem + (newName.empty() ? "; import it under another name with --as NAME" : ""));
    if (to.findSession(target)) {
        throw Error(to.path() + ": a session named '" + target +
                    "' already exists; import it under another name with --as NAME");
    }
    return copySession(in, name, to, target);
}

}  // namespace kvlens::sessions
