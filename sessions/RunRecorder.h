// The one way a measured run reaches the store, for `kvlens run/compare --save`
// and the GUI's Save alike: the session (found or made), the model, the
// prompt and the run go in one transaction, so a crash leaves all of them or
// none (never an empty session or a prompt without its run). Models and
// prompts equal to stored ones are reused.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "sessions/StoreRecords.h"

namespace kvlens::sessions {

class SessionStore;

class RunRecorder {
public:
    explicit RunRecorder(SessionStore& store) : store_(store) {}

    // A file model's absolute path, size, mtime and SHA-256: the store's hash
    // when it knows this path, size and mtime, else the file hashed, with
    // `progress` (which may throw to cancel). A Hugging Face folder: each weight
    // file so (ModelRecord::files) and the folder's digest of them. A random model
    // is returned as it is.
    ModelRecord describeFile(ModelRecord model, const std::function<void(double)>& progress = {});

    // Saves `run` of `prompt` on `model` to session `session`; their ids are
    // filled in here. Returns the run's id.
    int64_t save(const std::string& session, const ModelRecord& model, PromptRecord prompt,
                 RunRecord run);

private:
    SessionStore& store_;
};

}  // namespace kvlens::sessions
