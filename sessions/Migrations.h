// Schema migrations: step i brings a store from user_version i to i + 1. All
// pending steps run in one write transaction, so a store is at one version or
// the next, never between; a store above the last step is refused unchanged.
#pragma once

#include <functional>
#include <vector>

namespace kvlens::sessions {

class Database;

class Migrations {
public:
    using Step = std::function<void(Database&)>;

    // Applies the steps from the store's user_version up to steps.size();
    // returns the version the store had. Throws kvlens::Error when the store's
    // version is above steps.size() or a step fails (the store is left as it was).
    static int apply(Database& db, const std::vector<Step>& steps);
};

}  // namespace kvlens::sessions
