#include "ui/EngineWorker.h"

#include <QMetaObject>

#include <chrono>
#include <exception>

#include "core/Error.h"
#include "sessions/RunRecorder.h"
#include "sessions/SessionStore.h"
#include "viz/TilePyramid.h"

namespace kvlens::ui {

namespace {

// Attention maps keep level 0 within this many tiles per side: exact up to 2048
// tokens, 2x2 cells per tile up to 4096, 4x4 up to 8192 (64 MB of tiles then).
constexpr int64_t kMaxTilesPerSide = 2048;

}  // namespace

EngineWorker::EngineWorker(QObject* parent) : QObject(parent) {
    thread_ = std::thread([this] { loop(); });
}

EngineWorker::~EngineWorker() {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stopping_ = true;
        for (auto& p : pending_) p.reset();
    }
    cancel_ = true;
    wake_.notify_all();
    thread_.join();
}

void EngineWorker::toGui(std::function<void()> f) {
    QMetaObject::invokeMethod(this, std::move(f), Qt::QueuedConnection);
}

Workbench::Progress EngineWorker::progressFor(const QString& what) {
    auto last = std::make_shared<std::chrono::steady_clock::time_point>();
    return [this, what, last](double fraction, const std::string& detail) {
        const auto now = std::chrono::steady_clock::now();
        // At most 20 updates a second reach the GUI.
        if (fraction < 1.0 && now - *last < std::chrono::milliseconds(50)) return;
        *last = now;
        const QString text = what + ": " + QString::fromStdString(detail);
        toGui([this, text, fraction] { emit progress(text, fraction); });
    };
}

void EngineWorker::post(Slot slot, Job job) {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        pending_[slot] = std::move(job);
    }
    wake_.notify_one();
}

void EngineWorker::loop() {
    for (;;) {
        Job job;
        {
            std::unique_lock<std::mutex> lock(mutex_);
            int slot = -1;
            wake_.wait(lock, [&] {
                if (stopping_) return true;
                for (int s = 0; s < SlotCount; ++s) {
                    if (pending_[s]) {
                        slot = s;
                        return true;
                    }
                }
                return false;
            });
            if (stopping_) return;
            job = std::move(*pending_[slot]);
            pending_[slot].reset();
            if (job.longRunning) cancel_ = false;
        }
        const QString name = job.name;
        toGui([this, name] { emit busyChanged(true, name); });
        try {
            job.run();
        } catch (const Cancelled&) {
            toGui([this, name] { emit cancelled(name); });
        } catch (const std::exception& e) {
            const QString message = QString::fromStdString(e.what());
            toGui([this, name, message] { emit failed(name, message); });
        }
        toGui([this, name] { emit busyChanged(false, name); });
    }
}

bool EngineWorker::selectPending() {
    std::lock_guard<std::mutex> lock(mutex_);
    return pending_[Select].has_value();
}

void EngineWorker::cancel() {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        for (Slot s : {Load, Prompt, Attention, Evaluate, Save}) pending_[s].reset();
        saves_.clear();
    }
    cancel_ = true;
}

void EngineWorker::load(const Workbench::LoadOptions& options) {
    {
        // What waits for the current capture would run on none (or a new one) after the load.
        std::lock_guard<std::mutex> lock(mutex_);
        for (Slot s : {Select, Others, Attention, Region, Evaluate, Pieces}) pending_[s].reset();
    }
    post(Load, {"load", true, [this, options] {
                    const WorkbenchModel m = bench_.load(options, progressFor("loading " + QString::fromStdString(options.model)), &cancel_);
                    toGui([this, m] { emit modelLoaded(m); });
                }});
}

void EngineWorker::runPrompt(const WorkbenchPrompt& prompt, int64_t newTokens) {
    post(Prompt, {"prompt", true, [this, prompt, newTokens] {
                      auto c = std::make_shared<const WorkbenchCapture>(
                          bench_.capture(prompt, newTokens, progressFor("prompt"), &cancel_));
                      toGui([this, c] { emit promptCaptured(c); });
                  }});
}

void EngineWorker::runNeedle(const NeedleSpec& spec, bool questionAfter, int64_t newTokens) {
    post(Prompt, {"prompt", true, [this, spec, questionAfter, newTokens] {
                      auto c = std::make_shared<const WorkbenchCapture>(
                          bench_.captureNeedle(spec, questionAfter, newTokens, progressFor("prompt"), &cancel_));
                      toGui([this, c] { emit promptCaptured(c); });
                  }});
}

uint64_t EngineWorker::select(const PressParams& params, int focusLayer) {
    const uint64_t request = ++selectRequests_;
    post(Select, {"select", false, [this, params, focusLayer, request] {
                      SelectionResult r;
                      bench_.prepareMethod(params, progressFor("select"));
                      auto s = std::make_shared<Selection>(bench_.select(params, &r.seconds));
                      r.focusLayer = std::max(0, std::min(focusLayer, int(s->layers()) - 1));
                      r.scores = std::make_shared<const std::vector<std::vector<float>>>(
                          bench_.scores(params, r.focusLayer));
                      r.bytesPerLayer = bench_.bytesPerLayer(*s);
                      r.gpuBytes = bench_.gpuBytesInUse();
                      r.selection = std::move(s);
                      r.request = request;
                      ++selectionsComputed_;
                      toGui([this, r] { emit selected(r); });
                  }});
    return request;
}

void EngineWorker::selectOthers(const PressParams& params, const std::vector<std::string>& methods) {
    post(Others, {"compare methods", false, [this, params, methods] {
                      NamedSelections others;
                      for (const std::string& method : methods) {
                          if (methods::named(method).id == MethodId::Full || method == params.method) continue;
                          // A budget change waiting behind this comparison goes first; its
                          // own comparison request replaces this one.
                          if (selectPending()) return;
                          PressParams p = params;
                          p.method = method;
                          if (!p.takesScorer()) p.scorer.clear();
                          if (!p.reads(Knob::LayerWeights)) p.layerWeights.clear();
                          try {
                              bench_.prepareMethod(p, progressFor("compare methods"));
                              auto s = std::make_shared<const Selection>(bench_.select(p));
                              others.emplace_back(s->params.describe(), s);
                          } catch (const Error&) {
                              // A method these parameters do not suit (e.g. h2o without
                              // scores) is left out of the comparison.
                          }
                      }
                      toGui([this, others] { emit othersSelected(others); });
                  }});
}

void EngineWorker::countTokens(const WorkbenchPrompt& prompt) {
    post(Count, {"count tokens", false, [this, prompt] {
                     if (!bench_.hasModel()) return;
                     const qint64 n = bench_.countTokens(prompt);
                     const qint64 context = bench_.model().contextLength;
                     toGui([this, n, context] { emit tokensCounted(n, context); });
                 }});
}

void EngineWorker::attention(int layer, int head) {
    post(Attention, {"attention map", true, [this, layer, head] {
                         const int64_t T = bench_.promptLength();
                         if (T == 0) throw Error("no prompt has been run yet");
                         auto map = std::make_shared<viz::TilePyramid>(
                             T, T, viz::TilePyramid::baseTileFor(T, T, kMaxTilesPerSide));
                         bench_.attention(layer, head,
                                          [&](int64_t row0, int64_t rows, const float* probs) {
                                              map->addRows(row0, rows, probs);
                                          },
                                          progressFor(QString("attention L%1 H%2").arg(layer).arg(head)),
                                          &cancel_);
                         map->finish();
                         std::shared_ptr<const viz::TilePyramid> done = std::move(map);
                         toGui([this, done, layer, head] { emit attentionReady(done, layer, head); });
                     }});
}

void EngineWorker::region(int layer, int head, int64_t row0, int64_t col0, int64_t rows, int64_t cols) {
    post(Region, {"attention cells", false, [this, layer, head, row0, col0, rows, cols] {
                      auto v = std::make_shared<const std::vector<float>>(
                          bench_.attentionRegion(layer, head, row0, row0 + rows, col0, col0 + cols));
                      toGui([=] { emit regionReady(layer, head, row0, col0, rows, cols, v); });
                  }});
}

void EngineWorker::evaluate(const PressParams& params, int64_t newTokens, int64_t decodeEvery) {
    post(Evaluate, {"decode", true, [this, params, newTokens, decodeEvery] {
                        auto out = std::make_shared<const WorkbenchOutputs>(
                            bench_.evaluate(params, newTokens, progressFor("decode"), &cancel_, decodeEvery));
                        toGui([this, out] { emit evaluated(out); });
                    }});
}

void EngineWorker::save(SaveRequest request) {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        saves_.push_back(std::move(request));
    }
    post(Save, {"save", true, [this] {
                    for (;;) {
                        SaveRequest r;
                        {
                            std::lock_guard<std::mutex> lock(mutex_);
                            if (saves_.empty()) return;
                            r = std::move(saves_.front());
                            saves_.erase(saves_.begin());
                        }
                        try {
                            // The worker's own connection: SQLite's are not shared between threads.
                            sessions::SessionStore store(r.store.toStdString(),
                                                         sessions::SessionStore::Access::ReadWrite);
                            sessions::RunRecorder recorder(store);
                            const Workbench::Progress progress =
                                progressFor("hashing " + QString::fromStdString(r.model.path));
                            const sessions::ModelRecord model = recorder.describeFile(r.model, [&](double f) {
                                if (cancel_.load()) throw Cancelled();
                                progress(f, "SHA-256");
                            });
                            const int64_t id = recorder.save(r.session, model, r.prompt, r.run);
                            const QString session = QString::fromStdString(r.session);
                            toGui([this, id, session, label = r.label] { emit runSaved(id, session, label); });
                        } catch (const Cancelled&) {
                            std::lock_guard<std::mutex> lock(mutex_);
                            saves_.clear();
                            throw;
                        } catch (const std::exception& e) {
                            // One failed save is one line; the saves queued after it still run.
                            const QString message = QString("cannot save: ") + e.what();
                            toGui([this, message] { emit failed("save", message); });
                        }
                    }
                }});
}

void EngineWorker::pieces(qint64 tag, const std::vector<int32_t>& first, const std::vector<int32_t>& second) {
    post(Pieces, {"pieces", false, [this, tag, first, second] {
                      const std::vector<std::string> a = bench_.pieces(first), b = bench_.pieces(second);
                      toGui([this, tag, a, b] { emit piecesReady(tag, a, b); });
                  }});
}

}  // namespace kvlens::ui
