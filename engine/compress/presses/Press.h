// A KV-cache compression method: from a prefill's capture and the method's
// parameters to the positions each head keeps. Selecting never re-runs the
// prefill, so a new budget or method costs milliseconds.
#pragma once

#include <memory>
#include <string>

#include "engine/compress/Capture.h"
#include "core/PressParams.h"
#include "core/Selection.h"

namespace kvlens {

struct ModelConfig;

class Press {
public:
    virtual ~Press() = default;
    // Validates `params` against the capture (throws kvlens::Error naming the
    // flag) and returns the kept positions, ascending, per layer and head.
    Selection select(const Capture& capture, const PressParams& params) const;

    // The press for `params.method`; throws kvlens::Error for an unknown name.
    static std::unique_ptr<Press> create(const std::string& method);

    // What `fill` ranks by on `layer`: per selection head, a score per prompt position, NaN
    // where the method keeps the position whole; empty for a method that ranks nothing
    // (FullKV, StreamingLLM, Random, Finch's own prefill) or a capture that lacks what the
    // scores need (a replay not run, statistics a tensors capture has not). `params` as
    // selectionParams gives them; the capture prepared as for select (Capture::keepScoresFor).
    // Within a head a kept position scores at least every dropped one, but where the method
    // table's rankRule says otherwise (LagKV's partitions, CriticalKV's first stage, SimLayerKV).
    virtual std::vector<std::vector<float>> scores(const Capture& capture, const PressParams& params,
                                                   int64_t layer) const;
    // Throws kvlens::Error (one line) when the method cannot run on this capture's model yet:
    // its sliding windows (Finch's own prefill, finch-kvpress's re-rotation, non-causal
    // attention past a window), Gemma 2's attention soft-cap (expected attention, KVzip's and
    // the non-causal attention), Gemma 3's local RoPE base (query statistics, pre-RoPE keys);
    // select and Capture::keepScoresFor ask it before any work.
    static void requireModelSupport(const Capture& capture, const PressParams& params);
    // The same before the prefill, from the model and the prompt's length (Capture::firstReached's rule).
    static void requireModelSupport(const ModelConfig& config, int64_t promptLength, const PressParams& params);
    // `params` as the selection has them: one selection per KV head but for the methods that
    // read the GQA mode (the window votes' query-head layout).
    static PressParams selectionParams(const PressParams& params);

protected:
    // `selection` arrives with its shape filled in and `params` validated; the
    // prompt is longer than the budget (otherwise everything is kept).
    virtual void fill(const Capture& capture, const PressParams& params, int64_t budget,
                      Selection& selection) const = 0;
};

}  // namespace kvlens
