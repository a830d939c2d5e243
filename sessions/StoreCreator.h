// Makes a new session store whole before any other process can see it: the
// schema is written and committed in a temporary file beside the target,
// which is then moved into place in one step. A crash at any moment leaves
// either no store (and a temporary the next open removes) or a complete one,
// never the 0-byte or half-migrated file that a store created in place
// leaves behind.
#pragma once

#include <functional>
#include <string>

namespace kvlens::sessions {

class Database;

class StoreCreator {
public:
    // Ensures `path` holds a store: when there is no file there, or an empty
    // one (which holds nothing to lose), `build` writes the schema into a
    // temporary file that replaces it. Creators of one folder take turns (a
    // lock on the folder), so two processes never replace each other's store.
    // Throws kvlens::Error naming the file when a -wal beside a missing or
    // empty store holds data (it may be a store's last writes).
    static void ensure(const std::string& path, const std::function<void(Database&)>& build);

    static const char* temporaryTag() { return ".creating-"; }
};

}  // namespace kvlens::sessions
