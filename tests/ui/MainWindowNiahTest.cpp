// A stored needle run opened in the window, as a click on the Needle runs panel's cell
// does: the run's model loads, its sample is made again and captured as the sweep did
// (question inside, or after the compression), the run's method and budget are shown,
// the needle's positions are marked and zoomed to, and the answer is decoded. A bad
// task, a missing model, a wrong or missing filler and a sample the model tokenizes
// otherwise are one line each.
#include "ui/MainWindow.h"

#include <gtest/gtest.h>

#include <QFile>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

#include <algorithm>

#include "engine/eval/NeedleTask.h"
#include "engine/eval/NeedleTaskName.h"
#include "engine/gguf/GgufFile.h"
#include "engine/tokenizer/GgufTokenizer.h"
#include "sessions/SessionStore.h"
#include "ui/AttentionView.h"
#include "ui/KeptPositionsView.h"
#include "ui/MethodsPanel.h"
#include "ui/ModelPromptPanel.h"
#include "ui/NiahPanel.h"

namespace kvlens::ui {
namespace {

const std::string kTestbed = std::string(KVLENS_SOURCE_DIR) + "/models/kvlens-testbed.gguf";

::testing::AssertionResult waitFor(QSignalSpy& spy, int count, int ms, const char* what) {
    while (spy.size() < count) {
        if (!spy.wait(ms)) return ::testing::AssertionFailure() << "timed out waiting for " << what;
    }
    return ::testing::AssertionSuccess();
}

struct NiahFixture {
    QTemporaryDir dir;
    NeedleSample sample;
    sessions::NiahRunRecord run;
    sessions::ModelRecord model;

    NiahFixture() {
        const NeedleSpec spec = NeedleTaskName::parse("single").sampleSpec(11, 512, 40.0, 0, "", true);
        GgufFile file(kTestbed);
        sample = makeNeedleSample(spec, *GgufTokenizer::fromGguf(file));
        model.spec = kTestbed;
        model.isFile = true;
        model.path = kTestbed;
        model.layers = 4;
        run.task = "single";
        run.taskSeed = 11;
        run.length = 512;
        run.tokens = static_cast<int64_t>(sample.tokens.size());
        run.depth = 40.0;
        run.sample = 0;
        run.newTokens = 12;
        run.method = "snapkv";
        run.budget = "96";
        run.params = "snapkv B=96 W=16 k=7 max kv-head";
        run.answer = ": " + sample.answers[0] + ".\n";
        run.expected = sample.answers;
        run.needlePositions.assign(sample.needlePositions.begin(), sample.needlePositions.end());
    }
    MainWindow::Options options() const {
        MainWindow::Options o;
        o.store = dir.filePath("store.sqlite");
        o.settings = dir.filePath("settings.ini");
        return o;
    }
};

TEST(MainWindowNiahTest, ACellOpensItsSampleWithTheNeedleMarkedAndItsAnswerDecoded) {
    NiahFixture f;
    {
        sessions::SessionStore store(f.options().store.toStdString());
        sessions::NiahRunRecord r = f.run;
        r.modelId = store.saveModel(f.model);
        r.sessionId = store.openSession("niah").id;
        ASSERT_TRUE(store.saveNiahRun(r));
    }
    MainWindow w(f.options());
    w.show();
    ASSERT_EQ(w.niahPanel()->sessionNames(), QStringList{"niah"});
    QSignalSpy outputs(&w, &MainWindow::outputsReady);
    QSignalSpy errors(&w, &MainWindow::errorShown);
    // No model is loaded: the click loads the run's, then captures and decodes.
    ASSERT_TRUE(w.niahPanel()->openCell(0, 0));
    ASSERT_TRUE(waitFor(outputs, 1, 120000, "the needle sample's outputs"));
    EXPECT_EQ(errors.size(), 0) << (errors.isEmpty() ? "" : errors.first().at(0).toString().toStdString());
    EXPECT_EQ(w.modelPanel()->loadOptions().model, kTestbed);
    EXPECT_EQ(w.modelPanel()->promptText().toStdString(), f.sample.prompt());
    EXPECT_EQ(w.keptView()->markedPositions(), f.sample.needlePositions);
    EXPECT_EQ(w.attentionView()->markedKeys(), f.sample.needlePositions);
    const PressParams p = w.methodsPanel()->params();
    EXPECT_EQ(p.method, "snapkv");
    EXPECT_EQ(p.budget, 96);
    EXPECT_EQ(p.window, 16);
    EXPECT_EQ(w.modelPanel()->newTokens(), 12);
    ASSERT_NE(w.shownSelection(), nullptr);
    EXPECT_EQ(w.shownSelection()->promptLength, static_cast<int64_t>(f.sample.tokens.size()));
    // The focused map centred on the needle, four times its span wide (64 positions at least).
    const double a = double(f.sample.needlePositions.front()), b = double(f.sample.needlePositions.back() + 1);
    EXPECT_EQ(w.keptView()->visiblePositions(), std::max(64.0, 4.0 * (b - a)));
    EXPECT_NEAR(w.keptView()->visibleFirst() + w.keptView()->visiblePositions() / 2.0, (a + b) / 2.0, 0.5);
    EXPECT_FALSE(w.keptView()->markedSummary().isEmpty());
    bool said = false;
    for (const QString& line : w.logLines())
        said = said || (line.contains("niah run") && line.contains("expected " + QString::fromStdString(f.sample.answers[0])));
    EXPECT_TRUE(said);

    // Question after the compression: the context is captured, the question follows.
    sessions::NiahRunRecord after = f.run;
    after.questionAfter = true;
    QSignalSpy shown(&w, &MainWindow::outputsReady);
    w.openNeedleRun(after, f.model);  // the model is loaded now: no load
    ASSERT_TRUE(waitFor(shown, 1, 120000, "the question-after outputs"));
    EXPECT_EQ(w.shownSelection()->promptLength, f.sample.contextTokens);
    EXPECT_EQ(w.modelPanel()->promptText().toStdString(), f.sample.context + f.sample.question);
    EXPECT_EQ(w.keptView()->markedPositions(), f.sample.needlePositions);
    {
        QSignalSpy refused(&w, &MainWindow::errorShown);
        w.saveRun();
        ASSERT_EQ(refused.size(), 1);
        EXPECT_TRUE(refused.first().at(0).toString().startsWith("cannot save a question-after needle sample"));
    }
    // Running the editor's text is an ordinary prompt again: no marks.
    QSignalSpy plain(&w, &MainWindow::promptReady);
    w.runPrompt();
    ASSERT_TRUE(waitFor(plain, 1, 120000, "the plain prompt"));
    EXPECT_TRUE(w.keptView()->markedPositions().empty());
    EXPECT_TRUE(w.attentionView()->markedKeys().empty());
}

TEST(MainWindowNiahTest, BadRunsAreOneLineEach) {
    NiahFixture f;
    MainWindow w(f.options());
    w.show();
    auto errorOf = [&](const sessions::NiahRunRecord& run, const sessions::ModelRecord& model) {
        QSignalSpy errors(&w, &MainWindow::errorShown);
        w.openNeedleRun(run, model);
        return errors.isEmpty() ? QString() : errors.first().at(0).toString();
    };
    sessions::NiahRunRecord bad = f.run;
    bad.task = "needle";
    EXPECT_EQ(errorOf(bad, f.model), "niah run 0: task 'needle': 'needle' is not a needle task");
    bad = f.run;
    bad.params = "snapkv B=96 wobble";
    EXPECT_EQ(errorOf(bad, f.model), "niah run 0: niah run 0 params: 'wobble' is not a parameter of a method");
    sessions::ModelRecord gone = f.model;
    gone.path = f.dir.filePath("moved.gguf").toStdString();
    EXPECT_EQ(errorOf(f.run, gone).toStdString(),
              "niah run 0: its model " + gone.path + " is not there (moved or deleted?): open it and click the cell again");

    // A sweep on a filler file: the file is asked for and its hash checked.
    bad = f.run;
    bad.task = "single+filler:0123456789abcdef";
    const QString filler = f.dir.filePath("filler.txt");
    {
        QFile file(filler);
        ASSERT_TRUE(file.open(QIODevice::WriteOnly));
        file.write("The cat sat on the mat. The dog lay by the door.");
    }
    QString asked;
    w.setFillerPrompt([&](const QString& hash) {
        asked = hash;
        return filler;
    });
    EXPECT_EQ(errorOf(bad, f.model).toStdString(),
              "niah run 0: task 'single+filler:0123456789abcdef' ran on a filler file whose FNV-1a hash is "
              "0123456789abcdef, not " + NeedleTaskName::fillerHashOf("The cat sat on the mat. The dog lay by the door."));
    EXPECT_EQ(asked, "0123456789abcdef");
    w.setFillerPrompt([](const QString&) { return QString(); });
    EXPECT_EQ(errorOf(bad, f.model), QString());  // cancelled: said in the status bar, not an error
    EXPECT_EQ(w.statusText(), "niah run 0: not opened (its sweep's --filler file is needed)");

    // A record whose sample this model makes otherwise (its tokens off by one).
    bad = f.run;
    bad.tokens += 1;
    QSignalSpy errors(&w, &MainWindow::errorShown);
    w.openNeedleRun(bad, f.model);
    ASSERT_TRUE(waitFor(errors, 1, 120000, "the mismatch"));
    const QString message = errors.first().at(0).toString();
    EXPECT_TRUE(message.startsWith("niah run 0: this model makes another sample (" +
                                   QString::number(f.sample.tokens.size()) + " tokens"))
        << message.toStdString();
    EXPECT_FALSE(message.contains('\n'));
    // The views show the new sample all the same, marked.
    EXPECT_EQ(w.keptView()->markedPositions(), f.sample.needlePositions);
}

}  // namespace
}  // namespace kvlens::ui
