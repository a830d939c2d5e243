// The store across processes: a writer killed with SIGKILL in the middle of
// its save loop loses nothing it committed and leaves no partial run; a
// reader in this process, while another process writes, always sees whole
// runs and never fails on a lock.
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <set>
#include <string>
#include <thread>

#include "RecordEquality.h"
#include "SampleRecords.h"
#include "TestPaths.h"
#include "core/Error.h"
#include "sessions/Database.h"
#include "sessions/SessionStore.h"
#include "sessions/Statement.h"

namespace kvlens::sessions {
namespace {

constexpr uint64_t kSeedTopBit = uint64_t(1) << 63;
const test::SampleShape kShape{22, 4, 8192, 1500};

// The writer helper as a child process with its stdout on a pipe.
struct Writer {
    pid_t pid = -1;
    FILE* out = nullptr;
    std::set<int64_t> committed;
    bool lastWasSaving = false;  // the output ended inside a save

    Writer(const std::string& store, const std::string& session, uint64_t firstSeed,
           uint64_t count) {
        int fds[2];
        if (::pipe(fds) != 0) throw std::runtime_error("pipe");
        pid = ::fork();
        if (pid == 0) {
            ::dup2(fds[1], 1);
            ::close(fds[0]);
            ::close(fds[1]);
            const std::string first = std::to_string(firstSeed), n = std::to_string(count);
            const std::string layers = std::to_string(kShape.layers),
                              heads = std::to_string(kShape.heads),
                              kept = std::to_string(kShape.kept);
            ::execl(KVLENS_SESSIONS_WRITER, KVLENS_SESSIONS_WRITER, store.c_str(), session.c_str(),
                    first.c_str(), n.c_str(), layers.c_str(), heads.c_str(), kept.c_str(),
                    (char*)nullptr);
            ::_exit(127);
        }
        ::close(fds[1]);
        out = ::fdopen(fds[0], "r");
    }
    ~Writer() {
        if (pid > 0) {
            ::kill(pid, SIGKILL);
            ::waitpid(pid, nullptr, 0);
        }
        if (out) ::fclose(out);
    }
    // Reads one line; false at the end of the output.
    bool readLine() {
        char line[256];
        if (!std::fgets(line, sizeof line, out)) return false;
        long long id = 0;
        unsigned long long seed = 0;
        if (std::sscanf(line, "committed %lld %llu", &id, &seed) == 2) committed.insert(id);
        lastWasSaving = std::strncmp(line, "saving ", 7) == 0;
        return true;
    }
    int wait() {
        int status = 0;
        ::waitpid(pid, &status, 0);
        pid = -1;
        return status;
    }
};

RunRecord expectedRun(const RunRecord& stored, int64_t promptId) {
    RunRecord r =
        test::sampleRun(stored.params.seed & ~kSeedTopBit, stored.sessionId, promptId, kShape);
    r.id = stored.id;
    return r;
}

int64_t countRows(Database& db, const std::string& sql) {
    Statement s(db, sql, "count");
    return s.step() ? s.getInt(0) : -1;
}

TEST(TwoProcess, SigkillMidSaveLosesNothingCommittedAndLeavesNoPartialRun) {
    const std::string path = test::storePath("crash.db");
    size_t everCommitted = 0;
    int killedMidSave = 0;
    for (int round = 0; round < 3; ++round) {
        SCOPED_TRACE("round " + std::to_string(round));
        std::set<int64_t> committed;
        {
            Writer writer(path, "crash", uint64_t(round) * 1000 + 1, 100000);
            // Let it commit a few runs, then kill it at a varying point of the next save.
            while (writer.committed.size() < size_t(3 + round) && writer.readLine()) {
            }
            ASSERT_GE(writer.committed.size(), size_t(3 + round)) << "the writer stopped early";
            std::this_thread::sleep_for(std::chrono::microseconds(1000 + 3700 * round));
            ::kill(writer.pid, SIGKILL);
            const int status = writer.wait();
            EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
            while (writer.readLine()) {
            }
            committed = writer.committed;
            killedMidSave += writer.lastWasSaving;
        }
        SessionStore store(path);  // recovers the WAL the killed writer left
        EXPECT_EQ(store.integrityCheck(), "ok");
        const SessionInfo session = store.session("crash");
        const auto runs = store.runs(session.id);
        std::set<int64_t> stored;
        for (const RunSummary& r : runs) stored.insert(r.id);
        for (int64_t id : committed)
            EXPECT_TRUE(stored.count(id)) << "committed run " << id << " is lost";
        // At most one run committed after its id was printed; none half-written.
        EXPECT_LE(stored.size(), everCommitted + committed.size() + 1);
        for (const RunSummary& summary : runs) {
            SCOPED_TRACE("run " + std::to_string(summary.id));
            const RunRecord r = store.run(summary.id);
            test::expectSameRun(r, expectedRun(r, r.promptId));
        }
        Database db(path, path, SQLITE_OPEN_READONLY);
        const int64_t n = countRows(db, "SELECT count(*) FROM runs");
        EXPECT_EQ(n, int64_t(stored.size()));
        EXPECT_EQ(countRows(db, "SELECT count(*) FROM selections"), n);
        EXPECT_EQ(countRows(db, "SELECT count(*) FROM metrics"), n);
        EXPECT_EQ(countRows(db, "SELECT count(*) FROM selection_heads"),
                  n * kShape.layers * kShape.heads);
        EXPECT_EQ(countRows(db, "SELECT count(*) FROM layer_stats"),
                  n * kShape.layers * (kShape.heads + 1) * 2);
        everCommitted = stored.size();
    }
    EXPECT_GE(everCommitted, size_t(3 + 4 + 5));
    EXPECT_GE(killedMidSave, 1) << "no kill landed inside a save";
}

TEST(TwoProcess, ReaderSeesWholeRunsWhileAnotherProcessWrites) {
    const std::string path = test::storePath("concurrent.db");
    int64_t sessionId = 0, promptId = 0;
    {
        SessionStore store(path);
        sessionId = store.createSession("live").id;
        const int64_t model = store.saveModel(test::sampleModel());
        promptId = store.savePrompt(test::samplePrompt(sessionId, model));
    }
    const uint64_t count = 40;
    Writer writer(path, "live", 1, count);
    std::thread drain([&] {
        while (writer.readLine()) {
        }
    });
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    int reads = 0, sawRuns = 0, reopens = 0;
    std::unique_ptr<SessionStore> store = std::make_unique<SessionStore>(path);
    size_t seen = 0;
    while (seen < count && std::chrono::steady_clock::now() < deadline) {
        try {
            if (reads % 4 == 3) {  // opening while the other process writes must work too
                store = std::make_unique<SessionStore>(path, reads % 8 == 3
                                                                 ? SessionStore::Access::ReadOnly
                                                                 : SessionStore::Access::ReadWrite);
                ++reopens;
            }
            const auto runs = store->runs(sessionId);
            ASSERT_GE(runs.size(), seen) << "runs disappeared";
            seen = runs.size();
            if (!runs.empty()) {
                ++sawRuns;
                const RunRecord newest = store->run(runs.back().id);
                test::expectSameRun(newest, expectedRun(newest, promptId));
                const RunRecord other = store->run(runs[size_t(reads) % runs.size()].id);
                test::expectSameRun(other, expectedRun(other, promptId));
                if (::testing::Test::HasFailure()) break;
            }
            ++reads;
        } catch (const Error& e) {
            FAIL() << "reader failed while the writer wrote: " << e.what();
        }
    }
    const int status = writer.wait();
    drain.join();
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "writer status " << status;
    EXPECT_EQ(writer.committed.size(), count);
    EXPECT_EQ(store->runs(sessionId).size(), count);
    EXPECT_GE(sawRuns, 3) << "the reader did not overlap the writer";
    EXPECT_GE(reopens, 1);
    EXPECT_EQ(store->integrityCheck(), "ok");
}

}  // namespace
}  // namespace kvlens::sessions
