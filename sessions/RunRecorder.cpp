// Recording a run: the file model described once, then one write transaction.
#include "sessions/RunRecorder.h"

#include "sessions/ModelFile.h"
#include "sessions/SessionStore.h"

namespace kvlens::sessions {

ModelRecord RunRecorder::describeFile(ModelRecord m, const std::function<void(double)>& progress) {
    if (!m.isFile) return m;
    m.path = ModelFile::absolutePath(m.path);
    const ModelFile::Stat st = ModelFile::stat(m.path);
    m.sizeBytes = st.sizeBytes;
    m.mtimeNs = st.mtimeNs;
    if (auto known = store_.knownSha256(m.path, m.sizeBytes, m.mtimeNs)) {
        m.sha256 = *known;
    } else {
        m.sha256 = ModelFile::sha256(m.path, progress);
    }
    return m;
}

int64_t RunRecorder::save(const std::string& session, const ModelRecord& model, PromptRecord prompt,
                          RunRecord run) {
    int64_t id = 0;
    store_.writeAll([&] {
        const SessionInfo s = store_.openSession(session);
        prompt.sessionId = s.id;
        prompt.modelId = store_.saveModel(model);
        run.sessionId = s.id;
        run.promptId = store_.savePrompt(prompt);
        id = store_.saveRun(run);
    });
    return id;
}

}  // namespace kvlens::sessions
