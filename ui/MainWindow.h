// The KV Lens main window: dockable panels (model & prompt, methods & budgets,
// funnel, kept positions, attention, memory, outputs, sessions, log) around the
// engine worker; menus with shortcuts; the layout and recent models kept in QSettings.
#pragma once

#include <QHash>
#include <QMainWindow>
#include <QString>
#include <QStringList>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "engine/Workbench.h"
#include "ui/EngineWorker.h"

class QDockWidget;
class QLabel;
class QPlainTextEdit;
class QProgressBar;
class QPushButton;
class QSettings;
class QSpinBox;
class QTimer;

namespace kvlens::sessions {
class SessionStore;
struct RunRecord;
struct NiahRunRecord;
struct ModelRecord;
}  // namespace kvlens::sessions

namespace kvlens::ui {

class AttentionView;
class FunnelView;
class KeptPositionsView;
class MemoryPanel;
class MethodsPanel;
class ModelPromptPanel;
class NiahPanel;
class OutputsPanel;
class SessionsPanel;

class MainWindow : public QMainWindow {
    Q_OBJECT

public:
    struct Options {
        QString model;       // loaded at start when given
        QString promptFile;  // read into the editor at start
        QString store;       // the session store (default: SessionStore::defaultPath)
        QString settings;    // an INI file for layout and recent files (default: QSettings' own)
        bool runAtStart = false;  // run the prompt as soon as the start model has loaded
    };

    // The model a start without --model loads, as the CLI picks it ($KVLENS_MODEL,
    // then models/kvlens-testbed.gguf, then the shared stories260K.gguf); empty when
    // there is none.
    static QString defaultModel();
    explicit MainWindow(const Options& options, QWidget* parent = nullptr);
    ~MainWindow() override;

    // The actions of the menus, callable from tests and scripts.
    void loadModel();
    void runPrompt();
    void decodeOutputs();
    // Decodes the current parameters (when not yet done) and saves the run to the open
    // session of the store ("default" when none is open).
    void saveRun();
    void openStore(const QString& path);
    void cancelWork();
    void focusLayer(int layer);
    void showAttention(int layer, int head);
    // Opens a stored needle run's sample (the Needle runs panel's click): loads the run's
    // model when another is loaded, makes the sample again from the task's name and seed,
    // captures it as the sweep did, shows the run's method and budget, marks the needle's
    // positions and decodes the answer. A bad task, a missing model file or filler, or a
    // tokenizer that makes another sample is one line in the status bar.
    void openNeedleRun(const sessions::NiahRunRecord& run, const sessions::ModelRecord& model);
    // Asks for a sweep's --filler file (its FNV-1a hash given); empty: cancelled. Default:
    // a file dialog. Tests replace it.
    void setFillerPrompt(std::function<QString(const QString& hash)> prompt) { fillerPrompt_ = std::move(prompt); }

    EngineWorker& worker() { return *worker_; }
    ModelPromptPanel* modelPanel() const { return modelPanel_; }
    MethodsPanel* methodsPanel() const { return methodsPanel_; }
    KeptPositionsView* keptView() const { return keptView_; }
    FunnelView* funnelView() const { return funnelView_; }
    AttentionView* attentionView() const { return attentionView_; }
    MemoryPanel* memoryPanel() const { return memoryPanel_; }
    OutputsPanel* outputsPanel() const { return outputsPanel_; }
    SessionsPanel* sessionsPanel() const { return sessionsPanel_; }
    NiahPanel* niahPanel() const { return niahPanel_; }
    QDockWidget* dock(const QString& objectName) const;

    // What the kept-positions view shows now (null before the first selection).
    std::shared_ptr<const Selection> shownSelection() const { return shownSelection_; }
    bool hasCapture() const { return capture_ != nullptr; }
    QString statusText() const;
    QStringList logLines() const;

signals:
    // A selection reached the views (after they were given it).
    void selectionShown(quint64 request);
    void promptReady();
    void modelReady();
    void outputsReady();
    void runSaved(qint64 runId);
    void attentionShown(int layer, int head);
    // An error reached the status bar and the log.
    void errorShown(const QString& message);

protected:
    void closeEvent(QCloseEvent* event) override;

private:
    void buildMenus();
    QDockWidget* addPanel(const QString& title, const QString& name, QWidget* widget,
                          Qt::DockWidgetArea area);
    void restoreLayout();
    void saveLayout();
    void rememberModel(const QString& model);

    void reportError(const QString& where, const QString& message);
    void log(const QString& line);
    void setBusy(bool busy, const QString& what);

    void requestSelection();
    // Empties the views of the previous prompt (a new model or prompt).
    void clearPromptViews(const QString& why);
    void onModelLoaded(const WorkbenchModel& model);
    void onPromptCaptured(std::shared_ptr<const WorkbenchCapture> capture);
    void onSelected(const SelectionResult& result);
    void onEvaluated(std::shared_ptr<const WorkbenchOutputs> outputs);
    void saveOutputs(const WorkbenchOutputs& outputs);
    void onRunSaved(qint64 id, const QString& session, const QString& label);
    void showStoredRun(qint64 runId);
    void updateAttentionKept();
    void startNeedleRun();
    // The capture of a needle sample reached the views: marks, checks, decode.
    void showNeedleCapture();

    std::unique_ptr<QSettings> settings_;
    std::unique_ptr<EngineWorker> worker_;
    std::shared_ptr<sessions::SessionStore> store_;

    ModelPromptPanel* modelPanel_ = nullptr;
    MethodsPanel* methodsPanel_ = nullptr;
    FunnelView* funnelView_ = nullptr;
    KeptPositionsView* keptView_ = nullptr;
    AttentionView* attentionView_ = nullptr;
    QSpinBox* attentionLayer_ = nullptr;
    QSpinBox* attentionHead_ = nullptr;
    MemoryPanel* memoryPanel_ = nullptr;
    OutputsPanel* outputsPanel_ = nullptr;
    SessionsPanel* sessionsPanel_ = nullptr;
    NiahPanel* niahPanel_ = nullptr;
    QPlainTextEdit* log_ = nullptr;
    QLabel* status_ = nullptr;
    QProgressBar* progress_ = nullptr;
    QPushButton* cancel_ = nullptr;
    QTimer* othersTimer_ = nullptr;  // debounces the other methods' selections

    std::optional<WorkbenchModel> model_;
    std::shared_ptr<const WorkbenchCapture> capture_;
    std::shared_ptr<const std::vector<std::string>> pieces_;
    std::shared_ptr<const Selection> shownSelection_;
    std::shared_ptr<const WorkbenchOutputs> outputs_;
    std::shared_ptr<const sessions::RunRecord> storedRun_;  // the stored run shown, if any
    // The parameters and decode length Save asked for, until that decode arrives.
    // The run Save asked for and is waiting to decode: its parameters, tokens and compression
    // during decoding (every N steps, 0: none).
    struct PendingSave {
        PressParams params;
        int64_t tokens = 0, decodeEvery = 0;
    };
    std::optional<PendingSave> pendingSave_;
    // Forgets the save waiting for its decode, saying why in one line (nothing when none waits).
    void dropPendingSave(const QString& why);
    // A save waiting for its model file's SHA-256; the hashes computed, by path|size|mtime.
    // The (layer, query head) of the attention map shown; -1: none.
    int shownMapLayer_ = -1, shownMapHead_ = -1;
    uint64_t lastSelectRequest_ = 0;
    // Selections requested up to this number were asked before a stored run was opened.
    uint64_t storedWatermark_ = 0;
    bool runWhenLoaded_ = false;
    // A needle run being opened: the run, its sample's spec, its parameters; waits for its
    // model's load when another was loaded, then for the capture.
    struct NeedleOpen;
    std::unique_ptr<NeedleOpen> needleOpen_;
    std::function<QString(const QString&)> fillerPrompt_;
    std::optional<std::pair<double, double>> needleZoom_;  // first position, positions
    // The prompt saved in the store for this capture, per session id.
    int focusLayer_ = 0;
};

}  // namespace kvlens::ui
