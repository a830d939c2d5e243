// A piece of work a method needs from the model beyond the prefill, which the Capture keeps
// once made: H2O's accumulated attention (a replay of the prompt), CriticalKV's projected value
// norms, KVzip's reconstruction, Finch's chunked prefill, the non-causal attention. Each lives
// beside its press (presses/*Work.h); Capture::pendingWork and keepScoresFor ask every one in
// turn, so that a new need is a class and a line in all(), not a branch in Capture.
#pragma once

#include <ATen/ATen.h>

#include <string>
#include <utility>
#include <vector>

#include "engine/compress/Capture.h"

namespace kvlens {

struct PressParams;
class LlamaModel;

class CaptureWork {
public:
    virtual ~CaptureWork() = default;

    // What it would compute for `params`, in words for a progress bar ("KVzip's reconstruction
    // of the prompt (chunks of 2048)"); "" when `params` do not need it or `capture` has it.
    // Only for a capture made by a prefill (Capture::pendingWork asks no work otherwise).
    virtual std::string pending(const Capture& capture, const PressParams& params) const = 0;
    // Computes it on `model` (the one that made the capture) and keeps it in `capture`: all
    // layers or, on a failure or a cancel halfway, none. Under the capture's lock, only when
    // pending() is not "".
    virtual void run(const Capture& capture, LlamaModel& model, const PressParams& params,
                     const ProgressFn& progress) const = 0;
    // Whose need it is, for the error when another model is loaded ("H2O's scores need").
    virtual const char* needer() const = 0;

    // Every piece, in the order keepScoresFor runs them.
    static const std::vector<const CaptureWork*>& all();

    // What a work's or the prefill's tensors are checked with: throws when `t` [heads, ...]
    // holds a NaN or an Inf, naming the first layer and head that does (`source` "the prefill
    // produced" adds the f16 hint).
    static void requireFinite(const at::Tensor& t, int64_t layer, const char* headKind, const std::string& what,
                              const std::string& source);
    static constexpr const char* kPrefill = "the prefill produced";

protected:
    // The capture's insides, for the works (friendship is not inherited).
    static KvCache& cache(const Capture& c) { return *c.cache_; }
    static void store(const Capture& c, const std::string& name, const std::vector<at::Tensor>& perLayer) {
        c.memoStore(name, perLayer);
    }
    // Stores `entries` ((name, layer) -> tensor) at once, then drops the oldest of `kind`
    // beyond `keep` (`prefix` names this one: a set when it ends in ':').
    static void storeRecent(const Capture& c, const std::vector<std::pair<std::pair<std::string, int64_t>, at::Tensor>>& entries,
                            const std::string& kind, const std::string& prefix, size_t keep);
    static void storeH2oScores(const Capture& c, std::vector<at::Tensor> perLayer);
};

}  // namespace kvlens
