#include "app/RunSaver.h"

#include <cstdio>

#include "app/CommandLine.h"
#include "app/ModelOptions.h"
#include "app/ProgressBar.h"
#include "engine/compress/Capture.h"
#include "engine/model/DType.h"
#include "core/Error.h"
#include "core/RunMetrics.h"
#include "core/Selection.h"
#include "engine/analysis/AttentionStats.h"
#include "sessions/LayerStatistics.h"
#include "sessions/RunRecorder.h"
#include "sessions/SessionStore.h"

#ifndef KVLENS_VERSION
#define KVLENS_VERSION "unknown"
#endif

namespace kvlens {

using sessions::SessionStore;


struct RunSaver::State {
    std::unique_ptr<SessionStore> store;
    std::unique_ptr<sessions::RunRecorder> recorder;
    std::string sessionName;
    sessions::ModelRecord model;
    sessions::PromptRecord prompt;
    bool begun = false;
    int64_t newTokens = 0;
    std::string device, dtype;
    int64_t threads = 0;
    double prefillSeconds = 0;
    std::vector<sessions::LayerStatistic> layerStats;
    std::vector<int64_t> saved;
};

RunSaver::RunSaver(std::unique_ptr<State> state) : state_(std::move(state)) {}
RunSaver::~RunSaver() = default;

const std::set<std::string>& RunSaver::valueFlags() {
    static const std::set<std::string> f = {"--session", "--store"};
    return f;
}

std::string RunSaver::storePath(const CommandLine& args) {
    if (args.has("--store")) {
        const std::string path = args.get("--store");
        if (path.empty()) throw Error("--store: the path is empty");
        return path;
    }
    return SessionStore::defaultPath();
}

std::unique_ptr<RunSaver> RunSaver::fromCommandLine(const CommandLine& args) {
    if (!args.has("--save")) {
        for (const char* flag : {"--session", "--store"}) {
            if (args.has(flag))
                throw Error(std::string(flag) + " goes with --save (kvlens " + args.command() +
                            " ... --save)");
        }
        return nullptr;
    }
    auto state = std::make_unique<State>();
    state->store = std::make_unique<SessionStore>(RunSaver::storePath(args), SessionStore::Access::ReadWrite);
    state->recorder = std::make_unique<sessions::RunRecorder>(*state->store);
    const std::string name = args.get("--session", "default");
    if (args.has("--session") && name.empty()) throw Error("--session: the name is empty");
    // The session is made when the first run is saved, so a run that fails
    // before (a bad prompt, a model that does not load) leaves no empty one.
    state->sessionName = name;
    return std::unique_ptr<RunSaver>(new RunSaver(std::move(state)));
}

int64_t RunSaver::saveModel(sessions::SessionStore& store, const LoadedModel& loaded, const std::string& spec) {
    sessions::ModelRecord m;
    m.spec = spec;
    m.isFile = loaded.spec.kind == ModelSpec::Kind::File;
    m.path = m.isFile ? loaded.spec.path : "";
    static_cast<ModelShape&>(m) = loaded.model->config().shape();
    sessions::RunRecorder recorder(store);
    ProgressBar bar("hashing " + m.path);  // silent when the store knows the file
    const sessions::ModelRecord described = recorder.describeFile(m, [&](double f) { bar.update(f, "SHA-256"); });
    bar.finish();
    return store.saveModel(described);
}

void RunSaver::begin(const LoadedModel& loaded, const ModelOptions& options,
                     const std::string& prompt, bool addBos, int64_t newTokens,
                     const Capture& capture) {
    State& s = *state_;
    const ModelConfig& c = loaded.model->config();
    sessions::ModelRecord m;
    m.spec = options.model;
    m.isFile = loaded.spec.kind == ModelSpec::Kind::File;
    m.path = m.isFile ? loaded.spec.path : "";
    static_cast<ModelShape&>(m) = c.shape();
    {
        ProgressBar bar("hashing " + m.path);  // silent when the store knows the file
        s.model = s.recorder->describeFile(m, [&](double f) { bar.update(f, "SHA-256"); });
        bar.finish();
    }
    s.prompt = {};
    s.prompt.text = prompt;
    s.prompt.addBos = addBos && loaded.tokenizer->addBosByDefault();  // what was prefilled
    s.prompt.tokenIds = capture.prompt();
    s.begun = true;
    s.newTokens = newTokens;
    s.device = options.device.str();
    s.dtype = dtypeName(options.dtype);
    s.threads = options.threads;
    s.prefillSeconds = capture.prefillSeconds();
    // The prompt's attention statistics: each layer's mean (head -1) and every query head.
    ProgressBar bar("attention statistics");
    const std::vector<LayerAttentionSummary> stats =
        AttentionStats::fromCapture(capture, [&](double f, const std::string& w) { bar.update(f, w); });
    bar.finish();
    s.layerStats = sessions::LayerStatistics::of(stats);
}

int64_t RunSaver::save(const PressParams& params, const Selection& selection,
                       const RunMetrics& metrics, const std::string& fullText,
                       const std::string& text) {
    State& s = *state_;
    if (!s.begun) throw std::logic_error("RunSaver::save before begin");
    sessions::RunRecord r;
    r.params = params;
    r.newTokens = s.newTokens;
    r.engineVersion = KVLENS_VERSION;
    r.device = s.device;
    r.dtype = s.dtype;
    r.threads = s.threads;
    r.prefillSeconds = s.prefillSeconds;
    r.selection = selection;
    r.metrics = metrics;
    r.layerStats = s.layerStats;
    r.fullText = fullText;
    r.text = text;
    const int64_t id = s.recorder->save(s.sessionName, s.model, s.prompt, r);
    s.saved.push_back(id);
    return id;
}

void RunSaver::report() const {
    const State& s = *state_;
    std::string ids;
    for (size_t i = 0; i < s.saved.size(); ++i) ids += (i ? "," : "") + std::to_string(s.saved[i]);
    std::fprintf(stderr, "kvlens: saved %zu run%s (id %s) to session '%s' in %s\n", s.saved.size(),
                 s.saved.size() == 1 ? "" : "s", ids.c_str(), s.sessionName.c_str(),
                 s.store->path().c_str());
}

}  // namespace kvlens
