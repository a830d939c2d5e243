// The GUI's engine thread: owns a Workbench and runs what the window asks of it off
// the GUI thread. Requests of one kind that arrive faster than they finish are
// coalesced (only the newest waits); long work reports progress and can be cancelled;
// every result and error comes back as a signal on the GUI thread.
#pragma once

#include <QObject>
#include <QString>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "engine/Workbench.h"
#include "sessions/StoreRecords.h"

namespace kvlens::viz {
class TilePyramid;
}

namespace kvlens::ui {

// What a selection request brings back.
struct SelectionResult {
    std::shared_ptr<const Selection> selection;
    int focusLayer = 0;
    std::shared_ptr<const std::vector<std::vector<float>>> scores;  // of focusLayer; may be empty
    std::vector<int64_t> bytesPerLayer;
    int64_t gpuBytes = -1;  // LibTorch's CUDA allocator, in live tensors; -1: not on a GPU
    double seconds = 0.0;
    uint64_t request = 0;  // which select() call this answers
};

// A run to save: the records as the window has them; the worker describes a
// file model (hashing it when the store does not know it) and writes them all
// in one transaction (sessions::RunRecorder) on its own connection to `store`.
struct SaveRequest {
    QString store;
    std::string session;
    sessions::ModelRecord model;
    sessions::PromptRecord prompt;
    sessions::RunRecord run;
    QString label;  // how the window names the run; comes back with runSaved
};

using NamedSelections = std::vector<std::pair<std::string, std::shared_ptr<const Selection>>>;

class EngineWorker : public QObject {
    Q_OBJECT

public:
    explicit EngineWorker(QObject* parent = nullptr);
    ~EngineWorker() override;  // cancels running work and joins the thread

    // Each returns at once; the answer comes as a signal. A load drops the requests
    // that wait for the current capture.
    void load(const Workbench::LoadOptions& options);
    void runPrompt(const WorkbenchPrompt& prompt, int64_t newTokens);
    // A needle task's sample, made with the model's tokenizer and captured as a sweep
    // did (Workbench::captureNeedle); answered by promptCaptured like runPrompt.
    void runNeedle(const NeedleSpec& spec, bool questionAfter, int64_t newTokens);
    // Coalesced: a newer select replaces one that has not started. Returns its number.
    uint64_t select(const PressParams& params, int focusLayer);
    // `methods` (but FullKV and params' own) at the same budget and window (for "which
    // methods keep it").
    void selectOthers(const PressParams& params, const std::vector<std::string>& methods);
    void countTokens(const WorkbenchPrompt& prompt);
    void attention(int layer, int head);
    void region(int layer, int head, int64_t row0, int64_t col0, int64_t rows, int64_t cols);
    void evaluate(const PressParams& params, int64_t newTokens, int64_t decodeEvery = 0);
    // The display pieces of two token lists (a stored run's continuations).
    void pieces(qint64 tag, const std::vector<int32_t>& first, const std::vector<int32_t>& second);
    // Saves a run off the GUI thread (hashing a new model file is long and
    // cancellable). Saves queue up: none replaces another.
    void save(SaveRequest request);
    // Stops the long job that runs (load, prompt, attention, evaluate) and drops the
    // pending long ones.
    void cancel();

    // How many select requests were computed (coalesced ones are not).
    uint64_t selectionsComputed() const { return selectionsComputed_.load(); }

signals:
    void busyChanged(bool busy, const QString& what);
    void progress(const QString& what, double fraction);
    void modelLoaded(const kvlens::WorkbenchModel& model);
    void promptCaptured(std::shared_ptr<const kvlens::WorkbenchCapture> capture);
    void selected(const kvlens::ui::SelectionResult& result);
    void othersSelected(const kvlens::ui::NamedSelections& others);
    void tokensCounted(qint64 tokens, qint64 context);
    void attentionReady(std::shared_ptr<const kvlens::viz::TilePyramid> map, int layer, int head);
    void regionReady(int layer, int head, qint64 row0, qint64 col0, qint64 rows, qint64 cols,
                     std::shared_ptr<const std::vector<float>> values);
    void evaluated(std::shared_ptr<const kvlens::WorkbenchOutputs> outputs);
    void runSaved(qint64 runId, const QString& session, const QString& label);
    void piecesReady(qint64 tag, const std::vector<std::string>& first, const std::vector<std::string>& second);
    // `job` names the request ("load", "prompt", "select", ...); one line each.
    void failed(const QString& job, const QString& message);
    void cancelled(const QString& job);

private:
    struct Job {
        QString name;
        bool longRunning = false;
        std::function<void()> run;  // on the worker thread
    };
    enum Slot { Load, Prompt, Select, Count, Pieces, Others, Attention, Region, Evaluate, Save, SlotCount };

    void post(Slot slot, Job job);
    void loop();
    // Runs `f` on the GUI thread (this object's thread), unless it is gone.
    void toGui(std::function<void()> f);
    Workbench::Progress progressFor(const QString& what);
    bool selectPending();

    Workbench bench_;
    std::mutex mutex_;
    std::condition_variable wake_;
    std::optional<Job> pending_[SlotCount];
    bool stopping_ = false;
    std::atomic<bool> cancel_{false};
    std::atomic<uint64_t> selectRequests_{0};
    std::atomic<uint64_t> selectionsComputed_{0};
    std::vector<SaveRequest> saves_;  // under mutex_, drained by the Save job
    std::thread thread_;
};

}  // namespace kvlens::ui
