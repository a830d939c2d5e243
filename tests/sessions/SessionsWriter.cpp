// Test helper: saves sample runs into a store in a loop and prints
// "saving <seed>" before and "committed <run id> <seed>" after each commit, so that a test in
// another process can kill it mid-save (SIGKILL) or read the store while it writes. usage:
// kvlens_sessions_writer STORE SESSION FIRST_SEED COUNT [LAYERS HEADS KEPT]
#include <cstdio>
#include <cstdlib>
#include <string>

#include "SampleRecords.h"
#include "core/Error.h"
#include "sessions/SessionStore.h"

int main(int argc, char** argv) {
    if (argc != 5 && argc != 8) {
        std::fprintf(stderr, "usage: %s STORE SESSION FIRST_SEED COUNT [LAYERS HEADS KEPT]\n",
                     argv[0]);
        return 2;
    }
    using namespace kvlens::sessions;
    try {
        test::SampleShape shape;
        if (argc == 8) {
            shape.layers = std::atoi(argv[5]);
            shape.heads = std::atoi(argv[6]);
            shape.kept = std::atoi(argv[7]);
        }
        SessionStore store(argv[1]);
        const SessionInfo session = store.openSession(argv[2]);
        const int64_t model = store.saveModel(test::sampleModel());
        const int64_t prompt = store.savePrompt(test::samplePrompt(session.id, model));
        const uint64_t first = std::strtoull(argv[3], nullptr, 10);
        const uint64_t count = std::strtoull(argv[4], nullptr, 10);
        std::printf("ready\n");
        std::fflush(stdout);
        for (uint64_t seed = first; seed < first + count; ++seed) {
            std::printf("saving %llu\n", (unsigned long long)seed);
            std::fflush(stdout);
            const int64_t id = store.saveRun(test::sampleRun(seed, session.id, prompt, shape));
            std::printf("committed %lld %llu\n", (long long)id, (unsigned long long)seed);
            std::fflush(stdout);
        }
        return 0;
    } catch (const kvlens::Error& e) {
        std::fprintf(stderr, "writer: error: %s\n", e.what());
        return 1;
    }
}
