// kvlens_gui_bench: the GUI's two timing targets, measured on the real window under
// Xvfb (run it with `xvfb-run -a -s "-screen 0 1920x1200x24"`, QT_QPA_PLATFORM=xcb).
//   live: on a 4096-token capture of random:tinyllama-1.1b, from a budget change in the
//         Methods panel to the kept-positions view redrawn with the new selection;
//   pan:  frames per second panning the attention view of an 8192-token prompt.
// Usage: kvlens_gui_bench live [--model M] [--tokens N] [--changes K]
//        kvlens_gui_bench pan  [--model M] [--tokens N] [--frames F] [--cells-per-pixel C...]
// Timings are printed, never asserted (DESIGN.md: timings live in benchmarks).
#include <QApplication>
#include <QDockWidget>
#include <QElapsedTimer>
#include <QOpenGLContext>
#include <QOpenGLFunctions>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "ui/AttentionView.h"
#include "ui/FunnelView.h"
#include "ui/KeptPositionsView.h"
#include "ui/MainWindow.h"
#include "ui/MethodsPanel.h"
#include "ui/ModelPromptPanel.h"

using kvlens::ui::MainWindow;

namespace {

std::string argAfter(const std::vector<std::string>& args, const std::string& flag,
                     const std::string& fallback) {
    for (size_t i = 0; i + 1 < args.size(); ++i)
        if (args[i] == flag) return args[i + 1];
    return fallback;
}

// A prompt of exactly `tokens` byte-level tokens (BOS + tokens - 1 bytes) of plain text.
QString bytePrompt(int tokens) {
    const std::string words = "the quick brown fox jumps over the lazy dog while a cat sleeps. ";
    std::string s;
    while (int(s.size()) < tokens - 1) s += words;
    s.resize(size_t(tokens - 1));
    return QString::fromStdString(s);
}

bool waitFor(QSignalSpy& spy, int count, int ms) {
    while (spy.size() < count)
        if (!spy.wait(ms)) return false;
    return true;
}

void finishGl(QOpenGLWidget* w) {
    w->makeCurrent();
    w->context()->functions()->glFinish();
    w->doneCurrent();
}

// Every wait is bounded: a frame that never comes ends the run with one line, not a hang.
constexpr qint64 kFrameWaitMs = 10000;

// Runs the event loop until `done()` holds; false (and one line naming `what`) after
// kFrameWaitMs.
template <typename Done>
bool runUntil(Done done, const char* what) {
    QElapsedTimer t;
    t.start();
    while (!done()) {
        if (t.elapsed() > kFrameWaitMs) {
            std::fprintf(stderr, "kvlens_gui_bench: %s: no frame in %lld s\n", what,
                         static_cast<long long>(kFrameWaitMs / 1000));
            return false;
        }
        QApplication::processEvents(QEventLoop::AllEvents, 5);
    }
    return true;
}

// Runs the event loop until `view` has drawn one more frame (its pending update).
bool nextFrame(kvlens::ui::ImGuiCanvas* view, const char* what) {
    const auto before = view->frameCount();
    return runUntil([&] { return view->frameCount() != before; }, what);
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[v.size() / 2];
}

bool prepare(MainWindow& w, const QString& model, int tokens) {
    QSignalSpy ready(&w, &MainWindow::modelReady);
    QSignalSpy shown(&w, &MainWindow::selectionShown);
    QSignalSpy error(&w, &MainWindow::errorShown);
    w.modelPanel()->setModelText(model);
    w.loadModel();
    if (!waitFor(ready, 1, 600000)) {
        std::fprintf(stderr, "kvlens_gui_bench: %s did not load in 600 s: %s\n", qPrintable(model),
                     error.isEmpty() ? "timeout" : qPrintable(error.first().at(0).toString()));
        return false;
    }
    w.modelPanel()->setPromptText(bytePrompt(tokens));
    QElapsedTimer t;
    t.start();
    std::fprintf(stderr, "prefill of %d tokens on %s...\n", tokens, qPrintable(model));
    w.runPrompt();
    if (!waitFor(shown, 1, 3600000)) {
        std::fprintf(stderr, "no selection: %s\n",
                     error.isEmpty() ? "timeout" : qPrintable(error.first().at(0).toString()));
        return false;
    }
    std::printf("capture: %d tokens in %.1f s (prefill and statistics)\n", tokens,
                t.elapsed() / 1e3);
    return true;
}

int live(const std::vector<std::string>& args) {
    const QString model =
        QString::fromStdString(argAfter(args, "--model", "random:tinyllama-1.1b:ctx=4200"));
    const int tokens = std::stoi(argAfter(args, "--tokens", "4096"));
    const int changes = std::stoi(argAfter(args, "--changes", "30"));
    QTemporaryDir dir;
    MainWindow::Options o;
    o.store = dir.filePath("store.sqlite");
    o.settings = dir.filePath("settings.ini");
    MainWindow w(o);
    w.resize(1600, 1000);
    w.show();
    if (!prepare(w, model, tokens)) return 1;
    QApplication::processEvents();
    kvlens::ui::KeptPositionsView* view = w.keptView();
    std::vector<double> total, select, delivered, canvases;
    QObject::connect(
        &w.worker(), &kvlens::ui::EngineWorker::selected, &w,
        [&](const kvlens::ui::SelectionResult& r) { select.push_back(r.seconds * 1e3); });
    for (int i = 0; i < changes; ++i) {
        // Never the panel's default (128), so that every change is a change.
        const int64_t budget = 160 + 64 * (i % 24);
        QSignalSpy shown(&w, &MainWindow::selectionShown);
        const auto funnelFrames = w.funnelView()->frameCount(),
                   attentionFrames = w.attentionView()->frameCount();
        QElapsedTimer t;
        t.start();
        w.methodsPanel()->setBudgetEntries(budget);
        if (!waitFor(shown, 1, 60000)) {
            std::fprintf(stderr, "kvlens_gui_bench: no selection 60 s after budget %lld\n",
                         static_cast<long long>(budget));
            return 1;
        }
        delivered.push_back(t.nsecsElapsed() / 1e6);
        // The view has the new selection and asked for a frame: let Qt draw it as the
        // application would (it may have done so already, while the selection was being
        // delivered), then wait for the GL work to finish.
        if (!runUntil([&] { return view->drawnLatestSelection(); },
                      "the kept-positions view after a budget change"))
            return 1;
        finishGl(view);
        total.push_back(t.nsecsElapsed() / 1e6);
        canvases.push_back(1.0 + double(w.funnelView()->frameCount() - funnelFrames) +
                           double(w.attentionView()->frameCount() - attentionFrames));
        QApplication::processEvents();
    }
    std::printf(
        "live: budget change -> kept-positions view redrawn, %d changes on %d tokens: "
        "median %.1f ms, max %.1f ms, min %.1f ms; of which SnapKV selection on the worker: median "
        "%.1f ms\n",
        changes, tokens, median(total), *std::max_element(total.begin(), total.end()),
        *std::min_element(total.begin(), total.end()), median(select));
    std::printf(
        "live: breakdown: change -> views given the selection (worker + queued delivery + panels) "
        "median %.1f ms; GL canvases drawn per change (kept, funnel, attention) median %.0f\n",
        median(delivered), median(canvases));
    return 0;
}

int pan(const std::vector<std::string>& args) {
    const QString model = QString::fromStdString(argAfter(args, "--model", "random:tiny:ctx=8300"));
    const int tokens = std::stoi(argAfter(args, "--tokens", "8192"));
    const int frames = std::stoi(argAfter(args, "--frames", "300"));
    QTemporaryDir dir;
    MainWindow::Options o;
    o.store = dir.filePath("store.sqlite");
    o.settings = dir.filePath("settings.ini");
    MainWindow w(o);
    w.resize(1600, 1000);
    w.show();
    if (!prepare(w, model, tokens)) return 1;
    QSignalSpy mapped(&w, &MainWindow::attentionShown);
    QElapsedTimer t;
    t.start();
    w.showAttention(1, 3);
    if (!waitFor(mapped, 1, 600000)) {
        std::fprintf(stderr, "kvlens_gui_bench: no attention map in 600 s\n");
        return 1;
    }
    std::printf("attention map of %d x %d built in %.1f s\n", tokens, tokens, t.elapsed() / 1e3);
    kvlens::ui::AttentionView* view = w.attentionView();
    for (bool large : {false, true}) {
        if (large) {
            // The dock pulled out and enlarged, as a user studying one map would.
            QDockWidget* dock = w.dock("attentionDock");
            dock->setFloating(true);
            dock->resize(1400, 1050);
            QApplication::processEvents();
            QTest::qWait(500);
        }
        std::printf("attention view: %d x %d logical pixels\n", view->width(), view->height());
        for (double cpp : {8.0, 4.0, 1.0}) {
            view->setView(tokens / 4.0, tokens / 4.0, cpp);
            if (!nextFrame(view, "the attention view after a zoom")) return 1;
            finishGl(view);
            QElapsedTimer clock;
            clock.start();
            std::vector<double> raster;
            for (int f = 0; f < frames; ++f) {
                view->panBy(f % 120 < 60 ? 7.0 : -7.0, 3.0 * ((f / 30) % 2 ? -1 : 1));
                if (!nextFrame(view, "the attention view while panning")) return 1;
                raster.push_back(view->lastRasterMs() + view->lastUploadMs());
            }
            finishGl(view);
            const double seconds = clock.nsecsElapsed() / 1e9;
            std::printf(
                "pan at %.0f cells/pixel: %d frames in %.2f s = %.1f frames/s "
                "(raster + upload median %.2f ms)\n",
                cpp, frames, seconds, frames / seconds, median(raster));
        }
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    QApplication app(argc, argv);
    std::setvbuf(stdout, nullptr, _IOLBF, 0);  // each figure as it is measured, also into a pipe
    std::vector<std::string> args(argv + 1, argv + argc);
    if (!args.empty() && args[0] == "live") return live(args);
    if (!args.empty() && args[0] == "pan") return pan(args);
    std::fprintf(stderr, "usage: kvlens_gui_bench live|pan [--model M] [--tokens N] ...\n");
    return 2;
}
