// The engine as the GUI sees it: one loaded model, one captured prompt, and what the
// views ask of them (selections, scores, attention maps, decodes), behind a header
// without LibTorch so that ui/ can include it. Not thread-safe: one worker owns it.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/PressParams.h"
#include "core/RunMetrics.h"
#include "core/Selection.h"
#include "core/AttentionSummary.h"
#include "core/ModelShape.h"
#include "engine/eval/NeedleTask.h"

namespace kvlens {

// Thrown out of long work when its cancel flag was raised.
class Cancelled : public std::runtime_error {
public:
    Cancelled() : std::runtime_error("cancelled") {}
};

struct WorkbenchModel : ModelShape {
    std::string spec;  // as given
    bool isFile = true;
    std::string path;  // for a file model
    int64_t parameters = 0;
    int64_t weightBytes = 0;      // as loaded, in the compute dtype
    int64_t kvBytesPerToken = 0;  // K and V of every layer, in the compute dtype
    std::string device, dtype;
    int threads = 0;
    // The family of the file's tokenizer.chat_template ("llama3", "chatml", ...);
    // empty when the model has none or KV Lens does not recognise it.
    std::string chatTemplate;
};

// A prompt as the GUI sends it: the text, whether BOS is asked for, and whether the
// text goes as one user turn of the model's chat template (with `system` as the
// system message when not empty; ignored without `chat`). A chat's control tokens
// are parsed; plain text is tokenized as raw text.
struct WorkbenchPrompt {
    std::string text;
    bool addBos = true;
    bool chat = false;
    std::string system;
};

// The needle task's sample a capture was made from (Workbench::captureNeedle).
struct WorkbenchNeedle {
    std::string question;
    // The question was not captured: it is fed to both caches after the compression,
    // before the answer (kvpress's query-agnostic mode, niah --question-after).
    bool questionAfter = false;
    std::vector<std::string> answers;
    std::vector<int64_t> positions;  // the needles' tokens, in the captured prompt
    int64_t sampleTokens = 0;        // the whole sample: context and question
};

struct WorkbenchCapture {
    std::string text;     // what was tokenized: the prompt, wrapped when it went as a chat
    bool addBos = true;   // as applied: asked for, and the vocabulary adds one
    std::vector<int32_t> tokenIds;
    std::vector<std::string> pieces;  // display form of every prompt token
    std::vector<LayerAttentionSummary> stats;
    double prefillSeconds = 0.0;
    int64_t captureBytes = 0;
    std::vector<int64_t> fullBytesPerLayer;  // K and V of the whole prompt (a local layer: of its window)
    // Per layer its sliding window (0: global; all 0 when the model has none or it is ignored),
    // and the first prompt position a decode step still reaches there (Capture::firstReached).
    std::vector<int64_t> slidingWindows, firstReached;
    std::optional<WorkbenchNeedle> needle;   // when made by captureNeedle
};

struct WorkbenchOutputs {
    PressParams params;
    int64_t decodeEvery = 0;  // compression during decoding every this many steps (0: none)
    Selection selection;
    RunMetrics metrics;
    std::vector<std::string> fullPieces, pieces;  // the two continuations, token by token
    std::string fullText, text;
};

class Workbench {
public:
    // Progress of long work: fraction in [0, 1] and what is being done.
    using Progress = std::function<void(double fraction, const std::string& what)>;
    // Receives rows [row0, row0 + rows) of an attention map, T values each.
    using RowSink = std::function<void(int64_t row0, int64_t rows, const float* probs)>;

    struct LoadOptions {
        std::string model;
        std::string device = "cpu";
        std::string dtype = "auto";
        int threads = 0;  // 0: all cores
        // Attend over the whole sequence whatever the model's sliding window (the CLI's
        // --sliding-window ignore); else a capture past the window is refused.
        bool ignoreSlidingWindow = false;
    };

    Workbench();
    ~Workbench();
    Workbench(const Workbench&) = delete;
    Workbench& operator=(const Workbench&) = delete;

    // Loads a model (replacing the current one and its capture only when the load
    // succeeds). Throws kvlens::Error naming the file or flag, or Cancelled.
    WorkbenchModel load(const LoadOptions& options, const Progress& progress,
                        const std::atomic<bool>* cancel);
    bool hasModel() const;
    const WorkbenchModel& model() const;

    // Display form of each token id (throws without a model).
    std::vector<std::string> pieces(const std::vector<int32_t>& ids) const;

    // The text `prompt` tokenizes as: its text, or its chat turn. Throws kvlens::Error
    // for a chat on a model without a (recognised) chat template.
    std::string promptText(const WorkbenchPrompt& prompt) const;

    // Tokens of the prompt (BOS added when asked for and the vocabulary adds one).
    int64_t countTokens(const WorkbenchPrompt& prompt) const;

    // Prefills the prompt and computes its attention statistics. Throws kvlens::Error
    // for an empty prompt, one (plus `newTokens`) over the context, or a chat the
    // model has no template for; the current capture stays when it throws.
    WorkbenchCapture capture(const WorkbenchPrompt& prompt, int64_t newTokens,
                             const Progress& progress, const std::atomic<bool>* cancel);
    // Makes the needle task's sample `spec` with the model's tokenizer (BOS when the spec
    // and the vocabulary both add one) and captures its
    // exact tokens (the whole sample, or with `questionAfter` its context, the question
    // then following the compression in every decode). Throws as capture() does, and
    // for a spec makeNeedleSample refuses.
    WorkbenchCapture captureNeedle(const NeedleSpec& spec, bool questionAfter, int64_t newTokens,
                                   const Progress& progress, const std::atomic<bool>* cancel);
    bool hasCapture() const;
    int64_t promptLength() const;

    // What `params` keeps on the capture (validated: throws kvlens::Error naming the
    // field), and how long the selection took.
    Selection select(const PressParams& params, double* seconds = nullptr) const;
    // Computes, before a method's first selection, what only it needs of the capture
    // (H2O's accumulated attention, the non-causal attention of noncausal and compactor:
    // a replay of the prompt), with progress; select() does it too, silently. Nothing for
    // the other methods, or without a capture.
    void prepareMethod(const PressParams& params, const Progress& progress) const;
    // The method's per-position score on `layer` for each selection head: what its press ranks
    // by (Press::scores, with the selection's GQA mode and what it needs from the model run
    // first): NaN where it keeps whole, empty for methods without scores. The method table's
    // rankRule says how the scores order what is kept where not simply per head.
    std::vector<std::vector<float>> scores(const PressParams& params, int64_t layer) const;
    // K and V bytes of the entries `selection` keeps, per layer, in the cache's dtype.
    std::vector<int64_t> bytesPerLayer(const Selection& selection) const;

    // One query head's causal attention over the prompt, in blocks of rows
    // (recomputing the queries the prefill did not keep).
    void attention(int64_t layer, int64_t head, const RowSink& sink, const Progress& progress,
                   const std::atomic<bool>* cancel);
    std::vector<float> attentionRegion(int64_t layer, int64_t head, int64_t row0, int64_t row1,
                                       int64_t col0, int64_t col1);

    // Decodes `newTokens` greedily with the full cache and with `params`' selection
    // (after a needle sample's question, when it was left out of the capture) and
    // measures the difference (RunMetrics).
    // With `decodeEvery` > 0 the compressed cache is compressed during decoding every that
    // many steps (DecodeCompressor: the budget in entries, the method's decode rule), and the
    // metrics' cacheEntries hold its entries per head (mean, rounded up) after each step.
    WorkbenchOutputs evaluate(const PressParams& params, int64_t newTokens, const Progress& progress,
                              const std::atomic<bool>* cancel, int64_t decodeEvery = 0);

    // Whether this LibTorch has a usable CUDA device.
    static bool cudaAvailable();
    // Bytes LibTorch's CUDA allocator holds in live tensors on the model's device; -1
    // when the model is not on a GPU (or no model is loaded).
    int64_t gpuBytesInUse() const;

private:
    struct State;
    WorkbenchCapture captureIds(const std::string& text, bool addBos, const std::vector<int32_t>& ids,
                                std::vector<int32_t> suffix, int64_t newTokens, const Progress& progress,
                                const std::atomic<bool>* cancel);
    std::unique_ptr<State> state_;
};

}  // namespace kvlens
