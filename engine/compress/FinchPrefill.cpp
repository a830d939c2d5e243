#include "engine/compress/FinchPrefill.h"

#include <c10/core/InferenceMode.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>

#include "core/Error.h"
#include "kernels/Rope.h"

namespace kvlens {
namespace {

// The layer's question attention over the first `ranked` keys, summed over query heads and
// weighted rows (FinchPrefill.h), in double: [ranked].
std::vector<double> relevance(const at::Tensor& q, const at::Tensor& keys, int64_t ranked) {
    const int64_t W = q.size(0), H = q.size(1), D = q.size(2), KV = keys.size(0), N = keys.size(1), G = H / KV;
    const at::Tensor kf = keys.to(at::kFloat);
    const double scale = 1.0 / std::sqrt(double(D));
    // Row j sits at position N - W + j and sees keys 0 .. N - W + j.
    const at::Tensor row = at::arange(N - W, N, kf.options().dtype(at::kLong)).view({W, 1});
    const at::Tensor col = at::arange(0, N, kf.options().dtype(at::kLong)).view({1, N});
    const at::Tensor future = (col > row).view({1, W, N});
    // Row j's weight: its nonzero entries (ranked + j + 1) over the ranked span's length.
    const at::Tensor weight =
        (at::arange(1, W + 1, kf.options().dtype(at::kDouble)).add_(double(ranked)).div_(double(ranked))).view({1, W, 1});
    at::Tensor sum = at::zeros({ranked}, kf.options().dtype(at::kDouble));
    for (int64_t kv = 0; kv < KV; ++kv) {
        const at::Tensor qs = q.narrow(1, kv * G, G).permute({1, 0, 2}).to(at::kFloat);  // [G, W, D]
        at::Tensor logits = at::matmul(qs, kf[kv].t()).mul_(scale);                      // [G, W, N]
        logits.masked_fill_(future, -std::numeric_limits<float>::infinity());
        const at::Tensor prob = at::softmax(logits, -1).narrow(2, 0, ranked).to(at::kDouble);
        sum.add_((prob * weight).sum(at::IntArrayRef{0, 1}));
    }
    sum = sum.to(at::kCPU).contiguous();
    return std::vector<double>(sum.data_ptr<double>(), sum.data_ptr<double>() + ranked);
}

// The `r` highest of `score` (ties to the lower index), ascending.
std::vector<int64_t> topAscending(const std::vector<double>& score, int64_t r) {
    std::vector<int64_t> idx(score.size());
    std::iota(idx.begin(), idx.end(), 0);
    auto better = [&](int64_t a, int64_t b) { return score[a] > score[b] || (score[a] == score[b] && a < b); };
    std::nth_element(idx.begin(), idx.begin() + r, idx.end(), better);
    idx.resize(static_cast<size_t>(r));
    std::sort(idx.begin(), idx.end());
    return idx;
}

}  // namespace

int64_t FinchPrefill::keptAfter(int64_t contextLength, int64_t contextBudget, int64_t read) {
    // k x read / n without overflow for any prompt a model holds.
    return static_cast<int64_t>((static_cast<__int128>(contextBudget) * read) / contextLength);
}

void FinchPrefill::onQueries(int64_t layer, const at::Tensor& q, int64_t p0) {
    const int64_t m = q.size(0);
    const int64_t lo = std::max(p0, questionStart_), hi = std::min(p0 + m, questionStart_ + window_);
    if (lo >= hi) return;
    at::Tensor& dst = questionQueries_[layer];
    if (!dst.defined()) dst = at::empty({window_, q.size(1), q.size(2)}, q.options().dtype(at::kFloat));
    dst.narrow(0, lo - questionStart_, hi - lo).copy_(q.narrow(0, lo - p0, hi - lo));
}

PrefilledCache FinchPrefill::run(LlamaModel& model, const std::vector<int32_t>& prompt, int64_t budget, int64_t window,
                                 int64_t chunk, const ProgressFn& progress) {
    const int64_t T = static_cast<int64_t>(prompt.size());
    if (window < 1) throw Error("--window must be at least 1 (Finch's question is the prompt's last --window tokens)");
    if (chunk < 1) throw Error("--finch-chunk " + std::to_string(chunk) + " must be at least 1");
    if (budget <= window || budget >= T)
        throw Error("Finch's --budget " + std::to_string(budget) + " must exceed --window " + std::to_string(window) +
                    " and stay below the prompt's " + std::to_string(T) + " tokens");
    c10::InferenceMode guard;
    const ModelConfig& c = model.config();
    const int64_t L = c.nLayers, n = T - window, k = budget - window;
    const bool halves = c.ropeStyle == RopeStyle::Halves;
    const std::vector<int32_t> question(prompt.begin() + n, prompt.end());
    FinchPrefill observer(L, window);
    KvCache cache = model.makeCache(k + std::min(chunk, n) + window);
    std::vector<std::vector<int64_t>> origin(L);  // per layer, the prompt position of each cache row
    // The kept keys in fp32 at their current positions: each re-rotation starts from these, so
    // a key kept over many chunks is rounded to the cache's dtype once, not once per move.
    std::vector<at::Tensor> exact(L);
    PrefilledCache out;
    const int64_t steps = (n + chunk - 1) / chunk;
    for (int64_t s = 0; s < steps; ++s) {
        const int64_t start = s * chunk, m = std::min(chunk, n - start), held = cache.length();
        const bool last = s + 1 == steps;
        std::vector<int32_t> tokens(prompt.begin() + start, prompt.begin() + start + m);
        tokens.insert(tokens.end(), question.begin(), question.end());
        observer.questionStart_ = held + m;
        ProgressFn stepProgress;
        if (progress) {
            stepProgress = [&](double f, const std::string& what) {
                progress((double(s) + f) / double(steps),
                         "Finch: chunk " + std::to_string(s + 1) + " of " + std::to_string(steps) + ", " + what);
            };
        }
        at::Tensor logits = model.forward(tokens, cache, false, stepProgress, &observer);
        const int64_t ranked = held + m, r = keptAfter(n, k, start + m);
        KvCache next = model.makeCache(k + std::min(chunk, n) + window);
        for (int64_t l = 0; l < L; ++l) {
            std::vector<int64_t> rows = topAscending(relevance(observer.questionQueries_[l], cache.keys(l), ranked), r);
            std::vector<int64_t> kept;
            for (int64_t row : rows) kept.push_back(row < held ? origin[l][row] : start + (row - held));
            if (last) {
                for (int64_t j = 0; j < window; ++j) {
                    rows.push_back(ranked + j);
                    kept.push_back(n + j);
                }
            }
            const at::Tensor idx = at::tensor(rows, at::kLong).to(model.device());
            at::Tensor all = cache.keys(l).to(at::kFloat);  // [KV, ranked + W, D]
            if (held > 0) all.narrow(1, 0, held).copy_(exact[l]);
            at::Tensor keys = all.index_select(1, idx);  // [KV, rows, D] fp32
            const at::Tensor values = cache.values(l).index_select(1, idx);
            std::vector<int64_t> shift(rows.size());
            for (size_t i = 0; i < rows.size(); ++i) shift[i] = static_cast<int64_t>(i) - rows[i];
            at::Tensor byRow = keys.permute({1, 0, 2});
            kernels::ropeShift(byRow, shift, model.ropeInverseFrequencies(), c.ropeDim, halves);
            exact[l] = keys;
            keys = keys.to(values.scalar_type());
            next.append(l, keys, values);
            origin[l] = std::move(kept);
            if (last) {
                out.keys.push_back(keys);
                out.values.push_back(values);
                out.kept.push_back(at::tensor(origin[l], at::kLong));
            }
        }
        cache = std::move(next);
        if (last) out.lastLogits = logits;
    }
    return out;
}

}  // namespace kvlens
