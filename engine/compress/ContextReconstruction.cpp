#include "engine/compress/ContextReconstruction.h"

#include <c10/core/InferenceMode.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "core/Error.h"

namespace kvlens {

ContextReconstruction::ContextReconstruction(const KvCache& cache, int64_t sinks)
    : cache_(cache), sinks_(sinks), inputKeys_(cache.layers()), scores_(cache.layers()) {}

void ContextReconstruction::beginChunk(int64_t start, int64_t end) {
    start_ = start;
    end_ = end;
    for (at::Tensor& k : inputKeys_) k = at::Tensor();
}

void ContextReconstruction::onKeys(int64_t layer, const at::Tensor& keysSoFar) { inputKeys_[layer] = keysSoFar; }

void ContextReconstruction::onQueries(int64_t layer, const at::Tensor& q, int64_t p0) {
    const int64_t T = cache_.length(), m = q.size(0), H = q.size(1), D = q.size(2);
    const int64_t KV = cache_.keys(layer).size(0), G = H / KV, C = end_ - start_, S = sinks_;
    const int64_t i0 = p0 - T;  // the input's index of q's first row
    const at::Tensor own = inputKeys_[layer];  // [KV, i0 + m, D]: heard just before
    const at::Tensor context = cache_.keys(layer);
    const at::Tensor keys = at::cat({context.narrow(1, 0, S).to(at::kFloat), context.narrow(1, start_, C).to(at::kFloat),
                                     own.narrow(1, 0, i0 + m).to(at::kFloat)},
                                    1);  // [KV, S + C + i0 + m, D]
    const int64_t n = keys.size(1);
    const at::Tensor keysT = keys.transpose(1, 2);
    if (!scores_[layer].defined()) {
        scores_[layer] = at::zeros({KV, T}, keys.options());
        scores_[layer].narrow(1, 0, S).fill_(1.0);
    }
    at::Tensor best = scores_[layer].narrow(1, start_, C);
    const double scale = 1.0 / std::sqrt(double(D));
    // Rows at a time so that the probabilities held stay near 32 MB.
    const int64_t rows = std::max<int64_t>(1, (int64_t(8) << 20) / std::max<int64_t>(1, H * n));
    const at::Tensor qf = q.to(at::kFloat);
    for (int64_t r0 = 0; r0 < m; r0 += rows) {
        const int64_t rb = std::min(rows, m - r0);
        // Query head h reads KV head h / G: [rb, H, D] -> [KV, G * rb, D].
        const at::Tensor qs = qf.narrow(0, r0, rb).permute({1, 0, 2}).reshape({KV, G * rb, D});
        at::Tensor logits = at::bmm(qs, keysT).mul_(scale).view({KV, G, rb, n});
        // Input key j (column S + C + j) is seen by input query i0 + r0 + r only when j <= it.
        const at::Tensor row = at::arange(i0 + r0, i0 + r0 + rb, keys.options().dtype(at::kLong)).view({rb, 1});
        const at::Tensor col = at::arange(0, n - S - C, keys.options().dtype(at::kLong)).view({1, n - S - C});
        logits.narrow(3, S + C, n - S - C).masked_fill_(col > row, -std::numeric_limits<float>::infinity());
        const at::Tensor prob = at::softmax(logits, -1).narrow(3, S, C);  // [KV, G, rb, C]
        best.copy_(at::maximum(best, prob.amax({1, 2})));
    }
}

std::vector<at::Tensor> ContextReconstruction::scores(LlamaModel& model, const KvCache& cache,
                                                      const std::vector<int32_t>& prompt, const RepeatPrompt& repeat,
                                                      int64_t sinks, int64_t chunk, const ProgressFn& progress) {
    const int64_t T = static_cast<int64_t>(prompt.size());
    if (cache.length() != T) throw Error("KVzip's reconstruction needs the KV of exactly the prompt's tokens");
    if (repeat.empty()) throw Error("KVzip's reconstruction needs its repeat prompt in the model's tokens");
    if (chunk < 1) throw Error("--repeat-chunk " + std::to_string(chunk) + " must be at least 1");
    if (sinks < 0 || sinks >= T) throw Error("--sinks " + std::to_string(sinks) + " leaves nothing of the prompt to repeat");
    c10::InferenceMode guard;
    ContextReconstruction observer(cache, sinks);
    const int64_t chunks = (T - sinks + chunk - 1) / chunk;
    for (int64_t c = 0; c < chunks; ++c) {
        const int64_t start = sinks + c * chunk, end = std::min(T, start + chunk);
        std::vector<int32_t> input;
        if (c == 0) {
            input = repeat.first;
        } else {
            input = repeat.later;
            const int64_t carried = std::min<int64_t>(RepeatPrompt::kCarried, chunk);
            input.insert(input.end(), prompt.begin() + (start - carried), prompt.begin() + start);
        }
        input.insert(input.end(), repeat.suffix.begin(), repeat.suffix.end());
        input.insert(input.end(), prompt.begin() + start, prompt.begin() + end);
        // The repeat runs at positions T and on: a model with a sliding window never gets here
        // (Press::requireModelSupport refuses KVzip on it before the capture's work).
        observer.beginChunk(start, end);
        ProgressFn sub;
        if (progress) {
            sub = [&, c](double f, const std::string& what) {
                progress((double(c) + f) / double(chunks),
                         "reconstruction " + std::to_string(c + 1) + "/" + std::to_string(chunks) + ", " + what);
            };
        }
        model.runAfter(input, cache, observer, sub);
    }
    return observer.scores_;
}

}  // namespace kvlens
