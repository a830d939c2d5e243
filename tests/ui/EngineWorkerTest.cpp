// The engine thread on random:tiny: results arrive as signals on the GUI thread,
// select requests that pile up are coalesced to the newest, cancelling a prefill
// keeps the previous capture, and failures come back as one line naming the job.
#include "ui/EngineWorker.h"

#include <gtest/gtest.h>

#include <QCoreApplication>
#include <QSignalSpy>
#include <QThread>

#include <string>

namespace kvlens::ui {
namespace {

WorkbenchPrompt plain(const QString& text) {
    WorkbenchPrompt p;
    p.text = text.toStdString();
    return p;
}

QString prompt(int words) {
    QString s;
    for (int i = 0; i < words; ++i) s += QString("word%1 ").arg(i % 13);
    return s;
}

Workbench::LoadOptions tiny(const std::string& model = "random:tiny") {
    Workbench::LoadOptions o;
    o.model = model;
    o.dtype = "f32";
    o.threads = 1;
    return o;
}

TEST(EngineWorkerTest, LoadCaptureAndSelectArriveOnTheGuiThread) {
    EngineWorker w;
    QSignalSpy loaded(&w, &EngineWorker::modelLoaded);
    QSignalSpy captured(&w, &EngineWorker::promptCaptured);
    QThread* gui = QThread::currentThread();
    QThread* seenOn = nullptr;
    QObject::connect(&w, &EngineWorker::selected, &w, [&](const SelectionResult&) { seenOn = QThread::currentThread(); });
    QSignalSpy selected(&w, &EngineWorker::selected);
    w.load(tiny());
    ASSERT_TRUE(loaded.wait(30000));
    w.runPrompt(plain(prompt(40)), 4);
    ASSERT_TRUE(captured.wait(30000));
    PressParams p;
    p.budget = 48;
    p.window = 8;
    w.select(p, 1);
    ASSERT_TRUE(selected.wait(10000));
    EXPECT_EQ(seenOn, gui);
    const auto r = selected.takeFirst().at(0).value<SelectionResult>();
    ASSERT_TRUE(r.selection);
    EXPECT_EQ(r.selection->params.budget, 48);
    EXPECT_EQ(r.focusLayer, 1);
    ASSERT_TRUE(r.scores);
    EXPECT_EQ(int64_t(r.scores->size()), r.selection->headsPerLayer());
    EXPECT_EQ(r.bytesPerLayer.size(), 4u);
}

TEST(EngineWorkerTest, PilingSelectsAreCoalescedToTheNewest) {
    EngineWorker w;
    QSignalSpy captured(&w, &EngineWorker::promptCaptured);
    w.load(tiny());
    w.runPrompt(plain(prompt(200)), 0);
    ASSERT_TRUE(captured.wait(60000));
    std::vector<uint64_t> answered;
    int64_t lastBudget = 0;
    QObject::connect(&w, &EngineWorker::selected, &w, [&](const SelectionResult& r) {
        answered.push_back(r.request);
        lastBudget = r.selection->params.budget;
    });
    PressParams p;
    p.window = 8;
    uint64_t last = 0;
    // 200 budget changes in a burst, as a dragged slider sends them.
    for (int b = 20; b < 220; ++b) {
        p.budget = b;
        last = w.select(p, 0);
    }
    for (int i = 0; i < 200 && (answered.empty() || answered.back() != last); ++i) {
        QCoreApplication::processEvents(QEventLoop::AllEvents, 50);
        QThread::msleep(10);
    }
    ASSERT_FALSE(answered.empty());
    EXPECT_EQ(answered.back(), last);
    EXPECT_EQ(lastBudget, 219);
    EXPECT_LT(answered.size(), 200u) << "nothing was coalesced";
    EXPECT_EQ(w.selectionsComputed(), answered.size());
    for (size_t i = 1; i < answered.size(); ++i) EXPECT_LT(answered[i - 1], answered[i]);
}

TEST(EngineWorkerTest, CancelKeepsThePreviousCaptureAndFailuresNameTheJob) {
    EngineWorker w;
    QSignalSpy captured(&w, &EngineWorker::promptCaptured);
    QSignalSpy cancelled(&w, &EngineWorker::cancelled);
    QSignalSpy failed(&w, &EngineWorker::failed);
    w.load(tiny("random:tinyllama-1.1b:layers=6"));
    w.runPrompt(plain(prompt(10)), 0);
    ASSERT_TRUE(captured.wait(120000));
    // A long prefill, cancelled as soon as it reports progress.
    QSignalSpy progress(&w, &EngineWorker::progress);
    w.runPrompt(plain(prompt(250)), 0);  // ~1700 tokens, within the context of 2048
    ASSERT_TRUE(progress.wait(60000));
    w.cancel();
    ASSERT_TRUE(cancelled.wait(60000));
    EXPECT_EQ(cancelled.takeFirst().at(0).toString(), "prompt");
    EXPECT_EQ(captured.size(), 1);
    // The capture of the short prompt is still there to select on.
    QSignalSpy selected(&w, &EngineWorker::selected);
    PressParams p;
    p.budget = 6;
    p.window = 2;
    w.select(p, 0);
    ASSERT_TRUE(selected.wait(10000));
    EXPECT_EQ(selected.takeFirst().at(0).value<SelectionResult>().selection->promptLength,
              int64_t(captured.first().at(0).value<std::shared_ptr<const WorkbenchCapture>>()->tokenIds.size()));
    // A bad selection fails with one line naming the job.
    p.budget = 2;
    p.window = 4;
    w.select(p, 0);
    ASSERT_TRUE(failed.wait(10000));
    EXPECT_EQ(failed.first().at(0).toString(), "select");
    EXPECT_FALSE(failed.first().at(1).toString().contains('\n'));
    EXPECT_FALSE(failed.first().at(1).toString().isEmpty());
}

}  // namespace
}  // namespace kvlens::ui
