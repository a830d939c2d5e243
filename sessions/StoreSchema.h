// The store's schema: its version, its application_id (which tells a KV Lens
// store from any other SQLite database), and the migration steps that build it.
#pragma once

#include <cstdint>
#include <vector>

#include "sessions/Migrations.h"

namespace kvlens::sessions {

class StoreSchema {
public:
    static constexpr uint32_t kApplicationId = 0x4B564C53;  // "KVLS"
    static const std::vector<Migrations::Step>& steps();
    static uint32_t version() { return uint32_t(steps().size()); }
    // Throws kvlens::Error naming the store when a table of the current schema is missing.
    static void checkTables(Database& db);
};

}  // namespace kvlens::sessions
