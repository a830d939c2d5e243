#include "ui/MainWindow.h"

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QComboBox>
#include <QDateTime>
#include <QDockWidget>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QKeySequence>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QRegularExpression>
#include <QScrollArea>
#include <QSettings>
#include <QSpinBox>
#include <QStatusBar>
#include <QTimer>
#include <QVBoxLayout>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/Error.h"
#include "engine/eval/NeedleTaskName.h"
#include "engine/model/ModelSpec.h"
#include "sessions/LayerStatistics.h"
#include "sessions/ModelFile.h"
#include "sessions/SessionStore.h"
#include "ui/AttentionView.h"
#include "ui/DisplayText.h"
#include "ui/FunnelView.h"
#include "ui/KeptPositionsView.h"
#include "ui/MemoryPanel.h"
#include "ui/MethodsPanel.h"
#include "ui/ModelPromptPanel.h"
#include "ui/NiahPanel.h"
#include "ui/OutputsPanel.h"
#include "ui/SessionsPanel.h"
#include "viz/TilePyramid.h"

#ifndef KVLENS_VERSION
#define KVLENS_VERSION "unknown"
#endif

namespace kvlens::ui {

namespace {

constexpr int kRecentModels = 10;
// Bumped when the docks change, so an old saved layout is not applied to new docks.
constexpr int kLayoutVersion = 2;  // 2: the Needle runs dock

int64_t nowMs() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

bool sameParams(const PressParams& a, const PressParams& b) {
    return a.method == b.method && a.budget == b.budget && a.budgetRatio == b.budgetRatio &&
           a.window == b.window && a.kernel == b.kernel && a.pooling == b.pooling && a.beta == b.beta &&
           a.alpha == b.alpha && a.gqa == b.gqa && a.schedule == b.schedule && a.sinks == b.sinks &&
           a.seed == b.seed && a.lag == b.lag && a.chunk == b.chunk && a.future == b.future &&
           a.scorer == b.scorer && a.tau1 == b.tau1 && a.tau2 == b.tau2 && a.gamma == b.gamma && a.lazy == b.lazy &&
           a.layerWeights == b.layerWeights && a.sketch == b.sketch && a.attnChunk == b.attnChunk && a.blend == b.blend &&
           a.think == b.think && a.repeatChunk == b.repeatChunk && a.finchChunk == b.finchChunk &&
           a.convention == b.convention;
}

}  // namespace

struct MainWindow::NeedleOpen {
    std::shared_ptr<const sessions::NiahRunRecord> run;
    NeedleSpec spec;
    PressParams params;
    bool waitingForModel = false;
};

MainWindow::MainWindow(const Options& options, QWidget* parent) : QMainWindow(parent) {
    setWindowTitle("KV Lens");
    setObjectName("kvlensMainWindow");
    setDockNestingEnabled(true);
    settings_ = options.settings.isEmpty()
                    ? std::make_unique<QSettings>("KV Lens", "kvlens-gui")
                    : std::make_unique<QSettings>(options.settings, QSettings::IniFormat);
    worker_ = std::make_unique<EngineWorker>();

    keptView_ = new KeptPositionsView;
    keptView_->setObjectName("keptPositions");
    keptView_->setMinimumSize(480, 260);
    setCentralWidget(keptView_);

    modelPanel_ = new ModelPromptPanel;
    methodsPanel_ = new MethodsPanel;
    funnelView_ = new FunnelView;
    funnelView_->setMinimumSize(320, 200);
    auto* funnelBox = new QWidget;
    {
        auto* layout = new QVBoxLayout(funnelBox);
        layout->setContentsMargins(2, 2, 2, 2);
        auto* statistic = new QComboBox;
        statistic->setObjectName("funnelStatistic");
        for (FunnelStatistic which : {FunnelStatistic::Positions90, FunnelStatistic::EffectivePositions,
                                      FunnelStatistic::Entropy, FunnelStatistic::SinkMass,
                                      FunnelStatistic::LocalMass}) {
            statistic->addItem(FunnelView::statisticName(which), int(which));
        }
        statistic->setToolTip("The attention statistic per layer (window queries of the prompt);\n"
                              "the method's layer budgets are drawn over it");
        connect(statistic, qOverload<int>(&QComboBox::currentIndexChanged), this, [this, statistic](int) {
            funnelView_->setStatistic(FunnelStatistic(statistic->currentData().toInt()));
        });
        layout->addWidget(statistic);
        layout->addWidget(funnelView_, 1);
    }
    auto* attentionBox = new QWidget;
    {
        auto* layout = new QVBoxLayout(attentionBox);
        layout->setContentsMargins(2, 2, 2, 2);
        auto* row = new QHBoxLayout;
        attentionLayer_ = new QSpinBox;
        attentionLayer_->setObjectName("attentionLayer");
        attentionLayer_->setPrefix("layer ");
        attentionHead_ = new QSpinBox;
        attentionHead_->setObjectName("attentionHead");
        attentionHead_->setPrefix("query head ");
        auto* show = new QPushButton("Show map");
        show->setToolTip("Compute this head's full causal attention over the prompt");
        row->addWidget(attentionLayer_);
        row->addWidget(attentionHead_);
        row->addWidget(show);
        row->addStretch(1);
        layout->addLayout(row);
        attentionView_ = new AttentionView;
        attentionView_->setMinimumSize(360, 300);
        layout->addWidget(attentionView_, 1);
        connect(show, &QPushButton::clicked, this,
                [this] { showAttention(attentionLayer_->value(), attentionHead_->value()); });
    }
    memoryPanel_ = new MemoryPanel;
    outputsPanel_ = new OutputsPanel;
    sessionsPanel_ = new SessionsPanel;
    niahPanel_ = new NiahPanel;
    log_ = new QPlainTextEdit;
    log_->setObjectName("log");
    log_->setReadOnly(true);
    log_->setMaximumBlockCount(5000);

    QDockWidget* modelDock = addPanel("Model & prompt", "modelDock", modelPanel_, Qt::LeftDockWidgetArea);
    // The methods' knobs (twenty methods' worth) scroll rather than growing the window
    // past the screen's height.
    auto* methodsScroll = new QScrollArea;
    methodsScroll->setWidget(methodsPanel_);
    methodsScroll->setWidgetResizable(true);
    methodsScroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    methodsScroll->setFrameShape(QFrame::NoFrame);
    QDockWidget* methodsDock = addPanel("Methods & budgets", "methodsDock", methodsScroll, Qt::LeftDockWidgetArea);
    QDockWidget* funnelDock = addPanel("Funnel", "funnelDock", funnelBox, Qt::RightDockWidgetArea);
    QDockWidget* attentionDock = addPanel("Attention", "attentionDock", attentionBox, Qt::RightDockWidgetArea);
    QDockWidget* memory = addPanel("Memory", "memoryDock", memoryPanel_, Qt::BottomDockWidgetArea);
    QDockWidget* outputs = addPanel("Outputs", "outputsDock", outputsPanel_, Qt::BottomDockWidgetArea);
    // The sessions panel (lists, table, comparison) scrolls rather than squeezing its strips.
    auto* sessionsScroll = new QScrollArea;
    sessionsScroll->setWidget(sessionsPanel_);
    sessionsScroll->setWidgetResizable(true);
    sessionsPanel_->setMinimumHeight(720);
    QDockWidget* sessions = addPanel("Sessions", "sessionsDock", sessionsScroll, Qt::BottomDockWidgetArea);
    QDockWidget* niahDock = addPanel("Needle runs", "niahDock", niahPanel_, Qt::BottomDockWidgetArea);
    QDockWidget* logDock = addPanel("Log", "logDock", log_, Qt::BottomDockWidgetArea);
    // First-run sizes (a saved layout replaces them).
    resizeDocks({modelDock, methodsDock}, {380, 380}, Qt::Horizontal);
    resizeDocks({funnelDock, attentionDock}, {620, 620}, Qt::Horizontal);
    resizeDocks({funnelDock, attentionDock}, {300, 560}, Qt::Vertical);
    resizeDocks({memory}, {320}, Qt::Vertical);
    tabifyDockWidget(memory, outputs);
    tabifyDockWidget(outputs, sessions);
    tabifyDockWidget(sessions, niahDock);
    tabifyDockWidget(niahDock, logDock);
    memory->raise();

    status_ = new QLabel("Open a model to begin.");
    status_->setObjectName("statusText");
    progress_ = new QProgressBar;
    progress_->setRange(0, 1000);
    progress_->setMaximumWidth(220);
    progress_->setVisible(false);
    cancel_ = new QPushButton("Cancel");
    cancel_->setVisible(false);
    statusBar()->addWidget(status_, 1);
    statusBar()->addPermanentWidget(progress_);
    statusBar()->addPermanentWidget(cancel_);
    connect(cancel_, &QPushButton::clicked, this, &MainWindow::cancelWork);

    buildMenus();
    othersTimer_ = new QTimer(this);
    othersTimer_->setSingleShot(true);
    othersTimer_->setInterval(300);
    connect(othersTimer_, &QTimer::timeout, this, [this] {
        if (!capture_) return;
        std::vector<std::string> methods;
        for (const QString& m : methodsPanel_->comparedMethods()) methods.push_back(m.toStdString());
        worker_->selectOthers(methodsPanel_->params(), methods);
    });
    connect(methodsPanel_, &MethodsPanel::comparedMethodsChanged, this, [this] {
        settings_->setValue("comparedMethods", methodsPanel_->comparedMethods());
        othersTimer_->start();
    });

    // Panels -> engine.
    connect(modelPanel_, &ModelPromptPanel::loadRequested, this, &MainWindow::loadModel);
    connect(modelPanel_, &ModelPromptPanel::runRequested, this, &MainWindow::runPrompt);
    connect(modelPanel_, &ModelPromptPanel::promptEdited, this, [this] {
        if (model_) worker_->countTokens(modelPanel_->prompt());
    });
    connect(modelPanel_, &ModelPromptPanel::browseModelRequested, this, [this] {
        const QString path = QFileDialog::getOpenFileName(
            this, "Open a GGUF model, or a Hugging Face folder's config.json", QString(),
            "Models (*.gguf config.json);;GGUF models (*.gguf);;Hugging Face folders (config.json);;All files (*)");
        if (!path.isEmpty()) {
            modelPanel_->setModelText(ModelPromptPanel::modelFromChoice(path));
            loadModel();
        }
    });
    connect(modelPanel_, &ModelPromptPanel::browseModelFolderRequested, this, [this] {
        const QString dir = QFileDialog::getExistingDirectory(this, "Open a Hugging Face model folder");
        if (!dir.isEmpty()) {
            modelPanel_->setModelText(dir);
            loadModel();
        }
    });
    connect(modelPanel_, &ModelPromptPanel::browsePromptRequested, this, [this] {
        const QString path = QFileDialog::getOpenFileName(this, "Open a prompt", QString(),
                                                          "Text (*.txt *.md);;All files (*)");
        if (path.isEmpty()) return;
        try {
            modelPanel_->openPromptFile(path);
        } catch (const Error& e) {
            reportError("prompt", QString::fromStdString(e.what()));
        }
    });
    connect(methodsPanel_, &MethodsPanel::paramsChanged, this, &MainWindow::requestSelection);
    connect(keptView_, &KeptPositionsView::layerClicked, this, &MainWindow::focusLayer);
    connect(funnelView_, &FunnelView::layerClicked, this, &MainWindow::focusLayer);
    connect(attentionView_, &AttentionView::exactRegionNeeded, this,
            [this](qint64 row0, qint64 col0, qint64 rows, qint64 cols) {
                if (shownMapLayer_ >= 0) worker_->region(shownMapLayer_, shownMapHead_, row0, col0, rows, cols);
            });
    connect(sessionsPanel_, &SessionsPanel::errorOccurred, this,
            [this](const QString& message) { reportError("sessions", message); });
    connect(sessionsPanel_, &SessionsPanel::runActivated, this, &MainWindow::showStoredRun);
    connect(niahPanel_, &NiahPanel::errorOccurred, this,
            [this](const QString& message) { reportError("niah", message); });
    connect(niahPanel_, &NiahPanel::sampleRequested, this, &MainWindow::openNeedleRun);

    // Engine -> views.
    EngineWorker* w = worker_.get();
    connect(w, &EngineWorker::busyChanged, this, &MainWindow::setBusy);
    connect(w, &EngineWorker::progress, this, [this](const QString& what, double f) {
        status_->setText(what);
        progress_->setValue(int(std::lround(f * 1000.0)));
    });
    connect(w, &EngineWorker::modelLoaded, this, &MainWindow::onModelLoaded);
    connect(w, &EngineWorker::promptCaptured, this, &MainWindow::onPromptCaptured);
    connect(w, &EngineWorker::selected, this, &MainWindow::onSelected);
    connect(w, &EngineWorker::othersSelected, this,
            [this](const NamedSelections& others) { keptView_->setOtherSelections(others); });
    connect(w, &EngineWorker::tokensCounted, this,
            [this](qint64 n, qint64 context) { modelPanel_->showTokenCount(n, context); });
    connect(w, &EngineWorker::attentionReady, this,
            [this](std::shared_ptr<const viz::TilePyramid> map, int layer, int head) {
                shownMapLayer_ = layer;
                shownMapHead_ = head;
                attentionView_->setMap(map, layer, head,
                                       QString("Attention of layer %1, query head %2").arg(layer).arg(head));
                attentionView_->setTokens(pieces_);
                updateAttentionKept();
                status_->setStyleSheet("");
                status_->setText(QString("Attention map of layer %1, query head %2: %3 x %3 (wheel: zoom, drag: pan)")
                                     .arg(layer)
                                     .arg(head)
                                     .arg(map->rows()));
                log(status_->text());
                emit attentionShown(layer, head);
            });
    connect(w, &EngineWorker::regionReady, this,
            [this](int layer, int head, qint64 row0, qint64 col0, qint64 rows, qint64 cols,
                   std::shared_ptr<const std::vector<float>> values) {
                if (layer != shownMapLayer_ || head != shownMapHead_) return;
                try {
                    attentionView_->setExactRegion(row0, col0, rows, cols, *values);
                } catch (const std::exception& e) {
                    reportError("attention cells", QString::fromStdString(e.what()));
                }
            });
    connect(w, &EngineWorker::evaluated, this, &MainWindow::onEvaluated);
    connect(w, &EngineWorker::runSaved, this, &MainWindow::onRunSaved);
    connect(w, &EngineWorker::piecesReady, this,
            [this](qint64 runId, const std::vector<std::string>& full, const std::vector<std::string>& mine) {
                if (storedRun_ && storedRun_->id == runId) {
                    outputsPanel_->setOutputs(full, mine, storedRun_->metrics,
                                              QString("run %1: %2").arg(runId).arg(DisplayText::method(storedRun_->params)));
                    // A run decoded with compression: its cache size over the steps, as when it ran.
                    outputsPanel_->setCacheEntries(storedRun_->metrics.cacheEntries, storedRun_->params.budget,
                                                   storedRun_->metrics.decodeEvery);
                }
            });
    connect(w, &EngineWorker::failed, this, [this](const QString& job, const QString& message) {
        if (job == "select") {
            // The presses name the command line's flags; here they are the panel's fields.
            QString shown = message;
            shown.replace(QRegularExpression("(^|[\\s(])--([a-z])"), "\\1\\2");
            methodsPanel_->showStatus(shown, true);
            reportError(job, shown);
            return;
        }
        if (job == "decode") pendingSave_.reset();
        if (job == "load") runWhenLoaded_ = false;
        if (job == "load" || job == "prompt") needleOpen_.reset();
        reportError(job, message);
    });
    connect(w, &EngineWorker::cancelled, this, [this](const QString& job) {
        pendingSave_.reset();
        if (job == "load") runWhenLoaded_ = false;
        if (job == "load" || job == "prompt") needleOpen_.reset();
        status_->setText(job + " cancelled; the session is as it was");
        log(job + " cancelled");
    });

    restoreLayout();
    openStore(options.store.isEmpty() ? QString::fromStdString(sessions::SessionStore::defaultPath())
                                      : options.store);
    if (!options.promptFile.isEmpty()) {
        try {
            modelPanel_->openPromptFile(options.promptFile);
        } catch (const Error& e) {
            reportError("prompt", QString::fromStdString(e.what()));
        }
    }
    if (!options.model.isEmpty()) {
        runWhenLoaded_ = options.runAtStart;
        modelPanel_->setModelText(options.model);
        loadModel();
    }
}

QString MainWindow::defaultModel() {
    try {
        return QString::fromStdString(ModelSpec::resolveDefault("", false));
    } catch (const Error&) {
        return QString();
    }
}

MainWindow::~MainWindow() = default;

QDockWidget* MainWindow::addPanel(const QString& title, const QString& name, QWidget* widget,
                                  Qt::DockWidgetArea area) {
    auto* dock = new QDockWidget(title, this);
    // In the View menu "&" would mark a shortcut letter.
    dock->toggleViewAction()->setText(QString(title).replace("&", "&&"));
    dock->setObjectName(name);
    dock->setWidget(widget);
    addDockWidget(area, dock);
    return dock;
}

QDockWidget* MainWindow::dock(const QString& objectName) const {
    return findChild<QDockWidget*>(objectName);
}

void MainWindow::buildMenus() {
    QMenu* file = menuBar()->addMenu("&File");
    QAction* open = file->addAction("&Open model...", this, [this] { emit modelPanel_->browseModelRequested(); });
    open->setShortcut(QKeySequence::Open);
    QAction* openFolder =
        file->addAction("Open model &folder...", this, [this] { emit modelPanel_->browseModelFolderRequested(); });
    openFolder->setShortcut(QKeySequence("Ctrl+Shift+F"));
    QAction* openPrompt =
        file->addAction("Open &prompt...", this, [this] { emit modelPanel_->browsePromptRequested(); });
    openPrompt->setShortcut(QKeySequence("Ctrl+Shift+O"));
    file->addAction("Open s&tore...", this, [this] {
        const QString path = QFileDialog::getSaveFileName(this, "Open or create a session store", QString(),
                                                          "KV Lens stores (*.sqlite *.db);;All files (*)",
                                                          nullptr, QFileDialog::DontConfirmOverwrite);
        if (!path.isEmpty()) openStore(path);
    });
    file->addSeparator();
    QAction* save = file->addAction("&Save run", this, &MainWindow::saveRun);
    save->setShortcut(QKeySequence::Save);
    save->setToolTip("Decode and save the current method and budget to the open session");
    file->addSeparator();
    QAction* quit = file->addAction("&Quit", this, &QWidget::close);
    quit->setShortcut(QKeySequence::Quit);

    QMenu* run = menuBar()->addMenu("&Run");
    run->addAction("&Load model", this, &MainWindow::loadModel)->setShortcut(QKeySequence("Ctrl+L"));
    run->addAction("&Run prompt", this, &MainWindow::runPrompt)->setShortcut(QKeySequence("Ctrl+R"));
    run->addAction("&Decode outputs", this, &MainWindow::decodeOutputs)->setShortcut(QKeySequence("Ctrl+D"));
    run->addAction("&Cancel", this, &MainWindow::cancelWork)->setShortcut(QKeySequence("Ctrl+."));

    QMenu* view = menuBar()->addMenu("&View");
    for (QDockWidget* d : findChildren<QDockWidget*>()) view->addAction(d->toggleViewAction());
    view->addSeparator();
    view->addAction("Next layer", this, [this] { focusLayer(focusLayer_ + 1); })
        ->setShortcut(QKeySequence("Ctrl+Down"));
    view->addAction("Previous layer", this, [this] { focusLayer(focusLayer_ - 1); })
        ->setShortcut(QKeySequence("Ctrl+Up"));

    QMenu* help = menuBar()->addMenu("&Help");
    help->addAction("&About KV Lens", this, [this] {
        QMessageBox::about(this, "About KV Lens",
                           QString("KV Lens %1: what KV-cache compression keeps and what it costs.")
                               .arg(KVLENS_VERSION));
    });
}

void MainWindow::restoreLayout() {
    const QStringList recent = settings_->value("recentModels").toStringList();
    modelPanel_->setRecentModels(recent);
    if (settings_->contains("comparedMethods"))
        methodsPanel_->setComparedMethods(settings_->value("comparedMethods").toStringList());
    if (settings_->value("layoutVersion").toInt() == kLayoutVersion) {
        restoreGeometry(settings_->value("geometry").toByteArray());
        restoreState(settings_->value("windowState").toByteArray(), kLayoutVersion);
    } else {
        resize(1600, 1000);
    }
}

void MainWindow::saveLayout() {
    settings_->setValue("layoutVersion", kLayoutVersion);
    settings_->setValue("geometry", saveGeometry());
    settings_->setValue("windowState", saveState(kLayoutVersion));
    settings_->sync();
}

void MainWindow::closeEvent(QCloseEvent* event) {
    saveLayout();
    sessionsPanel_->saveNotes();
    QMainWindow::closeEvent(event);
}

void MainWindow::rememberModel(const QString& model) {
    QStringList recent = settings_->value("recentModels").toStringList();
    recent.removeAll(model);
    recent.prepend(model);
    while (recent.size() > kRecentModels) recent.removeLast();
    settings_->setValue("recentModels", recent);
    modelPanel_->setRecentModels(recent);
}

void MainWindow::log(const QString& line) {
    log_->appendPlainText(QDateTime::currentDateTime().toString("HH:mm:ss  ") + line);
}

void MainWindow::reportError(const QString& job, const QString& message) {
    // The engine's messages name their file, flag or field already.
    status_->setText("Error: " + message);
    status_->setStyleSheet("color: #d55e00;");
    log("error (" + job + "): " + message);
    emit errorShown(message);
}

QString MainWindow::statusText() const { return status_->text(); }

QStringList MainWindow::logLines() const { return log_->toPlainText().split('\n', Qt::SkipEmptyParts); }

void MainWindow::setBusy(bool busy, const QString& what) {
    const bool longJob =
        what == "load" || what == "prompt" || what == "decode" || what == "attention map" || what == "hash";
    if (!longJob) return;
    progress_->setVisible(busy);
    cancel_->setVisible(busy);
    progress_->setValue(0);
    modelPanel_->setIdle(!busy);
    if (busy) {
        status_->setStyleSheet("");
        status_->setText(what + "...");
    }
}

void MainWindow::cancelWork() { worker_->cancel(); }

void MainWindow::openStore(const QString& path) {
    try {
        store_ = std::make_shared<sessions::SessionStore>(path.toStdString());
        sessionsPanel_->setStore(store_);
        niahPanel_->setStore(store_);
        log("session store " + path);
    } catch (const std::exception& e) {
        // The window keeps working without a store; saving says why it cannot.
        const QString message = QString::fromStdString(e.what());
        reportError("store", message.contains(path) ? message : "store " + path + ": " + message);
    }
}

void MainWindow::loadModel() {
    const Workbench::LoadOptions o = modelPanel_->loadOptions();
    if (o.model.empty()) {
        reportError("model", "no model given: choose a GGUF file or type random:<preset>");
        return;
    }
    log("loading " + QString::fromStdString(o.model));
    worker_->load(o);
}

void MainWindow::dropPendingSave(const QString& why) {
    if (!pendingSave_) return;
    pendingSave_.reset();
    reportError("save", "the save waiting for its decode was dropped: " + why + "; save again");
}

void MainWindow::clearPromptViews(const QString& why) {
    dropPendingSave("a new prompt or model replaced its capture");
    shownSelection_.reset();
    outputs_.reset();
    storedRun_.reset();
    keptView_->setSelection(nullptr, QString());
    keptView_->setMarkedPositions({}, {});
    attentionView_->setMarkedKeys({});
    needleZoom_.reset();
    funnelView_->setStatistics({}, 0);
    funnelView_->setLayerBudgets({}, QString());
    funnelView_->setSlidingWindows({});
    keptView_->setSlidingWindows({});
    memoryPanel_->setSlidingWindows({}, 0);
    attentionView_->setMap(nullptr, 0, 0, QString());
    shownMapLayer_ = shownMapHead_ = -1;
    memoryPanel_->clear(why);
    outputsPanel_->clear(why);
}

void MainWindow::onModelLoaded(const WorkbenchModel& m) {
    model_ = m;
    capture_.reset();
    clearPromptViews("Run a prompt (Ctrl+R) on the new model.");
    modelPanel_->showModel(m);
    rememberModel(QString::fromStdString(m.spec));
    attentionLayer_->setRange(0, int(m.layers) - 1);
    attentionHead_->setRange(0, int(m.heads) - 1);
    status_->setStyleSheet("");
    status_->setText(QString("Loaded %1: %2 layers. Run a prompt next.")
                         .arg(QString::fromStdString(m.name.empty() ? m.spec : m.name))
                         .arg(m.layers));
    log(status_->text());
    setWindowTitle("KV Lens - " + QString::fromStdString(m.spec));
    worker_->countTokens(modelPanel_->prompt());
    emit modelReady();
    if (needleOpen_ && needleOpen_->waitingForModel) {
        needleOpen_->waitingForModel = false;
        startNeedleRun();
        return;
    }
    if (runWhenLoaded_) {
        runWhenLoaded_ = false;
        if (!modelPanel_->promptText().isEmpty()) runPrompt();
    }
}

void MainWindow::runPrompt() {
    if (!model_) {
        reportError("prompt", "no model is loaded: open a model first");
        return;
    }
    const QString text = modelPanel_->promptText();
    if (text.isEmpty()) {
        reportError("prompt", "the prompt is empty");
        return;
    }
    needleOpen_.reset();  // the editor's text now, not a needle sample
    log(QString("running a prompt of %1 characters").arg(text.size()));
    worker_->runPrompt(modelPanel_->prompt(), modelPanel_->newTokens());
}

void MainWindow::onPromptCaptured(std::shared_ptr<const WorkbenchCapture> capture) {
    capture_ = std::move(capture);
    clearPromptViews("Decode (Ctrl+D) to compare the full-cache and compressed continuations.");
    pieces_ = std::shared_ptr<const std::vector<std::string>>(capture_, &capture_->pieces);
    const int64_t T = static_cast<int64_t>(capture_->tokenIds.size());
    methodsPanel_->setPromptLength(T);
    keptView_->setTokens(pieces_);
    funnelView_->setStatistics(capture_->stats, T);
    // A local layer's window (Phi-3, Mistral v0.1, Gemma): marked in the three views.
    funnelView_->setSlidingWindows(capture_->slidingWindows);
    keptView_->setSlidingWindows(capture_->slidingWindows);
    memoryPanel_->setSlidingWindows(capture_->slidingWindows, T);
    status_->setStyleSheet("");
    status_->setText(QString("Prompt of %1 tokens captured in %2 s (%3 tokens/s); capture holds %4.")
                         .arg(T)
                         .arg(capture_->prefillSeconds, 0, 'f', 1)
                         .arg(double(T) / std::max(1e-9, capture_->prefillSeconds), 0, 'f', 0)
                         .arg(DisplayText::bytes(capture_->captureBytes)));
    log(status_->text());
    if (capture_->needle && needleOpen_) showNeedleCapture();
    emit promptReady();
    requestSelection();
    // The focused layer's first head at once, rather than an empty panel until asked.
    showAttention(focusLayer_, 0);
}

void MainWindow::requestSelection() {
    if (!capture_) return;
    lastSelectRequest_ = worker_->select(methodsPanel_->params(), focusLayer_);
    // The other methods (for the hover's "kept by") only once the budget rests, so that
    // they do not compete with the selections of a dragged slider.
    othersTimer_->start();
}

void MainWindow::onSelected(const SelectionResult& r) {
    // A selection asked for before a stored run was opened does not replace it.
    if (r.request <= storedWatermark_) return;
    shownSelection_ = r.selection;
    const Selection& s = *r.selection;
    const QString label = DisplayText::method(s.params);
    keptView_->setSelection(r.selection, label);
    keptView_->setFocusedLayer(focusLayer_);
    if (needleZoom_ && s.promptLength == int64_t(capture_ ? capture_->tokenIds.size() : 0)) {
        keptView_->setVisibleRange(needleZoom_->first, needleZoom_->second);
        needleZoom_.reset();
    }
    // setSelection dropped the previous method's scores: a method without scores
    // (StreamingLLM, Random) shows none rather than those.
    if (r.scores && !r.scores->empty()) keptView_->setScores(r.focusLayer, r.scores);
    funnelView_->setLayerBudgets(s.layerBudgets, label);
    if (capture_) {
        memoryPanel_->setMemory(capture_->fullBytesPerLayer, r.bytesPerLayer, label);
        // Again after a stored run (which marks none) was shown.
        keptView_->setSlidingWindows(capture_->slidingWindows);
        funnelView_->setSlidingWindows(capture_->slidingWindows);
        memoryPanel_->setSlidingWindows(capture_->slidingWindows, s.promptLength);
    }
    memoryPanel_->setNote(MemoryPanel::channelsText(s, model_ ? model_->headDim : 0));
    // The last decode's allocation while it is this selection's, as a focus change reselects.
    memoryPanel_->setAllocation(outputs_ && sameParams(outputs_->params, s.params)
                                    ? MemoryPanel::allocationText(outputs_->metrics.allocatedBytes, outputs_->metrics.bytes)
                                    : QString());
    if (model_) {
        memoryPanel_->setDevice(QString::fromStdString(model_->device),
                                r.gpuBytes >= 0 ? std::optional<int64_t>(r.gpuBytes) : std::nullopt);
    }
    updateAttentionKept();
    int64_t kept = 0;
    for (int64_t b : r.bytesPerLayer) kept += b;
    int64_t full = 0;
    if (capture_)
        for (int64_t b : capture_->fullBytesPerLayer) full += b;
    methodsPanel_->showStatus(QString("%1: %2 entries kept, KV %3 of %4, selected in %5 ms")
                                  .arg(label)
                                  .arg(s.entries())
                                  .arg(DisplayText::bytes(kept), DisplayText::bytes(full))
                                  .arg(r.seconds * 1e3, 0, 'f', 1),
                              false);
    emit selectionShown(r.request);
}

void MainWindow::focusLayer(int layer) {
    if (!model_) return;
    layer = std::max(0, std::min(layer, int(model_->layers) - 1));
    focusLayer_ = layer;
    keptView_->setFocusedLayer(layer);
    funnelView_->setFocusedLayer(layer);
    attentionLayer_->setValue(layer);
    // The scores of the newly focused layer come with a fresh selection.
    if (capture_) lastSelectRequest_ = worker_->select(methodsPanel_->params(), layer);
}

void MainWindow::showAttention(int layer, int head) {
    if (!capture_) {
        reportError("attention", "no attention map: no prompt has been run yet");
        return;
    }
    attentionLayer_->setValue(layer);
    attentionHead_->setValue(head);
    worker_->attention(layer, head);
}

void MainWindow::updateAttentionKept() {
    if (!shownSelection_) return;
    const Selection& s = *shownSelection_;
    const int layer = shownMapLayer_, head = shownMapHead_;
    if (layer < 0) return;
    if (layer >= s.layers() || head >= s.queryHeads) return;
    const auto& kept = s.kept[layer][s.headOf(head)];
    attentionView_->setKept(std::vector<int32_t>(kept.begin(), kept.end()));
}

void MainWindow::decodeOutputs() {
    if (!capture_) {
        reportError("decode", "cannot decode: no prompt has been run yet");
        return;
    }
    // This decode may replace the one a save waits for (the worker keeps one queued).
    dropPendingSave("a new decode replaced it");
    worker_->evaluate(methodsPanel_->params(), modelPanel_->newTokens(), modelPanel_->decodeEvery());
}

void MainWindow::onEvaluated(std::shared_ptr<const WorkbenchOutputs> outputs) {
    outputs_ = std::move(outputs);
    const WorkbenchOutputs& o = *outputs_;
    outputsPanel_->setOutputs(o.fullPieces, o.pieces, o.metrics, DisplayText::method(o.params));
    outputsPanel_->setCacheEntries(o.metrics.cacheEntries, o.params.budget, o.decodeEvery);
    // Shown under the selection it belongs to (one asked for since, or a stored run, has its own).
    memoryPanel_->setAllocation(shownSelection_ && sameParams(shownSelection_->params, o.params)
                                    ? MemoryPanel::allocationText(o.metrics.allocatedBytes, o.metrics.bytes)
                                    : QString());
    status_->setStyleSheet("");
    status_->setText(QString("Decoded %1 tokens: agreement %2, mean KL %3")
                         .arg(o.metrics.tokens.size())
                         .arg(DisplayText::percent(o.metrics.tokenAgreement),
                              DisplayText::real(o.metrics.meanKl)));
    log(status_->text());
    emit outputsReady();
    // Saved only when this is the decode that Save asked for.
    if (pendingSave_ && o.decodeEvery == pendingSave_->decodeEvery && sameParams(pendingSave_->params, o.params) &&
        int64_t(o.metrics.tokens.size()) == pendingSave_->tokens) {
        pendingSave_.reset();
        saveOutputs(o);
    }
}

void MainWindow::saveRun() {
    if (!capture_) {
        reportError("save", "cannot save: no prompt has been run yet");
        return;
    }
    if (!store_) {
        reportError("save", "cannot save: no session store is open (File > Open store)");
        return;
    }
    if (capture_->needle && capture_->needle->questionAfter) {
        // A run record has no place for a question fed after the compression: saved, it
        // would pair the context alone with answers that read the question.
        reportError("save", "cannot save a question-after needle sample as a run (its question follows the "
                            "compression); its measurements are in the niah session it came from");
        return;
    }
    const PressParams p = methodsPanel_->params();
    const int64_t every = modelPanel_->decodeEvery();
    if (outputs_ && outputs_->decodeEvery == every && sameParams(outputs_->params, p) &&
        int64_t(outputs_->metrics.tokens.size()) == modelPanel_->newTokens()) {
        saveOutputs(*outputs_);
        return;
    }
    pendingSave_ = PendingSave{p, modelPanel_->newTokens(), every};
    worker_->evaluate(p, modelPanel_->newTokens(), every);
}

void MainWindow::saveOutputs(const WorkbenchOutputs& o) {
    if (!store_ || !capture_ || !model_) return;
    const WorkbenchModel& m = *model_;
    SaveRequest r;
    r.store = QString::fromStdString(store_->path());
    QString name = sessionsPanel_->currentSession();
    r.session = name.isEmpty() ? "default" : name.toStdString();
    r.model.spec = m.spec;
    r.model.isFile = m.isFile;
    r.model.path = m.isFile ? m.path : "";
    static_cast<ModelShape&>(r.model) = m;  // the shape the engine gave, as RunSaver records it
    r.prompt.text = capture_->text;
    r.prompt.addBos = capture_->addBos;  // as the prefill applied it
    r.prompt.tokenIds = capture_->tokenIds;
    r.run.createdMs = nowMs();
    r.run.params = o.params;
    r.run.newTokens = int64_t(o.metrics.tokens.size());
    r.run.engineVersion = KVLENS_VERSION;
    r.run.device = m.device;
    r.run.dtype = m.dtype;
    r.run.threads = m.threads;
    r.run.prefillSeconds = capture_->prefillSeconds;
    r.run.selection = o.selection;
    r.run.metrics = o.metrics;
    r.run.layerStats = sessions::LayerStatistics::of(capture_->stats);
    r.run.fullText = o.fullText;
    r.run.text = o.text;
    // What is saved is fixed here, whatever arrives meanwhile; the worker hashes
    // a new model file and writes, off the GUI thread.
    r.label = DisplayText::method(o.params);
    worker_->save(std::move(r));
}

void MainWindow::onRunSaved(qint64 id, const QString& session, const QString& label) {
    if (sessionsPanel_->currentSession() != session) sessionsPanel_->openSession(session);
    sessionsPanel_->refresh();
    status_->setStyleSheet("");
    status_->setText(QString("Saved run %1 (%2) to session '%3'").arg(id).arg(label, session));
    log(status_->text());
    emit runSaved(id);
}

void MainWindow::openNeedleRun(const sessions::NiahRunRecord& run, const sessions::ModelRecord& model) {
    auto open = std::make_unique<NeedleOpen>();
    open->run = std::make_shared<const sessions::NiahRunRecord>(run);
    const QString what = QString("niah run %1").arg(run.id);
    try {
        const NeedleTaskName task = NeedleTaskName::parse(run.task);
        std::string filler;
        if (!task.fillerHash.empty()) {
            const QString hash = QString::fromStdString(task.fillerHash);
            const QString path =
                fillerPrompt_ ? fillerPrompt_(hash)
                              : QFileDialog::getOpenFileName(
                                    this, "The sweep's --filler file (FNV-1a " + hash + ")", QString(),
                                    "Text (*.txt *.md);;All files (*)");
            if (path.isEmpty()) {
                status_->setStyleSheet("");
                status_->setText(what + ": not opened (its sweep's --filler file is needed)");
                return;
            }
            std::ifstream in(path.toStdString(), std::ios::binary);
            std::ostringstream text;
            text << in.rdbuf();
            if (!in && !in.eof()) throw Error(path.toStdString() + ": cannot read the filler file");
            filler = text.str();
            if (filler.empty()) throw Error(path.toStdString() + ": the filler file is empty");
        }
        // The vocabulary's own BOS default is applied by the engine (Workbench::captureNeedle).
        open->spec = task.sampleSpec(run.taskSeed, run.length, run.depth, run.sample, filler, true);
        open->params = PressParams::fromDescription(run.params, what.toStdString() + " params");
    } catch (const std::exception& e) {
        reportError("niah", what + ": " + QString::fromStdString(e.what()));
        return;
    }
    // The sweep's model: the loaded one, or its file (a random preset by its spec).
    const std::string wanted = model.isFile ? model.path : model.spec;
    const bool loaded = model_ && (model.isFile ? model_->isFile && std::filesystem::path(model_->path) ==
                                                                        std::filesystem::path(model.path)
                                                : model_->spec == model.spec);
    needleOpen_ = std::move(open);
    if (loaded) {
        startNeedleRun();
        return;
    }
    if (model.isFile && !std::filesystem::exists(model.path)) {
        needleOpen_.reset();
        reportError("niah", what + ": its model " + QString::fromStdString(model.path) +
                                " is not there (moved or deleted?): open it and click the cell again");
        return;
    }
    needleOpen_->waitingForModel = true;
    log(what + ": loading its model " + QString::fromStdString(wanted));
    modelPanel_->setModelText(QString::fromStdString(wanted));
    loadModel();
}

void MainWindow::startNeedleRun() {
    if (!needleOpen_) return;
    const sessions::NiahRunRecord& run = *needleOpen_->run;
    methodsPanel_->setParams(needleOpen_->params);
    modelPanel_->setNewTokens(run.newTokens);
    modelPanel_->setAddBos(needleOpen_->spec.addBos);
    modelPanel_->setChat(false, QString());
    log(QString("niah run %1: sample %2 of task %3 at %4 tokens, depth %5%, question %6")
            .arg(run.id)
            .arg(run.sample)
            .arg(QString::fromStdString(run.task))
            .arg(run.length)
            .arg(run.depth)
            .arg(run.questionAfter ? "after the compression" : "inside"));
    worker_->runNeedle(needleOpen_->spec, run.questionAfter, run.newTokens);
}

void MainWindow::showNeedleCapture() {
    const WorkbenchNeedle& needle = *capture_->needle;
    const sessions::NiahRunRecord& run = *needleOpen_->run;
    // The editor shows what was captured (the question too, when it follows the compression).
    modelPanel_->setPromptText(QString::fromStdString(capture_->text) +
                               (needle.questionAfter ? QString::fromStdString(needle.question) : QString()));
    keptView_->setMarkedPositions(needle.positions, "needle");
    attentionView_->setMarkedKeys(needle.positions);
    if (!needle.positions.empty()) {
        // The focused map around the needle once the selection arrives (the overview
        // shows the whole prompt).
        const double a = double(needle.positions.front()), b = double(needle.positions.back()) + 1.0;
        const double span = std::max(64.0, 4.0 * (b - a));
        needleZoom_ = std::make_pair((a + b - span) / 2.0, span);
    }
    QStringList expected;
    for (const std::string& e : run.expected) expected << QString::fromStdString(e);
    const std::vector<int64_t> stored(run.needlePositions.begin(), run.needlePositions.end());
    QString line = QString("niah run %1: %2, sample %3, %4 tokens, needle at %5% (%6 tokens), expected %7; "
                           "the sweep answered '%8'")
                       .arg(run.id)
                       .arg(DisplayText::method(needleOpen_->params))
                       .arg(run.sample)
                       .arg(needle.sampleTokens)
                       .arg(run.depth)
                       .arg(needle.positions.size())
                       .arg(expected.join(", "), QString::fromStdString(run.answer).replace('\n', "\\n"));
    if (needle.sampleTokens != run.tokens || needle.positions != stored) {
        // Another tokenizer (or a changed task generator) made another prompt.
        line = QString("niah run %1: this model makes another sample (%2 tokens, needle at %3) than the sweep's "
                       "(%4 tokens, needle at %5): the views show the new one")
                   .arg(run.id)
                   .arg(needle.sampleTokens)
                   .arg(needle.positions.empty() ? QString("-") : QString::number(needle.positions.front()))
                   .arg(run.tokens)
                   .arg(stored.empty() ? QString("-") : QString::number(stored.front()));
        reportError("niah", line);
    } else {
        status_->setStyleSheet("");
        status_->setText(line);
        log(line);
    }
    const PressParams params = needleOpen_->params;
    const int64_t n = run.newTokens;
    needleOpen_.reset();
    // The answer on the compressed cache beside the full cache's, as the sweep measured it.
    dropPendingSave("a needle sample's decode replaced it");
    worker_->evaluate(params, n);
}

void MainWindow::showStoredRun(qint64 runId) {
    if (!store_) return;
    try {
        const sessions::RunRecord run = store_->run(runId);
        storedWatermark_ = lastSelectRequest_;
        auto selection = std::make_shared<const Selection>(run.selection);
        shownSelection_ = selection;
        const QString label = QString("run %1: %2").arg(runId).arg(DisplayText::method(run.params));
        keptView_->setSelection(selection, label);
        funnelView_->setLayerBudgets(run.selection.layerBudgets, label);
        // The store does not record the model's sliding windows: none marked for a stored run.
        keptView_->setSlidingWindows({});
        funnelView_->setSlidingWindows({});
        memoryPanel_->setSlidingWindows({}, 0);
        methodsPanel_->setParams(run.params);
        std::vector<int64_t> full(run.metrics.bytesPerLayer.size(), 0);
        if (run.metrics.bytes > 0 && !run.metrics.bytesPerLayer.empty()) {
            for (size_t l = 0; l < full.size(); ++l)
                full[l] = int64_t(std::llround(double(run.metrics.fullBytes) / double(full.size())));
            memoryPanel_->setMemory(full, run.metrics.bytesPerLayer, label);
        }
        memoryPanel_->setNote(MemoryPanel::channelsText(run.selection, 0));  // the run's model may not be loaded
        memoryPanel_->setAllocation(run.status == "complete"
                                        ? MemoryPanel::allocationText(run.metrics.allocatedBytes, run.metrics.bytes)
                                        : QString());
        // The continuations token by token need the tokenizer, on the engine thread.
        storedRun_ = std::make_shared<const sessions::RunRecord>(run);
        if (model_) {
            worker_->pieces(runId, run.metrics.fullTokens, run.metrics.tokens);
        } else {
            outputsPanel_->clear("Load the run's model to see its continuations token by token:\n" +
                                 QString::fromStdString(run.text));
        }
        status_->setStyleSheet("");
        status_->setText(QString("Showing stored %1 (%2 entries kept)").arg(label).arg(run.selection.entries()));
        log(status_->text());
        emit selectionShown(0);
    } catch (const std::exception& e) {
        reportError("sessions", QString::fromStdString(e.what()));
    }
}

}  // namespace kvlens::ui
