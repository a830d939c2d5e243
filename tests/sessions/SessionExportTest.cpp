// Export writes one session to a single store file that import takes back
// into any store with every field equal; the refusals each give one line.
#include <gtest/gtest.h>

#include "RecordEquality.h"
#include "SampleRecords.h"
#include "TestPaths.h"
#include "core/Error.h"
#include "sessions/SessionExport.h"

namespace kvlens::sessions {
namespace {

std::string errorOf(const std::function<void()>& f) {
    try {
        f();
    } catch (const Error& e) {
        return e.what();
    }
    return "no error";
}

TEST(SessionExport, ExportThenImportKeepsEveryField) {
    const std::string sourcePath = test::storePath("source.db");
    const std::string file = test::storePath("export.kvlens");
    const std::string targetPath = test::storePath("target.db");
    SessionStore source(sourcePath);
    SessionInfo info;
    info.name = "study";
    info.notes = "budget sweep";
    info.createdMs = 1111;
    info.updatedMs = 2222;
    info.uiState = R"({"tab":"heads"})";
    const int64_t sid = source.createSession(info).id;
    source.createSession("other");
    ModelRecord fileModel = test::sampleModel();
    fileModel.isFile = true;
    fileModel.spec = fileModel.path = "/m/x.gguf";
    fileModel.sha256 = "00ff";
    fileModel.sizeBytes = 10;
    const int64_t m1 = source.saveModel(test::sampleModel()), m2 = source.saveModel(fileModel);
    const int64_t p1 = source.savePrompt(test::samplePrompt(sid, m1)),
                  p2 = source.savePrompt(test::samplePrompt(sid, m2, 33));
    std::vector<RunRecord> runs = {test::sampleRun(1, sid, p1), test::sampleRun(2, sid, p2),
                                   test::sampleRun(3, sid, p1)};
    for (RunRecord& r : runs) r.id = source.saveRun(r);
    source.setSessionTimes("study", info.createdMs, info.updatedMs);

    EXPECT_EQ(SessionExport::exportSession(source, "study", file), 3);
    EXPECT_FALSE(test::fileBytes(file).empty());
    EXPECT_TRUE(test::fileBytes(file + "-wal").empty()) << "the export must be a single file";
    EXPECT_EQ(errorOf([&] { SessionExport::exportSession(source, "study", file); }),
              file + ": already exists; export writes a new file");

    const std::string exported = test::fileBytes(file);
    SessionStore target(targetPath);
    target.createSession("unrelated");
    const SessionInfo imported = SessionExport::importSession(target, file);
    EXPECT_TRUE(test::fileBytes(file) == exported) << "import must only read the file";
    EXPECT_EQ(imported.name, "study");
    EXPECT_EQ(imported.notes, info.notes);
    EXPECT_EQ(imported.createdMs, info.createdMs);
    EXPECT_EQ(imported.updatedMs, info.updatedMs);
    EXPECT_EQ(imported.uiState, info.uiState);
    EXPECT_EQ(imported.runCount, 3);
    EXPECT_EQ(imported.promptCount, 2);

    const auto importedRuns = target.runs(imported.id);
    ASSERT_EQ(importedRuns.size(), 3u);
    for (size_t i = 0; i < runs.size(); ++i) {
        SCOPED_TRACE(i);
        const RunRecord back = target.run(importedRuns[i].id);
        test::expectSameRun(back, runs[i], false);
        const PromptRecord prompt = target.prompt(back.promptId),
                           original = source.prompt(runs[i].promptId);
        EXPECT_EQ(prompt.text, original.text);
        EXPECT_EQ(prompt.tokenIds, original.tokenIds);
        const ModelRecord model = target.model(prompt.modelId),
                          originalModel = source.model(original.modelId);
        EXPECT_EQ(model.spec, originalModel.spec);
        EXPECT_EQ(model.sha256, originalModel.sha256);
        EXPECT_EQ(model.sizeBytes, originalModel.sizeBytes);
        EXPECT_EQ(model.isFile, originalModel.isFile);
    }

    // Again: the name is taken, so it needs another one.
    EXPECT_EQ(errorOf([&] { SessionExport::importSession(target, file); }),
              targetPath +
                  ": a session named 'study' already exists; import it under another name with "
                  "--as NAME");
    EXPECT_EQ(SessionExport::importSession(target, file, "", "study 2").runCount, 3);
    // A whole store holds several sessions: one must be named.
    EXPECT_EQ(errorOf([&] { SessionExport::importSession(target, sourcePath); }),
              sourcePath + ": holds 2 sessions; name the one to import with --session");
    EXPECT_EQ(SessionExport::importSession(target, sourcePath, "other", "other").runCount, 0);
    EXPECT_EQ(errorOf([&] { SessionExport::importSession(target, file, "nope"); }),
              file + ": no session 'nope' (sessions: study)");
    EXPECT_EQ(errorOf([&] { SessionExport::exportSession(source, "nope", file + "2"); }),
              sourcePath + ": no session 'nope' (sessions: other, study)");
    EXPECT_FALSE(std::ifstream(file + "2").good());
    EXPECT_EQ(target.integrityCheck(), "ok");
}

TEST(SessionExport, ImportOfABadFileIsRefusedUnchanged) {
    SessionStore target(test::storePath("target.db"));
    const std::string file = test::storePath("bad.kvlens");
    test::writeFile(file, "{\"not\": \"a store\"}");
    EXPECT_EQ(errorOf([&] { SessionExport::importSession(target, file); }),
              file + ": not a KV Lens session store (not a SQLite file)");
    EXPECT_EQ(test::fileBytes(file), "{\"not\": \"a store\"}");
    EXPECT_TRUE(target.sessions().empty());
}

}  // namespace
}  // namespace kvlens::sessions
