// The main window driven as a user would, under Xvfb: load a model, run a prompt,
// move the budget, save the run, reopen the store in a new window and find the same
// selection; the layout survives a restart; bad models, prompts over the context and
// stores that cannot be opened give one message and leave the window working.
#include "ui/MainWindow.h"
#include "ui/MemoryPanel.h"

#include <gtest/gtest.h>

#include <QSpinBox>

#include <QCheckBox>
#include <QDockWidget>
#include <QLineEdit>
#include <QFile>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

#include <algorithm>
#include <filesystem>
#include <memory>

#include "sessions/ModelFile.h"
#include "sessions/SessionStore.h"
#include "engine/gguf/GgufFile.h"
#include "support/HfFolderWriter.h"
#include "support/TinyModelFile.h"
#include "ui/AttentionView.h"
#include "ui/EngineWorker.h"
#include "ui/KeptPositionsView.h"
#include "ui/MethodsPanel.h"
#include "ui/ModelPromptPanel.h"
#include "ui/SessionsPanel.h"

namespace kvlens::ui {
namespace {

const QString kStories = QString(KVLENS_SHARED_DIR) + "/models/stories260K.gguf";
const QString kPrompt =
    "Once upon a time, there was a little girl named Lily. She loved to play outside in the park. "
    "One day, she saw a big red ball under a tree. She ran to get it, but a dog was there too. "
    "The dog wanted the ball. Lily and the dog played together all day, and they became friends.";

struct Fixture {
    QTemporaryDir dir;
    MainWindow::Options options(const QString& model = {}) const {
        MainWindow::Options o;
        o.model = model;
        o.store = dir.filePath("store.sqlite");
        o.settings = dir.filePath("settings.ini");
        return o;
    }
};

// Waits for `spy` to hold `count` signals, or fails with `what`.
::testing::AssertionResult waitFor(QSignalSpy& spy, int count, int ms, const char* what) {
    while (spy.size() < count) {
        if (!spy.wait(ms)) return ::testing::AssertionFailure() << "timed out waiting for " << what;
    }
    return ::testing::AssertionSuccess();
}

// Loads `model`, runs the prompt and waits for the first selection.
void loadAndRun(MainWindow& w, const QString& model, const QString& prompt) {
    QSignalSpy ready(&w, &MainWindow::modelReady);
    QSignalSpy shown(&w, &MainWindow::selectionShown);
    w.modelPanel()->setModelText(model);
    w.loadModel();
    ASSERT_TRUE(waitFor(ready, 1, 60000, "the model"));
    w.modelPanel()->setPromptText(prompt);
    w.runPrompt();
    ASSERT_TRUE(waitFor(shown, 1, 120000, "the first selection"));
}

void endToEnd(const QString& model, int64_t budget) {
    Fixture f;
    std::vector<std::vector<std::vector<int32_t>>> kept;
    qint64 runId = 0;
    {
        MainWindow w(f.options());
        w.show();
        loadAndRun(w, model, kPrompt);
        ASSERT_TRUE(w.hasCapture());
        QSignalSpy shown(&w, &MainWindow::selectionShown);
        w.methodsPanel()->setBudgetEntries(budget);
        ASSERT_TRUE(waitFor(shown, 1, 30000, "the new budget's selection"));
        // Later signals may still be in flight; wait until the shown one is for this budget.
        for (int i = 0; i < 50 && w.shownSelection()->params.budget != budget; ++i) shown.wait(200);
        ASSERT_EQ(w.shownSelection()->params.budget, budget);
        kept = w.shownSelection()->kept;
        EXPECT_EQ(w.keptView()->focusedLayer(), 0);

        QSignalSpy saved(&w, &MainWindow::runSaved);
        w.saveRun();
        ASSERT_TRUE(waitFor(saved, 1, 120000, "the saved run"));
        runId = saved.first().at(0).toLongLong();
        EXPECT_GT(runId, 0);
        EXPECT_TRUE(w.statusText().contains("Saved run")) << w.statusText().toStdString();
    }
    // A new window on the same store, no model loaded: open the session, activate the run.
    MainWindow again(f.options());
    again.show();
    ASSERT_TRUE(again.sessionsPanel()->openSession("default"));
    QSignalSpy shown(&again, &MainWindow::selectionShown);
    emit again.sessionsPanel()->runActivated(runId);
    ASSERT_EQ(shown.size(), 1);
    ASSERT_TRUE(again.shownSelection());
    EXPECT_EQ(again.shownSelection()->kept, kept);
    EXPECT_EQ(again.methodsPanel()->params().budget, budget);
}

TEST(MainWindowTest, EndToEndOnStories260K) {
    if (!QFile::exists(kStories)) GTEST_SKIP() << "needs ../shared/models/stories260K.gguf (absent)";
    endToEnd(kStories, 48);  // the prompt is ~80 tokens; the window 32
}

TEST(MainWindowTest, EndToEndOnRandomTiny) { endToEnd("random:tiny", 40); }

// A Hugging Face folder loads, runs, saves (each weight file hashed) and reopens as a GGUF does.
TEST(MainWindowTest, EndToEndOnAHuggingFaceFolder) {
    const GgufFile src(std::string(KVLENS_SOURCE_DIR) + "/tests/data/gguf/tiny-llama3-Q4_K_M.gguf");
    const std::string dir = test::testOutputPath("gui_hf_llama3");
    std::filesystem::remove_all(dir);
    test::HfWriteOptions o;
    o.shards = 2;
    test::writeHfFolder(src, dir, o);
    endToEnd(QString::fromStdString(dir), 40);
}

TEST(MainWindowTest, ChoosingAFoldersConfigJsonOpensTheFolder) {
    EXPECT_EQ(ModelPromptPanel::modelFromChoice("/models/Qwen2.5-7B-Instruct/config.json"),
              QString("/models/Qwen2.5-7B-Instruct"));
    EXPECT_EQ(ModelPromptPanel::modelFromChoice("/models/llama.gguf"), QString("/models/llama.gguf"));
}

TEST(MainWindowTest, ANewPromptClearsTheOldAttentionMapAndOutputs) {
    Fixture f;
    MainWindow w(f.options());
    w.show();
    loadAndRun(w, "random:tiny", kPrompt);
    QSignalSpy mapped(&w, &MainWindow::attentionShown);
    w.showAttention(1, 2);
    // The run's own map (L0 H0) may arrive first.
    auto shows12 = [&] {
        return !mapped.isEmpty() && mapped.last().at(0).toInt() == 1 && mapped.last().at(1).toInt() == 2;
    };
    for (int i = 0; i < 100 && !shows12(); ++i) mapped.wait(300);
    ASSERT_TRUE(shows12()) << "the L1 H2 map never came";
    EXPECT_TRUE(w.attentionView()->titleText().contains("L1 H2")) << w.attentionView()->titleText().toStdString();
    QSignalSpy shown(&w, &MainWindow::selectionShown);
    w.modelPanel()->setPromptText("another prompt, shorter than the first, for a new capture");
    w.runPrompt();
    ASSERT_TRUE(waitFor(shown, 1, 60000, "the new selection"));
    EXPECT_FALSE(w.attentionView()->titleText().contains("L1 H2")) << w.attentionView()->titleText().toStdString();
    EXPECT_EQ(w.shownSelection()->promptLength, 58);  // BOS + 57 bytes
}

// Every budget change ends with the kept-positions view drawn from the new selection, by the
// event loop alone: no stale kept positions, whether the frame comes before or after the
// window says the selection is shown.
TEST(MainWindowTest, EveryBudgetChangeIsDrawnInTheKeptView) {
    Fixture f;
    MainWindow w(f.options());
    w.show();
    loadAndRun(w, "random:tiny", kPrompt);
    for (int64_t budget : {40, 57, 44, 80}) {
        QSignalSpy shown(&w, &MainWindow::selectionShown);
        w.methodsPanel()->setBudgetEntries(budget);
        ASSERT_TRUE(waitFor(shown, 1, 30000, "the new budget's selection"));
        for (int i = 0; i < 50 && w.shownSelection()->params.budget != budget; ++i) shown.wait(200);
        ASSERT_EQ(w.shownSelection()->params.budget, budget);
        EXPECT_TRUE(QTest::qWaitFor([&] { return w.keptView()->drawnLatestSelection(); }, 5000))
            << "budget " << budget << ": the kept-positions view was not redrawn";
    }
}

TEST(MainWindowTest, SaveKeepsTheParametersAskedLast) {
    Fixture f;
    MainWindow w(f.options());
    w.show();
    loadAndRun(w, "random:tiny", kPrompt);
    QSignalSpy saved(&w, &MainWindow::runSaved);
    QSignalSpy decoded(&w, &MainWindow::outputsReady);
    w.saveRun();                             // decodes the first budget...
    w.methodsPanel()->setBudgetEntries(77);  // ...but the user changes it
    w.saveRun();                             // and saves again before it arrives
    ASSERT_TRUE(waitFor(saved, 1, 60000, "the saved run"));
    for (int i = 0; i < 20 && decoded.wait(500); ++i) {  // the decodes still in flight
    }
    ASSERT_EQ(saved.size(), 1);
    sessions::SessionStore store(f.options().store.toStdString());
    const auto runs = store.runs(store.session("default").id);
    ASSERT_EQ(runs.size(), 1u);
    EXPECT_EQ(runs[0].params.budget, 77);
    // The decode's allocation is shown beside the logical KV and kept with the run.
    const sessions::RunRecord run = store.run(runs[0].id);
    EXPECT_GT(run.metrics.allocatedBytes, 0);
    EXPECT_EQ(w.memoryPanel()->allocation(),
              MemoryPanel::allocationText(run.metrics.allocatedBytes, run.metrics.bytes));
}

// A decode asked for while a save waits for its own may replace it in the worker's queue: the
// save is dropped in one line rather than lost in silence or made later from another decode.
TEST(MainWindowTest, ADecodeAskedWhileASaveWaitsDropsTheSaveInOneLine) {
    Fixture f;
    MainWindow w(f.options());
    w.show();
    loadAndRun(w, "random:tiny", kPrompt);
    QSignalSpy saved(&w, &MainWindow::runSaved);
    QSignalSpy decoded(&w, &MainWindow::outputsReady);
    QSignalSpy error(&w, &MainWindow::errorShown);
    w.saveRun();
    w.decodeOutputs();
    ASSERT_EQ(error.size(), 1);
    EXPECT_EQ(error.first().at(0).toString(),
              "the save waiting for its decode was dropped: a new decode replaced it; save again");
    ASSERT_TRUE(waitFor(decoded, 1, 60000, "the decode"));
    for (int i = 0; i < 20 && decoded.wait(500); ++i) {  // the decodes still in flight
    }
    EXPECT_EQ(saved.size(), 0);
    // Saving again works.
    w.saveRun();
    ASSERT_TRUE(waitFor(saved, 1, 60000, "the saved run"));
}

// Opens the tiny GGUF `model` in a window on `f`'s store, runs a short prompt and
// saves it at budget 8, window 4; returns the store to look at.
std::unique_ptr<sessions::SessionStore> saveOneFileRun(const Fixture& f, const test::TinyModelFile& model,
                                                       const std::string& path) {
    model.builder.writeFile(path);
    MainWindow w(f.options());
    w.show();
    EXPECT_TRUE(w.modelPanel()->addBos());
    loadAndRun(w, QString::fromStdString(path), "the a the a the a the a the a the a the a the a the a");
    QSignalSpy saved(&w, &MainWindow::runSaved);
    w.methodsPanel()->setBudgetEntries(8);
    PressParams p = w.methodsPanel()->params();
    p.window = 4;
    w.methodsPanel()->setParams(p);
    w.saveRun();
    EXPECT_TRUE(waitFor(saved, 1, 60000, "the saved run"));
    return std::make_unique<sessions::SessionStore>(f.options().store.toStdString());
}

TEST(MainWindowTest, AFileModelIsHashedOffTheGuiThreadAndSaved) {
    Fixture f;
    test::TinyModelShape shape;
    shape.context = 512;
    const std::string path = f.dir.filePath("tiny.gguf").toStdString();
    const auto store = saveOneFileRun(f, test::makeTinyModelFile(shape), path);
    const auto models = store->models(store->session("default").id);
    ASSERT_EQ(models.size(), 1u);
    EXPECT_TRUE(models[0].isFile);
    EXPECT_EQ(models[0].sha256, sessions::ModelFile::sha256(path));
    EXPECT_EQ(models[0].sha256.size(), 64u);
}

// A vocabulary that adds no BOS: the stored prompt says add_bos false (what the
// prefill did), as kvlens run --save stores it, whatever the checkbox asked.
TEST(MainWindowTest, SavedPromptRecordsTheBosThePrefillApplied) {
    Fixture f;
    test::TinyModelShape shape;
    shape.context = 512;
    test::TinyModelFile m = test::makeTinyModelFile(shape);
    m.builder.addBool("tokenizer.ggml.add_bos_token", false);
    const auto store = saveOneFileRun(f, m, f.dir.filePath("nobos.gguf").toStdString());
    const auto prompts = store->prompts(store->session("default").id);
    ASSERT_EQ(prompts.size(), 1u);
    EXPECT_FALSE(prompts[0].addBos);
    EXPECT_NE(prompts[0].tokenIds.front(), 1);  // no BOS id 1 in front
}

// Chat: the checkbox names the model's template family; ticked, the prompt goes as
// one user turn with the system message, its markers parsed as control tokens, and
// the store keeps what was tokenized. A model without a template leaves it unticked
// and disabled.
TEST(MainWindowTest, ChatSendsThePromptThroughTheModelsTemplate) {
    Fixture f;
    test::TinyModelShape shape;
    shape.context = 512;
    shape.chatTemplate = "{% for m in messages %}<|im_start|>{{ m.role }}{{ m.content }}<|im_end|>{% endfor %}";
    shape.controlTokens = {"<|im_start|>", "<|im_end|>"};
    const test::TinyModelFile m = test::makeTinyModelFile(shape);
    const std::string path = f.dir.filePath("chat.gguf").toStdString();
    m.builder.writeFile(path);
    const int32_t imStart = static_cast<int32_t>(m.vocab) - 2;

    MainWindow w(f.options());
    w.show();
    auto* chat = w.modelPanel()->findChild<QCheckBox*>("chat");
    auto* system = w.modelPanel()->findChild<QLineEdit*>("systemMessage");
    ASSERT_NE(chat, nullptr);
    ASSERT_NE(system, nullptr);
    EXPECT_FALSE(chat->isEnabled());  // no model yet
    QSignalSpy ready(&w, &MainWindow::modelReady);
    QSignalSpy shown(&w, &MainWindow::selectionShown);
    w.modelPanel()->setModelText(QString::fromStdString(path));
    w.loadModel();
    ASSERT_TRUE(waitFor(ready, 1, 60000, "the model"));
    EXPECT_TRUE(chat->isEnabled());
    EXPECT_EQ(chat->text(), "Chat (chatml)");
    EXPECT_FALSE(system->isEnabled());
    chat->setChecked(true);
    EXPECT_TRUE(system->isEnabled());
    system->setText("be brief");
    w.modelPanel()->setPromptText("the cat the a the cat the a the cat the a the cat");
    w.runPrompt();
    ASSERT_TRUE(waitFor(shown, 1, 120000, "the first selection"));
    QSignalSpy saved(&w, &MainWindow::runSaved);
    w.methodsPanel()->setBudgetEntries(8);
    PressParams p = w.methodsPanel()->params();
    p.window = 4;
    w.methodsPanel()->setParams(p);
    w.saveRun();
    ASSERT_TRUE(waitFor(saved, 1, 60000, "the saved run"));
    {
        sessions::SessionStore store(f.options().store.toStdString());
        const auto prompts = store.prompts(store.session("default").id);
        ASSERT_EQ(prompts.size(), 1u);
        EXPECT_EQ(prompts[0].text, "<|im_start|>system\nbe brief<|im_end|>\n<|im_start|>user\nthe cat the a the "
                                   "cat the a the cat the a the cat<|im_end|>\n<|im_start|>assistant\n");
        EXPECT_EQ(std::count(prompts[0].tokenIds.begin(), prompts[0].tokenIds.end(), imStart), 3);
    }

    // A model without a template: the box goes off and disabled.
    QSignalSpy readyAgain(&w, &MainWindow::modelReady);
    w.modelPanel()->setModelText("random:tiny");
    w.loadModel();
    ASSERT_TRUE(waitFor(readyAgain, 1, 60000, "random:tiny"));
    EXPECT_FALSE(chat->isEnabled());
    EXPECT_FALSE(chat->isChecked());
    EXPECT_FALSE(w.modelPanel()->prompt().chat);
}

// After a run the Attention panel shows the focused layer's first head at once.
TEST(MainWindowTest, AttentionOfTheFocusedLayersFirstHeadAppearsAfterARun) {
    Fixture f;
    MainWindow w(f.options());
    w.show();
    QSignalSpy mapped(&w, &MainWindow::attentionShown);
    loadAndRun(w, "random:tiny", kPrompt);
    ASSERT_TRUE(waitFor(mapped, 1, 60000, "the first attention map"));
    EXPECT_TRUE(w.attentionView()->titleText().contains("L0 H0")) << w.attentionView()->titleText().toStdString();
}

// Without --model the window loads what the CLI would: $KVLENS_MODEL, then the
// project's testbed model (committed in models/).
// The hover's "kept by" compares the methods chosen in the Methods panel's menu, and the
// choice survives a restart.
TEST(MainWindowTest, KeptByComparesTheChosenMethods) {
    Fixture f;
    auto methodsOf = [](const QStringList& names) {
        QStringList methods;
        for (const QString& n : names) methods << n.section(' ', 0, 0);
        return methods;
    };
    {
        MainWindow w(f.options());
        w.show();
        QSignalSpy others(&w.worker(), &EngineWorker::othersSelected);
        loadAndRun(w, "random:tiny", kPrompt);
        ASSERT_TRUE(waitFor(others, 1, 60000, "the other methods"));
        QTest::qWait(50);
        // LagKV is left out: at the default budget its tail (--lag 128) does not fit.
        EXPECT_EQ(methodsOf(w.keptView()->otherSelectionNames()),
                  (QStringList{"pyramidkv", "streamingllm", "adakv", "random", "tova", "knorm", "keydiff", "chunkkv",
                               "expected", "cur", "cake", "simlayerkv", "perlayer", "leverage", "finch-kvpress",
                               "chunkkv-kvpress"}));
        w.methodsPanel()->setComparedMethods({"h2o", "knorm"});
        ASSERT_TRUE(waitFor(others, 2, 60000, "the chosen methods"));
        QTest::qWait(50);
        EXPECT_EQ(methodsOf(w.keptView()->otherSelectionNames()), (QStringList{"h2o", "knorm"}));
        w.close();
    }
    MainWindow again(f.options());
    EXPECT_EQ(again.methodsPanel()->comparedMethods(), (QStringList{"h2o", "knorm"}));
}

TEST(MainWindowTest, DefaultModelIsTheClisChoice) {
    const QByteArray saved = qgetenv("KVLENS_MODEL");
    const bool had = qEnvironmentVariableIsSet("KVLENS_MODEL");
    qputenv("KVLENS_MODEL", "random:tiny:layers=2");
    EXPECT_EQ(MainWindow::defaultModel(), "random:tiny:layers=2");
    qunsetenv("KVLENS_MODEL");
    EXPECT_EQ(MainWindow::defaultModel(), QString(KVLENS_SOURCE_DIR) + "/models/kvlens-testbed.gguf");
    EXPECT_TRUE(QFile::exists(MainWindow::defaultModel()));
    if (had) qputenv("KVLENS_MODEL", saved);
}

TEST(MainWindowTest, LayoutIsRestored) {
    Fixture f;
    {
        MainWindow w(f.options());
        w.show();
        ASSERT_TRUE(QTest::qWaitForWindowExposed(&w));
        w.dock("funnelDock")->hide();
        w.close();
    }
    MainWindow again(f.options());
    again.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&again));
    EXPECT_FALSE(again.dock("funnelDock")->isVisible());
    EXPECT_TRUE(again.dock("methodsDock")->isVisible());
}

TEST(MainWindowTest, BadModelFileIsOneMessageAndTheWindowKeepsWorking) {
    Fixture f;
    const QString bad = f.dir.filePath("not-a-model.gguf");
    {
        QFile file(bad);
        ASSERT_TRUE(file.open(QIODevice::WriteOnly));
        file.write("this is not GGUF");
    }
    MainWindow w(f.options());
    w.show();
    QSignalSpy error(&w, &MainWindow::errorShown);
    w.modelPanel()->setModelText(bad);
    w.loadModel();
    ASSERT_TRUE(waitFor(error, 1, 30000, "the error"));
    const QString message = error.first().at(0).toString();
    EXPECT_TRUE(message.contains(bad)) << message.toStdString();
    EXPECT_FALSE(message.contains('\n'));
    EXPECT_TRUE(w.statusText().contains(bad));
    EXPECT_TRUE(w.logLines().last().contains("error (load): ")) << w.logLines().last().toStdString();
    // The window still loads a good model and runs a prompt.
    loadAndRun(w, "random:tiny", kPrompt);
    EXPECT_TRUE(w.hasCapture());
}

TEST(MainWindowTest, PromptOverTheContextKeepsTheCurrentCapture) {
    Fixture f;
    MainWindow w(f.options());
    w.show();
    loadAndRun(w, "random:tiny:ctx=128", "a short prompt of some seventy bytes, long enough for a window of 32");
    const auto before = w.shownSelection();
    QSignalSpy error(&w, &MainWindow::errorShown);
    w.modelPanel()->setPromptText(kPrompt);  // over 128 byte tokens
    w.runPrompt();
    ASSERT_TRUE(waitFor(error, 1, 30000, "the error"));
    const QString message = error.first().at(0).toString();
    EXPECT_TRUE(message.startsWith("prompt: ")) << message.toStdString();
    EXPECT_TRUE(message.contains("over the model's context of 128")) << message.toStdString();
    EXPECT_TRUE(w.hasCapture());
    EXPECT_EQ(w.shownSelection(), before);
}

TEST(MainWindowTest, StoreThatCannotBeOpenedIsOneMessage) {
    Fixture f;
    MainWindow::Options o = f.options();
    // A file that is not a store.
    o.store = f.dir.filePath("not-a-store.sqlite");
    {
        QFile file(o.store);
        EXPECT_TRUE(file.open(QIODevice::WriteOnly));
        file.write(QByteArray(4096, 'x'));
    }
    MainWindow w(o);
    w.show();
    EXPECT_TRUE(w.statusText().startsWith("Error: ")) << w.statusText().toStdString();
    EXPECT_TRUE(w.statusText().contains(o.store)) << w.statusText().toStdString();
    EXPECT_FALSE(w.statusText().contains('\n'));
    // Saving says why it cannot, and the window goes on.
    loadAndRun(w, "random:tiny", kPrompt);
    QSignalSpy error(&w, &MainWindow::errorShown);
    w.saveRun();
    ASSERT_EQ(error.size(), 1);
    EXPECT_EQ(error.first().at(0).toString(), "cannot save: no session store is open (File > Open store)");
    // A good store opened later works.
    w.openStore(f.dir.filePath("good.sqlite"));
    QSignalSpy saved(&w, &MainWindow::runSaved);
    w.saveRun();
    ASSERT_TRUE(waitFor(saved, 1, 60000, "the saved run"));
    // A decode compressed every N steps is saved with its schedule and its cache sizes.
    PressParams knorm = w.methodsPanel()->params();
    knorm.method = "knorm";
    knorm.budget = 40;
    w.methodsPanel()->setParams(knorm);
    w.modelPanel()->findChild<QSpinBox*>("decodeEvery")->setValue(4);
    w.saveRun();
    ASSERT_TRUE(waitFor(saved, 2, 60000, "the run decoded with compression"));
    sessions::SessionStore store(f.dir.filePath("good.sqlite").toStdString());
    const sessions::RunRecord run = store.run(saved.at(1).at(0).toLongLong());
    EXPECT_EQ(run.params.method, "knorm");
    EXPECT_EQ(run.metrics.decodeEvery, 4);
    ASSERT_EQ(int64_t(run.metrics.cacheEntries.size()), w.modelPanel()->newTokens() - 1);
    for (int64_t e : run.metrics.cacheEntries) EXPECT_LE(e, 40 + 3);
    EXPECT_EQ(store.run(saved.at(0).at(0).toLongLong()).metrics.decodeEvery, 0);
}

}  // namespace
}  // namespace kvlens::ui
