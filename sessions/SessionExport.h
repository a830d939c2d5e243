// Export and import of one session. The export file is itself a KV Lens
// session store (same schema, one session, rollback journal so it is a single
// file): any build that reads the schema can open it with --store, and import
// copies it into another store with new ids. Needle-in-a-haystack runs go with
// their session.
#pragma once

#include <string>

#include "sessions/SessionStore.h"

namespace kvlens::sessions {

class SessionExport {
public:
    // Writes session `name` of `from` to a new file `file` (refused when it
    // exists); written beside it under a temporary name, then renamed, so a
    // failed export leaves nothing. Returns the number of runs written.
    static int64_t exportSession(SessionStore& from, const std::string& name,
                                 const std::string& file);

    // Copies a session of the store file `file` into `to` in one transaction:
    // `session` names it (empty: the file must hold exactly one), `newName`
    // renames it (empty: keep its name). The file is only read.
    static SessionInfo importSession(SessionStore& to, const std::string& file,
                                     const std::string& session = "",
                                     const std::string& newName = "");

    // Copies session `name` of `from` into `to` as `newName`, keeping its notes,
    // times, UI state, models, prompts and runs (ids are renumbered).
    static SessionInfo copySession(SessionStore& from, const std::string& name, SessionStore& to,
                                   const std::string& newName);

    // Copies the prompts, runs, needle-in-a-haystack runs and eval runs of session `sourceId` of
    // `from` into the existing session `targetId` of `to` (inside the caller's
    // transaction, if any). A niah or eval run `to` already holds is not copied again.
    struct Copied {
        int64_t runs = 0, niahRuns = 0, niahDuplicates = 0, evalRuns = 0, evalDuplicates = 0;
    };
    static Copied copyInto(SessionStore& from, int64_t sourceId, SessionStore& to, int64_t targetId);
};

}  // namespace kvlens::sessions
