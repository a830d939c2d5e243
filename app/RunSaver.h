// The `--save` of run and compare: keeps each measured run in a session of the
// SQLite store (sessions/), with its selection, metrics, texts and the
// prompt's per-layer attention statistics.
#pragma once

#include <cstdint>
#include <memory>
#include <set>
#include <string>

namespace kvlens {

class Capture;
namespace sessions {
class SessionStore;
}
class CommandLine;
struct LoadedModel;
struct ModelOptions;
struct PressParams;
struct RunMetrics;
struct Selection;

// `--save [--session NAME] [--store PATH]` of run and compare :
// the store opens before the model loads, so a bad store fails first; each run
// is then saved in one transaction as soon as it is measured.
class RunSaver {
public:
    static const std::set<std::string>& valueFlags();  // --session, --store
    // Saves the loaded model's record (a file hashed once per path, size and mtime, with a
    // progress bar) in `store`; returns its id. The sweeps' models go in so.
    static int64_t saveModel(sessions::SessionStore& store, const LoadedModel& loaded, const std::string& spec);
    // --store PATH, or the default store (SessionStore::defaultPath).
    static std::string storePath(const CommandLine& args);
    // Null without --save; throws kvlens::Error for --session or --store
    // without --save, or for a store that cannot be used.
    static std::unique_ptr<RunSaver> fromCommandLine(const CommandLine& args);
    ~RunSaver();

    // Records the model (a file model is hashed once per path, size and mtime)
    // and the prompt with its token ids, and computes the prompt's per-layer
    // attention statistics, which every run saved after it carries.
    void begin(const LoadedModel& loaded, const ModelOptions& options, const std::string& prompt,
               bool addBos, int64_t newTokens, const Capture& capture);
    // Saves one run; returns its id.
    int64_t save(const PressParams& params, const Selection& selection, const RunMetrics& metrics,
                 const std::string& fullText, const std::string& text);
    // One line on stderr: how many runs went to which session of which store.
    void report() const;

private:
    struct State;
    explicit RunSaver(std::unique_ptr<State> state);
    std::unique_ptr<State> state_;
};

}  // namespace kvlens
