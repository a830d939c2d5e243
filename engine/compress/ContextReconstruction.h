// KVzip's importance scores (Kim et al., 2025): after the prompt, the model reads a repeat
// prompt and then the prompt itself again, chunk by chunk (teacher-forced reconstruction),
// and each prompt position scores the highest attention any reconstruction query of its KV
// head's group gives it. As the paper's chunked scoring and kvpress's KVzipPress: the
// prompt after its first `sinks` positions is cut into chunks of `chunk`; the input for a
// chunk is the repeat prompt (for later chunks with the previous chunk's last 8 tokens),
// "\n", then the chunk, run after the whole prompt's KV; each of its queries (after RoPE,
// scaled by 1/sqrt(D)) takes a softmax over the sinks' keys, the chunk's keys and the input's
// own keys up to itself only, and the chunk's columns keep their maximum over the queries
// and the group. The sinks score 1 (the highest attention there is). Cost: a second run of
// about T tokens, each attending over T + its chunk (about two prefills' attention), one
// layer's KV copied at a time; kept: L x KV x T x 4 bytes.
#pragma once

#include <ATen/ATen.h>

#include <vector>

#include "engine/compress/RepeatPrompt.h"
#include "engine/model/KvCache.h"
#include "engine/model/LlamaModel.h"

namespace kvlens {

class ContextReconstruction : public ForwardObserver {
public:
    // Per layer [KV, T] fp32, T = cache.length() = prompt.size().
    static std::vector<at::Tensor> scores(LlamaModel& model, const KvCache& cache, const std::vector<int32_t>& prompt,
                                          const RepeatPrompt& repeat, int64_t sinks, int64_t chunk,
                                          const ProgressFn& progress = {});

    void onKeys(int64_t layer, const at::Tensor& keysSoFar) override;
    void onQueries(int64_t layer, const at::Tensor& q, int64_t firstPosition) override;

private:
    ContextReconstruction(const KvCache& cache, int64_t sinks);
    // The next input: the context positions [start, end) it repeats.
    void beginChunk(int64_t start, int64_t end);

    const KvCache& cache_;
    int64_t sinks_, start_ = 0, end_ = 0;
    std::vector<at::Tensor> inputKeys_;  // per layer, the input's keys so far [KV, n, D] (runAfter's view)
    std::vector<at::Tensor> scores_;     // per layer [KV, T] fp32
};

}  // namespace kvlens
