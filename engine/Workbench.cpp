#include "engine/Workbench.h"

#include <algorithm>

#include <ATen/Parallel.h>

#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <thread>

#include "engine/compress/Capture.h"
#include "engine/model/DType.h"
#include "core/Error.h"
#include "engine/compress/DecodeCompressor.h"
#include "engine/compress/MethodEvaluator.h"
#include "engine/hf/HfFolder.h"
#include "engine/model/ModelLoader.h"
#include "engine/analysis/AttentionMap.h"
#include "engine/analysis/AttentionStats.h"
#include "engine/compress/presses/Press.h"
#include "engine/tokenizer/ChatTemplate.h"
#include "kernels/DeviceMemory.h"

namespace kvlens {

namespace {

double now() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The engine's progress callbacks, raising Cancelled when the flag is up.
ProgressFn checked(const Workbench::Progress& progress, const std::atomic<bool>* cancel) {
    return [progress, cancel](double fraction, const std::string& what) {
        if (cancel != nullptr && cancel->load()) throw Cancelled();
        if (progress) progress(fraction, what);
    };
}

constexpr int64_t kFullQueryBytes = 256ll << 20;

int64_t parameterCount(const ModelWeights& w) {
    int64_t n = w.tokenEmbedding.numel() + w.outputNorm.numel();
    if (!w.tiedOutput) n += w.output.numel();
    for (const LayerWeights& l : w.layers) {
        for (const at::Tensor* t : {&l.attnNorm, &l.ffnNorm, &l.bqkv, &l.qNorm, &l.kNorm})
            if (t->defined()) n += t->numel();
        for (const kernels::Weight* m : {&l.wqkv, &l.wo, &l.wGateUp, &l.wDown}) n += m->numel();
    }
    return n;
}

}  // namespace

struct Workbench::State {
    LoadedModel loaded;
    bool hasModel = false;
    // The file's chat family, or why a chat cannot be sent to this model.
    std::optional<ChatTemplate::Family> chat;
    std::string noChat;
    WorkbenchModel info;
    std::shared_ptr<Capture> capture;
    // The full-cache continuation is decoded once per capture and length.
    std::unique_ptr<MethodEvaluator> evaluator;
    int64_t evaluatorTokens = 0;
    // Fed to every decode after the compressed prompt (a needle sample's question).
    std::vector<int32_t> suffix;
};

Workbench::Workbench() : state_(std::make_unique<State>()) {}
Workbench::~Workbench() = default;

bool Workbench::hasModel() const { return state_->hasModel; }
const WorkbenchModel& Workbench::model() const {
    if (!state_->hasModel) throw Error("no model is loaded");
    return state_->info;
}
bool Workbench::hasCapture() const { return state_->capture != nullptr; }
int64_t Workbench::promptLength() const {
    return state_->capture ? state_->capture->promptLength() : 0;
}

WorkbenchModel Workbench::load(const LoadOptions& options, const Progress& progress,
                               const std::atomic<bool>* cancel) {
    if (options.model.empty()) throw Error("model: no file or random:<preset> given");
    const c10::Device device = parseDevice(options.device);
    const c10::ScalarType dtype = resolveDType(parseDType(options.dtype), device);
    const int threads = options.threads > 0
                            ? options.threads
                            : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    at::set_num_threads(threads);
    LoadedModel loaded = loadModel(options.model, device, dtype, checked(progress, cancel));
    if (options.ignoreSlidingWindow) loaded.model->ignoreSlidingWindow();

    WorkbenchModel m;
    const ModelConfig& c = loaded.model->config();
    m.spec = options.model;
    m.isFile = loaded.spec.kind == ModelSpec::Kind::File;
    m.path = m.isFile ? loaded.spec.path : "";
    static_cast<ModelShape&>(m) = c.shape();
    m.parameters = parameterCount(loaded.model->weights());
    m.weightBytes = loaded.model->weights().bytes();
    m.kvBytesPerToken = c.kvBytesPerToken(static_cast<int64_t>(c10::elementSize(dtype)));
    m.device = device.str();
    m.dtype = dtypeName(dtype);
    m.threads = threads;

    std::optional<ChatTemplate::Family> chat;
    std::string noChat;
    if (!m.isFile) {
        noChat = "chat template: " + options.model +
                 " is a random model, without tokenizer.chat_template: send plain text";
    } else {
        if (!loaded.chatTemplate) {
            noChat = "chat template: " + m.path +
                     (HfFolder::isFolder(m.path) ? " has no chat_template in tokenizer_config.json"
                                                 : " has no tokenizer.chat_template") +
                     ": send plain text";
        } else {
            try {
                chat = ChatTemplate::detect(*loaded.chatTemplate, m.path);
                m.chatTemplate = ChatTemplate::name(*chat);
            } catch (const Error& e) {
                noChat = std::string("chat template: ") + e.what();
            }
        }
    }

    // Only a model that loaded replaces the current one (and its capture).
    state_->evaluator.reset();
    state_->capture.reset();
    state_->loaded = std::move(loaded);
    state_->info = m;
    state_->chat = chat;
    state_->noChat = noChat;
    state_->hasModel = true;
    return m;
}

std::string Workbench::promptText(const WorkbenchPrompt& prompt) const {
    if (!state_->hasModel) throw Error("no model is loaded");
    if (!prompt.chat) return prompt.text;
    if (!state_->chat) throw Error(state_->noChat);
    return ChatTemplate::apply(*state_->chat, prompt.system, prompt.text);
}

int64_t Workbench::countTokens(const WorkbenchPrompt& prompt) const {
    const std::string text = promptText(prompt);
    const Tokenizer& t = *state_->loaded.tokenizer;
    return static_cast<int64_t>(t.encode(text, prompt.addBos && t.addBosByDefault(), prompt.chat).size());
}

std::vector<std::string> Workbench::pieces(const std::vector<int32_t>& ids) const {
    if (!state_->hasModel) throw Error("no model is loaded");
    const Tokenizer& t = *state_->loaded.tokenizer;
    std::vector<std::string> out;
    out.reserve(ids.size());
    for (int32_t id : ids) {
        out.push_back(id >= 0 && id < t.vocabSize() ? t.piece(id) : "<" + std::to_string(id) + ">");
    }
    return out;
}

WorkbenchCapture Workbench::capture(const WorkbenchPrompt& prompt, int64_t newTokens,
                                    const Progress& progress, const std::atomic<bool>* cancel) {
    if (!state_->hasModel) throw Error("no model is loaded: open a model first");
    if (prompt.text.empty()) throw Error("prompt: the prompt is empty");
    const std::string text = promptText(prompt);
    const Tokenizer& tok = *state_->loaded.tokenizer;
    const bool addBos = prompt.addBos && tok.addBosByDefault();
    return captureIds(text, addBos, tok.encode(text, addBos, prompt.chat), {}, newTokens, progress, cancel);
}

WorkbenchCapture Workbench::captureNeedle(const NeedleSpec& spec, bool questionAfter, int64_t newTokens,
                                          const Progress& progress, const std::atomic<bool>* cancel) {
    if (!state_->hasModel) throw Error("no model is loaded: open a model first");
    NeedleSpec asked = spec;
    asked.addBos = spec.addBos && state_->loaded.tokenizer->addBosByDefault();
    const NeedleSample sample = makeNeedleSample(asked, *state_->loaded.tokenizer);
    const auto split = sample.tokens.begin() +
                       (questionAfter ? sample.contextTokens : static_cast<int64_t>(sample.tokens.size()));
    WorkbenchCapture result =
        captureIds(questionAfter ? sample.context : sample.prompt(), asked.addBos,
                   std::vector<int32_t>(sample.tokens.begin(), split), std::vector<int32_t>(split, sample.tokens.end()),
                   newTokens, progress, cancel);
    WorkbenchNeedle needle;
    needle.question = sample.question;
    needle.questionAfter = questionAfter;
    needle.answers = sample.answers;
    needle.positions = sample.needlePositions;
    needle.sampleTokens = static_cast<int64_t>(sample.tokens.size());
    result.needle = std::move(needle);
    return result;
}

WorkbenchCapture Workbench::captureIds(const std::string& text, bool addBos, const std::vector<int32_t>& ids,
                                       std::vector<int32_t> suffix, int64_t newTokens, const Progress& progress,
                                       const std::atomic<bool>* cancel) {
    const Tokenizer& tok = *state_->loaded.tokenizer;
    const int64_t context = state_->info.contextLength;
    const int64_t T = static_cast<int64_t>(ids.size());
    const int64_t after = static_cast<int64_t>(suffix.size());
    if (T == 0) throw Error("prompt: the prompt has no tokens");
    if (T + after > context) {
        throw Error("prompt: " + std::to_string(T + after) + " tokens, over the model's context of " +
                    std::to_string(context));
    }
    if (T + after + newTokens > context) {
        throw Error("new tokens: " + std::to_string(newTokens) + " do not fit after the prompt's " +
                    std::to_string(T + after) + " tokens in the model's context of " + std::to_string(context));
    }
    const ProgressFn check = checked(progress, cancel);
    // The prefill is most of the work; the statistics take the last tenth.
    // Every head's queries are kept when they fit in kFullQueryBytes, so that any
    // attention map draws at once; otherwise a map recomputes its head's on demand.
    std::vector<std::pair<int64_t, int64_t>> fullHeads;
    const WorkbenchModel& m = state_->info;
    if (m.layers * m.heads * T * m.headDim * 4 <= kFullQueryBytes) {
        for (int64_t l = 0; l < m.layers; ++l)
            for (int64_t h = 0; h < m.heads; ++h) fullHeads.emplace_back(l, h);
    }
    std::shared_ptr<Capture> capture = Capture::fromPrefill(
        *state_->loaded.model, ids, [&](double f, const std::string& w) { check(0.9 * f, "prefill: " + w); },
        fullHeads, newTokens + after);
    capture->setRepeatPrompt(RepeatPrompt::from(*state_->loaded.tokenizer));
    WorkbenchCapture result;
    result.stats = AttentionStats::fromCapture(
        *capture, [&](double f, const std::string& w) { check(0.9 + 0.1 * f, w); });
    result.text = text;
    result.addBos = addBos;  // what the prefill did
    result.tokenIds = ids;
    result.pieces.reserve(ids.size());
    for (int32_t id : ids) result.pieces.push_back(tok.piece(id));
    result.prefillSeconds = capture->prefillSeconds();
    result.captureBytes = capture->bytes();
    for (int64_t l = 0; l < capture->layers(); ++l) {
        result.fullBytesPerLayer.push_back(capture->fullCacheBytes(l));  // a local layer: its window
        result.slidingWindows.push_back(capture->slidingWindow(l));
        result.firstReached.push_back(capture->firstReached(l));
    }
    state_->evaluator.reset();
    state_->capture = std::move(capture);
    state_->suffix = std::move(suffix);
    return result;
}

void Workbench::prepareMethod(const PressParams& params, const Progress& progress) const {
    if (!state_->capture) return;
    const std::string what = state_->capture->pendingWork(params);
    state_->capture->keepScoresFor(*state_->loaded.model, params, [&](double f, const std::string& w) {
        if (progress) progress(f, what + ": " + w);
    });
}

Selection Workbench::select(const PressParams& params, double* seconds) const {
    if (!state_->capture) throw Error("no prompt has been run yet");
    const double t0 = now();
    state_->capture->keepScoresFor(*state_->loaded.model, params);
    Selection s = Press::create(params.method)->select(*state_->capture, params);
    if (seconds != nullptr) *seconds = now() - t0;
    return s;
}

std::vector<std::vector<float>> Workbench::scores(const PressParams& params, int64_t layer) const {
    if (!state_->capture) throw Error("no prompt has been run yet");
    const Capture& c = *state_->capture;
    if (layer < 0 || layer >= c.layers()) throw Error("layer " + std::to_string(layer) + " does not exist");
    params.validate(c.promptLength(), Capture::kMaxWindow);
    // The parameters the selection really has (the GQA combo of a method that reads none is
    // disabled, not reset), and what it needs from the model run first, as select() does.
    const PressParams p = Press::selectionParams(params);
    if (!c.prompt().empty()) c.keepScoresFor(*state_->loaded.model, p);
    return Press::create(p.method)->scores(c, p, layer);
}

std::vector<int64_t> Workbench::bytesPerLayer(const Selection& selection) const {
    if (!state_->capture) throw Error("no prompt has been run yet");
    const Capture& c = *state_->capture;
    std::vector<int64_t> bytes;
    for (int64_t l = 0; l < selection.layers(); ++l)
        bytes.push_back(selection.bytes(l, c.headDim(), c.keys(0).element_size()));  // ThinK's channels left out
    return bytes;
}

void Workbench::attention(int64_t layer, int64_t head, const RowSink& sink, const Progress& progress,
                          const std::atomic<bool>* cancel) {
    if (!state_->capture) throw Error("no prompt has been run yet");
    Capture& c = *state_->capture;
    if (layer < 0 || layer >= c.layers() || head < 0 || head >= c.queryHeads()) {
        throw Error("attention: layer " + std::to_string(layer) + " head " + std::to_string(head) +
                    " does not exist");
    }
    const ProgressFn check = checked(progress, cancel);
    if (!c.hasQueries(layer, head)) {
        c.keepQueries(*state_->loaded.model, {{layer, head}},
                      [&](double f, const std::string& w) { check(0.5 * f, "queries: " + w); });
    }
    AttentionMap::streamRows(c, layer, head, 256, sink,
                             [&](double f, const std::string& w) { check(0.5 + 0.5 * f, w); });
}

std::vector<float> Workbench::attentionRegion(int64_t layer, int64_t head, int64_t row0, int64_t row1,
                                              int64_t col0, int64_t col1) {
    if (!state_->capture) throw Error("no prompt has been run yet");
    Capture& c = *state_->capture;
    if (!c.hasQueries(layer, head)) c.keepQueries(*state_->loaded.model, {{layer, head}});
    return AttentionMap::region(c, layer, head, row0, row1, col0, col1);
}

WorkbenchOutputs Workbench::evaluate(const PressParams& params, int64_t newTokens,
                                     const Progress& progress, const std::atomic<bool>* cancel, int64_t decodeEvery) {
    if (!state_->capture) throw Error("no prompt has been run yet");
    const int64_t used = state_->capture->promptLength() + static_cast<int64_t>(state_->suffix.size());
    const int64_t room = state_->info.contextLength - used;
    if (newTokens < 1 || newTokens > room) {
        throw Error("decode: " + std::to_string(newTokens) + " new tokens do not fit: the prompt of " +
                    std::to_string(used) + " tokens leaves " +
                    std::to_string(room) + " of the model's context");
    }
    const ProgressFn check = checked(progress, cancel);
    WorkbenchOutputs out;
    out.params = params;
    out.decodeEvery = decodeEvery;
    // A method without a decode rule, or a ratio budget, is refused before any work, in the
    // window's words ("compress every" is the GUI's --decode-every).
    std::unique_ptr<DecodeCompressor> rule;
    if (decodeEvery > 0) {
        try {
            rule = std::make_unique<DecodeCompressor>(params, decodeEvery);
        } catch (const Error& e) {
            std::string m = e.what();
            for (size_t at; (at = m.find("--decode-every")) != std::string::npos;) m.replace(at, 14, "compress every");
            throw Error(m);
        }
    }
    double selectSeconds = 0.0;
    // What a first use still computes (a Finch cache or a KVzip reconstruction dropped since,
    // say) says so and can be cancelled, before the decode's own progress.
    // It fills the first half of the bar, the decode the rest.
    const std::string pending = state_->capture->pendingWork(params);
    const double base = pending.empty() ? 0.0 : 0.5, scale = 1.0 - base;
    if (!pending.empty()) {
        const double t0 = now();
        state_->capture->keepScoresFor(*state_->loaded.model, params,
                                       [&](double f, const std::string& w) { check(base * f, pending + ": " + w); });
        selectSeconds += now() - t0;
    }
    double selectOnly = 0.0;
    out.selection = select(params, &selectOnly);
    selectSeconds += selectOnly;
    const bool fresh = !state_->evaluator || state_->evaluatorTokens != newTokens;
    if (fresh) {
        state_->evaluator.reset();
        state_->evaluator = std::make_unique<MethodEvaluator>(
            *state_->loaded.model, state_->capture, newTokens,
            [&](double f, const std::string& w) { check(base + scale * 0.5 * f, w); }, state_->suffix);
        state_->evaluatorTokens = newTokens;
    }
    const double from = fresh ? 0.5 : 0.0, span = 1.0 - from;
    state_->evaluator->setProgress([&](double f, const std::string& w) { check(base + scale * (from + span * f), w); });
    try {
        out.metrics = rule ? state_->evaluator->evaluate(out.selection, *rule, selectSeconds)
                           : state_->evaluator->evaluate(out.selection, selectSeconds);
    } catch (...) {
        state_->evaluator->setProgress({});
        throw;
    }
    state_->evaluator->setProgress({});
    if (progress) progress(1.0, "done");
    const Tokenizer& tok = *state_->loaded.tokenizer;
    for (int32_t id : out.metrics.fullTokens) out.fullPieces.push_back(tok.piece(id));
    for (int32_t id : out.metrics.tokens) out.pieces.push_back(tok.piece(id));
    out.fullText = tok.decode(out.metrics.fullTokens);
    out.text = tok.decode(out.metrics.tokens);
    return out;
}

bool Workbench::cudaAvailable() { return at::hasCUDA(); }

int64_t Workbench::gpuBytesInUse() const {
    if (!state_->hasModel) return -1;
    const auto memory = kernels::deviceMemory(state_->loaded.model->device());
    return memory ? memory->allocated : -1;
}

}  // namespace kvlens
