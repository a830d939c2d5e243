// kvlens_gui_screenshots OUTDIR [--model M] [--prompt-file F] [--niah-store S
//     [--niah-kind "snapkv 128"] [--niah-cell ROW,COLUMN]]: drives the real window
// under Xvfb (xvfb-run -a -s "-screen 0 1920x1200x24", QT_QPA_PLATFORM=xcb) through a
// session and saves a screenshot of each panel in use, for docs/gui.md and the README:
// the run with the memory panel, the attention map zoomed to tokens, the outputs after
// a decode, the sessions panel comparing two saved runs, and the kept positions zoomed;
// with --niah-store, the Needle runs panel of that store (a kvlens niah --save sweep)
// with a cell's sample opened: its needle marked in the kept positions, its answer decoded.
#include <QApplication>
#include <QDir>
#include <QElapsedTimer>
#include <QFileInfo>
#include <QDockWidget>
#include <QPixmap>
#include <QScreen>
#include <QScrollArea>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QTest>

#include <cstdio>

#include "ui/AttentionView.h"
#include "ui/KeptPositionsView.h"
#include "ui/MainWindow.h"
#include "ui/MethodsPanel.h"
#include "ui/ModelPromptPanel.h"
#include "ui/NiahPanel.h"
#include "ui/RunComparisonView.h"
#include "ui/SessionsPanel.h"

using kvlens::ui::MainWindow;

namespace {

// The window's error messages: a wait ends at the first one (a prompt over the model's
// context, a layer the model does not have) instead of running into its time-out.
QSignalSpy* g_errors = nullptr;

bool waitFor(QSignalSpy& spy, int count, int ms, const char* what) {
    QElapsedTimer clock;
    clock.start();
    while (spy.size() < count) {
        if (g_errors && !g_errors->isEmpty()) {
            std::fprintf(stderr, "kvlens_gui_screenshots: while waiting for %s the window said: %s\n", what,
                         qPrintable(g_errors->last().at(0).toString()));
            return false;
        }
        if (clock.elapsed() > ms) {
            std::fprintf(stderr, "kvlens_gui_screenshots: timed out waiting for %s\n", what);
            return false;
        }
        spy.wait(200);
    }
    return true;
}

void settle(int ms = 400) {
    QTest::qWait(ms);
    QApplication::processEvents();
}

bool shoot(QWidget& window, const QString& path) {
    settle();
    // The screen's pixels, as a person sees them (GL canvases included).
    const QPixmap shot = window.screen()->grabWindow(window.winId());
    if (!shot.save(path)) {
        std::fprintf(stderr, "kvlens_gui_screenshots: cannot write %s\n", qPrintable(path));
        return false;
    }
    std::printf("%s (%dx%d)\n", qPrintable(path), shot.width(), shot.height());
    return true;
}

// Selects a budget and waits until the views show it.
bool budget(MainWindow& w, int64_t entries) {
    if (w.shownSelection() && w.shownSelection()->params.budget == entries &&
        w.shownSelection()->params.method == w.methodsPanel()->params().method)
        return true;
    QSignalSpy shown(&w, &MainWindow::selectionShown);
    w.methodsPanel()->setBudgetEntries(entries);
    if (!waitFor(shown, 1, 60000, "the selection")) return false;
    for (int i = 0; i < 50 && w.shownSelection()->params.budget != entries; ++i) shown.wait(100);
    return true;
}

}  // namespace

int main(int argc, char** argv) {
    QApplication app(argc, argv);
    if (argc < 2) {
        std::fprintf(stderr, "usage: kvlens_gui_screenshots OUTDIR [--model M] [--prompt-file F] [--niah-store S "
                             "[--niah-kind LABEL] [--niah-cell ROW,COLUMN]]\n");
        return 2;
    }
    const QString out = argv[1];
    QString model = QString(KVLENS_SHARED_DIR) + "/models/stories260K.gguf";
    QString promptFile = QString(KVLENS_SOURCE_DIR) + "/docs/inspect/prompt.txt";
    QString niahStore, niahKind;
    int niahRow = 1, niahColumn = 1;
    for (int i = 2; i + 1 < argc; i += 2) {
        if (QString(argv[i]) == "--model") model = argv[i + 1];
        if (QString(argv[i]) == "--prompt-file") promptFile = argv[i + 1];
        if (QString(argv[i]) == "--niah-store") niahStore = argv[i + 1];
        if (QString(argv[i]) == "--niah-kind") niahKind = argv[i + 1];
        if (QString(argv[i]) == "--niah-cell") {
            const QStringList rc = QString(argv[i + 1]).split(',');
            if (rc.size() == 2) {
                niahRow = rc[0].toInt();
                niahColumn = rc[1].toInt();
            }
        }
    }
    QDir().mkpath(out);
    if (QFileInfo::exists(model)) model = QFileInfo(model).canonicalFilePath();
    QTemporaryDir dir;
    MainWindow::Options o;
    o.store = dir.filePath("store.sqlite");
    o.settings = dir.filePath("settings.ini");
    o.promptFile = promptFile;
    MainWindow w(o);
    w.resize(1800, 1100);
    w.show();
    if (!QTest::qWaitForWindowExposed(&w)) return 1;

    QSignalSpy ready(&w, &MainWindow::modelReady);
    QSignalSpy error(&w, &MainWindow::errorShown);
    g_errors = &error;
    w.modelPanel()->setModelText(model);
    w.loadModel();
    if (!waitFor(ready, 1, 600000, "the model")) return 1;
    QSignalSpy shown(&w, &MainWindow::selectionShown);
    w.runPrompt();
    if (!waitFor(shown, 1, 3600000, "the prompt")) return 1;
    if (!budget(w, 128)) return 1;
    if (w.shownSelection()->layers() < 3) {
        std::fprintf(stderr, "kvlens_gui_screenshots: the model has %lld layers; the screenshots focus layer 2\n",
                     (long long)w.shownSelection()->layers());
        return 1;
    }
    w.focusLayer(2);
    if (!budget(w, 96)) return 1;
    QSignalSpy mapped(&w, &MainWindow::attentionShown);
    w.showAttention(2, 1);
    if (!waitFor(mapped, 1, 600000, "the attention map")) return 1;
    w.dock("memoryDock")->raise();
    if (!shoot(w, out + "/main_window.png")) return 1;

    // The same budget by Expected Attention (its sinks and future enabled in the Methods
    // panel), then back to SnapKV for the rest.
    {
        kvlens::PressParams e = w.methodsPanel()->params();
        e.method = "expected";
        w.methodsPanel()->setParams(e);
        QSignalSpy shownExpected(&w, &MainWindow::selectionShown);
        w.methodsPanel()->setBudgetEntries(96);
        if (!waitFor(shownExpected, 1, 600000, "the expected attention selection")) return 1;
        if (!shoot(w, out + "/expected_attention.png")) return 1;
        // CAKE: its layer budgets, shared by the layers' attention dispersion, in the Memory panel.
        e.method = "cake";
        w.methodsPanel()->setParams(e);
        QSignalSpy shownCake(&w, &MainWindow::selectionShown);
        w.methodsPanel()->setBudgetEntries(96);
        if (!waitFor(shownCake, 1, 600000, "the CAKE selection")) return 1;
        if (!shoot(w, out + "/cake.png")) return 1;
        // Compactor with ThinK over it: half of each kept key's channels pruned, named under
        // the Memory panel's totals (the KV leaves them out; the allocation keeps them).
        e.method = "compactor";
        e.think = 0.5;
        w.methodsPanel()->setParams(e);
        QSignalSpy shownThink(&w, &MainWindow::selectionShown);
        w.methodsPanel()->setBudgetEntries(96);
        if (!waitFor(shownThink, 1, 600000, "the Compactor + ThinK selection")) return 1;
        if (!shoot(w, out + "/compactor_think.png")) return 1;
        // KVzip: the budget shared over every layer and head by the prompt's reconstruction (the
        // Memory panel's uneven bars), decoded so that the panel shows what the compressed cache
        // allocated beside the kept entries.
        e.think = 0.0;
        e.method = "kvzip";
        w.methodsPanel()->setParams(e);
        QSignalSpy shownKvzip(&w, &MainWindow::selectionShown);
        w.methodsPanel()->setBudgetEntries(96);
        if (!waitFor(shownKvzip, 1, 600000, "the KVzip selection")) return 1;
        QSignalSpy decodedKvzip(&w, &MainWindow::outputsReady);
        w.decodeOutputs();
        if (!waitFor(decodedKvzip, 1, 600000, "the KVzip decode")) return 1;
        w.dock("memoryDock")->raise();
        if (!shoot(w, out + "/kvzip.png")) return 1;
        // Finch: the question-guided chunked prefill's kept positions (one set per layer, every
        // KV head the same), decoded on its own re-rotated cache.
        e.method = "finch";
        w.methodsPanel()->setParams(e);
        QSignalSpy shownFinch(&w, &MainWindow::selectionShown);
        w.methodsPanel()->setBudgetEntries(96);
        if (!waitFor(shownFinch, 1, 600000, "the Finch selection")) return 1;
        QSignalSpy decodedFinch(&w, &MainWindow::outputsReady);
        w.decodeOutputs();
        if (!waitFor(decodedFinch, 1, 600000, "the Finch decode")) return 1;
        w.dock("outputsDock")->raise();
        if (!shoot(w, out + "/finch.png")) return 1;
        e.think = 0.0;
        e.method = "snapkv";
        w.methodsPanel()->setParams(e);
        QSignalSpy shownBack(&w, &MainWindow::selectionShown);
        w.methodsPanel()->setBudgetEntries(96);
        if (!waitFor(shownBack, 1, 600000, "the SnapKV selection")) return 1;
    }

    // Attention zoomed to token level near the end of the prompt, kept positions zoomed.
    kvlens::ui::AttentionView* att = w.attentionView();
    const double T = double(w.shownSelection()->promptLength);
    att->setView(T - 40.0, T - 28.0, 1.0 / 18.0);
    w.keptView()->setVisibleRange(T - 40.0, 40.0);
    w.dock("outputsDock")->raise();
    QSignalSpy decoded(&w, &MainWindow::outputsReady);
    w.decodeOutputs();
    if (!waitFor(decoded, 1, 600000, "the decode")) return 1;
    if (!shoot(w, out + "/zoomed_and_outputs.png")) return 1;

    // Compression during decoding: KNorm at 96 entries, cut back every 4 steps; the Outputs
    // panel draws the entries per head over the steps.
    {
        kvlens::PressParams k = w.methodsPanel()->params();
        k.method = "knorm";
        w.methodsPanel()->setParams(k);
        if (!budget(w, 96)) return 1;
        w.modelPanel()->findChild<QSpinBox*>("decodeEvery")->setValue(4);
        QSignalSpy compressed(&w, &MainWindow::outputsReady);
        w.decodeOutputs();
        if (!waitFor(compressed, 1, 600000, "the decode compressed every 4 steps")) return 1;
        if (!shoot(w, out + "/decode_compressed.png")) return 1;
        w.modelPanel()->findChild<QSpinBox*>("decodeEvery")->setValue(0);
        k.method = "snapkv";
        w.methodsPanel()->setParams(k);
        if (!budget(w, 96)) return 1;
    }

    // Two saved runs, the first pinned as the baseline, the second compared with it.
    QSignalSpy saved(&w, &MainWindow::runSaved);
    w.saveRun();
    if (!waitFor(saved, 1, 600000, "the first saved run")) return 1;
    const qint64 first = saved.first().at(0).toLongLong();
    kvlens::PressParams p = w.methodsPanel()->params();
    p.method = "pyramidkv";
    w.methodsPanel()->setParams(p);
    if (!budget(w, 64)) return 1;
    w.saveRun();
    if (!waitFor(saved, 2, 600000, "the second saved run")) return 1;
    const qint64 second = saved.at(1).at(0).toLongLong();
    w.sessionsPanel()->pinBaseline(first);
    w.sessionsPanel()->selectRun(second);
    w.dock("sessionsDock")->raise();
    // As a user would: drag the bottom area taller to see the comparison.
    w.resizeDocks({w.dock("sessionsDock")}, {760}, Qt::Vertical);
    settle();
    if (auto* scroll = qobject_cast<QScrollArea*>(w.dock("sessionsDock")->widget()))
        scroll->ensureWidgetVisible(w.sessionsPanel()->comparison(), 0, 0);
    w.keptView()->resetView();
    if (!shoot(w, out + "/sessions_compare.png")) return 1;
    if (niahStore.isEmpty()) return 0;

    // A needle sweep's store: the heatmap, and a cell's sample opened in the views.
    w.openStore(niahStore);
    kvlens::ui::NiahPanel* niah = w.niahPanel();
    if (niah->sessionNames().isEmpty()) {
        std::fprintf(stderr, "kvlens_gui_screenshots: %s has no niah runs\n", qPrintable(niahStore));
        return 1;
    }
    if (!niahKind.isEmpty()) {
        const int k = niah->kindNames().indexOf(niahKind);
        if (k < 0) {
            std::fprintf(stderr, "kvlens_gui_screenshots: no method '%s' among %s\n", qPrintable(niahKind),
                         qPrintable(niah->kindNames().join(", ")));
            return 1;
        }
        niah->showKind(k);
    }
    w.dock("niahDock")->raise();
    w.resizeDocks({w.dock("niahDock")}, {440}, Qt::Vertical);
    QSignalSpy answered(&w, &MainWindow::outputsReady);
    if (!niah->openCell(niahRow, niahColumn)) {
        std::fprintf(stderr, "kvlens_gui_screenshots: cell %d,%d has no run\n", niahRow, niahColumn);
        return 1;
    }
    if (!waitFor(answered, 1, 600000, "the needle sample's answer")) return 1;
    if (!shoot(w, out + "/niah_sample.png")) return 1;
    w.dock("outputsDock")->raise();
    return shoot(w, out + "/niah_sample_outputs.png") ? 0 : 1;
}
