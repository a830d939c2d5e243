// Finch (Corallo & Papotti, TACL 2024): the prompt's context, all but its last `window`
// tokens (the question, the paper's "prompt"), is prefilled in chunks of `chunk` tokens, each
// followed by the question, over the cache kept so far. After each chunk every layer keeps
// the cache and chunk positions its question attends to most: the softmax (fp32, 1/sqrt(D),
// causal) of each question query over all keys, summed over the layer's query heads, each
// question row p (1-based) weighted by its count of nonzero entries c + m + p over m + c
// (the paper's normalisation against positional bias), summed over the rows. It keeps
// floor(k x (context positions read so far) / n) of them (k = budget - window, n = context
// length: the paper's r = m / sigma + c, with the final step at exactly k), ties to the
// lower position, and drops the question's own entries until the last chunk, where they
// stay. Kept entries move to positions 0, 1, ... in text order, their keys re-rotated by
// RoPE (the authors' code and kvpress keep text order; the paper's worked example orders by
// relevance), so the next chunk starts right after them and decoding at the budget. The
// re-rotation starts from an fp32 copy of each kept key, so a bf16 key is rounded once
// however often it moves.
// One set of positions per layer serves every KV head (the paper sums over heads).
// Cost: a prefill of the context whose attention spans at most k + chunk + window keys,
// plus the question once per chunk; kept: the compressed cache (L x KV x B x D x 2 x b).
#pragma once

#include <cstdint>
#include <vector>

#include "engine/compress/PrefilledCache.h"
#include "engine/model/LlamaModel.h"

namespace kvlens {

class FinchPrefill : public ForwardObserver {
public:
    // For prompt length T > budget > window >= 1 and chunk >= 1; throws kvlens::Error naming
    // the flag otherwise.
    static PrefilledCache run(LlamaModel& model, const std::vector<int32_t>& prompt, int64_t budget, int64_t window,
                              int64_t chunk, const ProgressFn& progress = {});
    // Context entries kept once the first `read` of `contextLength` context positions are in.
    static int64_t keptAfter(int64_t contextLength, int64_t contextBudget, int64_t read);

    void onQueries(int64_t layer, const at::Tensor& q, int64_t firstPosition) override;

private:
    FinchPrefill(int64_t layers, int64_t window) : questionQueries_(layers), window_(window) {}
    // The question's queries of this step, per layer [window, H, D] fp32, its first row at
    // position questionStart_.
    std::vector<at::Tensor> questionQueries_;
    int64_t window_, questionStart_ = 0;
};

}  // namespace kvlens
