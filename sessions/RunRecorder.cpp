// Recording a run: the file model described once, then one write transaction.
#include "sessions/RunRecorder.h"

#include <algorithm>

#include "sessions/ModelFile.h"
#include "sessions/SessionStore.h"

namespace kvlens::sessions {

ModelRecord RunRecorder::describeFile(ModelRecord m, const std::function<void(double)>& progress) {
    if (!m.isFile) return m;
    m.path = ModelFile::absolutePath(m.path);
    if (ModelFile::isFolder(m.path)) {
        // A Hugging Face folder: each of its files hashed (or its known hash), then the folder's digest.
        const std::vector<std::string> names = ModelFile::folderFiles(m.path);
        int64_t total = 0, done = 0;
        std::vector<ModelFile::Stat> stats;
        for (const std::string& n : names) {
            stats.push_back(ModelFile::stat(m.path + "/" + n));
            total += stats.back().sizeBytes;
        }
        m.files.clear();
        m.sizeBytes = 0;
        m.mtimeNs = 0;
        for (size_t i = 0; i < names.size(); ++i) {
            FolderFileRecord f{names[i], stats[i].sizeBytes, stats[i].mtimeNs, ""};
            if (auto known = store_.knownFileSha256(m.path, f.name, f.sizeBytes, f.mtimeNs)) {
                f.sha256 = *known;
            } else {
                f.sha256 = ModelFile::sha256(m.path + "/" + f.name, [&](double x) {
                    if (progress && total > 0) progress((double(done) + x * double(f.sizeBytes)) / double(total));
                });
            }
            done += f.sizeBytes;
            m.sizeBytes += f.sizeBytes;
            m.mtimeNs = std::max(m.mtimeNs, f.mtimeNs);
            m.files.push_back(f);
        }
        m.sha256 = ModelFile::folderSha256(m.files);
        return m;
    }
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
