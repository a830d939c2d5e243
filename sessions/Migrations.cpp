// Runs pending schema steps in one transaction and sets user_version.
#include "sessions/Migrations.h"

#include "core/Error.h"
#include "sessions/Database.h"
#include "sessions/Transaction.h"

namespace kvlens::sessions {

int Migrations::apply(Database& db, const std::vector<Step>& steps) {
    const int64_t target = int64_t(steps.size());
    // Most opens find nothing to do: check without taking the write lock.
    auto refuseNewer = [&](int64_t version) {
        if (version <= target) return;
        db.leaveFileAsIs();
        throw Error(db.path() + ": written by a newer KV Lens (store schema " +
                    std::to_string(version) + ", this build reads up to " + std::to_string(target) +
                    "); left unchanged: update kvlens to open it");
    };
    int64_t version = db.pragmaInt("user_version");
    refuseNewer(version);
    if (version == target) return int(version);
    Transaction tx(db, Transaction::Kind::Write);
    version = db.pragmaInt("user_version");  // another process may have migrated meanwhile
    refuseNewer(version);
    for (int64_t v = version; v < target; ++v) steps[size_t(v)](db);
    if (version != target) {
        db.exec("PRAGMA user_version = " + std::to_string(target), "set the schema version");
    }
    tx.commit();
    return int(version);
}

}  // namespace kvlens::sessions
