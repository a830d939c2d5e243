#include "engine/compress/DecodeCompressor.h"

#include <c10/core/InferenceMode.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/Error.h"
#include "engine/compress/presses/AdaKvPress.h"
#include "engine/compress/presses/CriticalAdaKvPress.h"
#include "engine/compress/presses/CriticalKvPress.h"
#include "engine/compress/presses/LagKvPress.h"
#include "engine/compress/presses/PressScores.h"
#include "engine/compress/presses/PyramidKvPress.h"
#include "engine/compress/presses/RandomPress.h"
#include "engine/compress/presses/SimLayerKvPress.h"
#include "kernels/LayerSelection.h"
#include "kernels/ProjectedNorms.h"

namespace kvlens {

bool DecodeCompressor::supports(const std::string& method) {
    const MethodInfo* m = methods::find(method);
    return m && m->decode != DecodeForm::None;
}

std::string DecodeCompressor::supportedList() {
    return methods::listWhere([](const MethodInfo& m) { return m.decode != DecodeForm::None; });
}

void DecodeCompressor::checkEvery(int64_t every) {
    if (every < 1) throw Error("--decode-every " + std::to_string(every) + " must be at least 1");
}

bool DecodeCompressor::wraps(const std::string& method) {
    const MethodInfo* m = methods::find(method);
    return m && m->decode == DecodeForm::ViaScorer;
}

bool DecodeCompressor::scorerDecodes(const std::string& scorer) {
    const MethodInfo* m = methods::find(scorer);
    return m && m->usableAsScorer && m->decode == DecodeForm::Own;
}

int64_t DecodeCompressor::fixedRows() const {
    const int64_t tail = scorer_ == MethodId::LagKv ? std::max(params_.window, 2 * params_.lag - 1) : params_.window;
    return tail + (params_.usesSinks() ? params_.sinks : 0);
}

DecodeCompressor::DecodeCompressor(const PressParams& params, int64_t every) : params_(params), every_(every) {
    checkEvery(every);
    if (params.convention == Convention::Kvpress)
        throw Error("--decode-every: --convention kvpress compresses the prompt only (kvpress's decoding presses are "
                    "not reproduced here)");
    if (!supports(params.method)) {
        throw Error("--decode-every: " + params.method + " has no form for compression during decoding here (" +
                    supportedList() + ")");
    }
    if (params.budget <= 0) throw Error("--decode-every needs --budget in entries (a ratio of what? the cache grows)");
    budget_ = params.budget;
    method_ = methods::named(params.method).id;
    if (wraps(params.method)) {
        if (!scorerDecodes(params.scorerInEffect())) {
            throw Error("--decode-every: " + params.method + " with --scorer " + params.scorerInEffect() +
                        " has no form for compression during decoding here (" +
                        methods::listWhere([](const MethodInfo& m) { return m.decode == DecodeForm::ViaScorer; }) +
                        " decode with --scorer " +
                        methods::listWhere([](const MethodInfo& m) { return m.usableAsScorer && m.decode == DecodeForm::Own; },
                                           " or ") +
                        ")");
        }
        scorer_ = methods::named(params.scorerInEffect()).id;
    } else {
        // PyramidKV ranks by SnapKV's votes; every other method by its own rule.
        scorer_ = method_ == MethodId::PyramidKv ? MethodId::SnapKv : method_;
    }
    if (wraps(params.method)) {
        // The window rows (with LagKV's scorer its tail, when longer: up to 2 lag - 1 rows), and
        // the scorer's sinks, are kept on every head besides what it ranks.
        const bool sinks = params.usesSinks();  // cur's, expected's and lagkv's
        const std::string what =
            (scorer_ == MethodId::LagKv ? "the longer of --window " + std::to_string(params.window) + " and LagKV's tail (2 x --lag - 1 = " +
                                      std::to_string(2 * params.lag - 1) + " rows)"
                                : "--window " + std::to_string(params.window)) +
            (sinks ? " + --sinks " + std::to_string(params.sinks) : "");
        if (method_ == MethodId::ChunkKv) {
            if (budget_ - fixedRows() < params.chunk) {
                throw Error("--budget " + std::to_string(budget_) + " leaves " + std::to_string(budget_ - fixedRows()) +
                            " entries beside " + what + ", less than one --chunk of " + std::to_string(params.chunk));
            }
        } else if (budget_ <= fixedRows()) {
            const std::string name = methods::info(method_).display;
            throw Error("--budget " + std::to_string(budget_) + " must exceed " + what + " (" + name + " keeps " +
                        (sinks || scorer_ == MethodId::LagKv ? "them" : "it") + " on every head)");
        }
        return;
    }
    if (method_ == MethodId::LagKv && budget_ < params.sinks + 2 * params.lag - 1) {
        throw Error("--budget " + std::to_string(budget_) + " must hold LagKV's " + std::to_string(params.sinks) +
                    " sinks and its longest tail while decoding, 2 x --lag - 1 = " + std::to_string(2 * params.lag - 1) +
                    " rows (the last full partition with the remainder, kept whole): raise the budget or lower --lag");
    }
    if ((method_ == MethodId::StreamingLlm || method_ == MethodId::Cur || method_ == MethodId::Expected ||
         method_ == MethodId::SimLayerKv) &&
        budget_ <= params.sinks) {
        throw Error("--budget " + std::to_string(budget_) + " must exceed --sinks " + std::to_string(params.sinks) +
                    " (the budget includes the sinks)");
    }
    if ((method_ == MethodId::H2o || method_ == MethodId::Random) && budget_ <= params.window) {
        throw Error("--budget " + std::to_string(budget_) + " must exceed --window " + std::to_string(params.window) +
                    (method_ == MethodId::H2o ? " (H2O's recent rows are part of the budget)"
                                            : " (Random keeps the window's rows and draws the rest)"));
    }
    if ((method_ == MethodId::SnapKv || method_ == MethodId::PyramidKv) && budget_ <= params.window) {
        throw Error("--budget " + std::to_string(budget_) + " must exceed --window " + std::to_string(params.window) +
                    " (" + std::string(methods::info(method_).display) +
                    "'s observation window is part of the budget)");
    }
}

std::vector<int64_t> DecodeCompressor::readersOf(const CompressedCache& cache, int64_t head) {
    std::vector<int64_t> heads;
    for (int64_t h = 0; h < static_cast<int64_t>(cache.headMap().size()); ++h)
        if (cache.headOf(h) == head) heads.push_back(h);
    return heads;
}

namespace {

// `windowAt(l)`: layer l's sliding window; the soft-cap and local RoPE as ModelConfig has them.
template <typename WindowAt>
void requireDecodeSupport(int64_t layers, WindowAt windowAt, double softcap, bool localRope) {
    for (int64_t l = 0; l < layers; ++l) {
        if (const int64_t w = windowAt(l); w > 0) {
            throw Error("--decode-every on a model with a sliding window (" + std::to_string(w) + " tokens from layer " +
                        std::to_string(l) + "): compression while decoding does not follow the rows a window drops "
                        "yet; --sliding-window ignore (the window's 'window: ignore') attends over the whole sequence");
        }
    }
    if (softcap > 0.0)
        throw Error("--decode-every on a model with attention logit soft-capping: the decode forms' attention does not "
                    "apply the soft-cap yet");
    if (localRope)
        throw Error("--decode-every on a model whose local layers rotate with a RoPE base of their own: the decode "
                    "forms' statistics turn by the global base only");
}

}  // namespace

void DecodeCompressor::requireModelSupport(const ModelConfig& config) {
    bool localRope = false;
    for (int64_t l = 0; l < config.nLayers; ++l) localRope = localRope || config.localRope(l);
    requireDecodeSupport(config.nLayers, [&](int64_t l) { return config.windowAt(l); }, config.attnSoftcap, localRope);
}

void DecodeCompressor::start(const Capture& capture, const Selection& selection, const LlamaModel* model) {
    c10::InferenceMode guard;
    requireDecodeSupport(capture.layers(), [&](int64_t l) { return capture.slidingWindow(l); },
                         capture.attentionSoftcap(), capture.localRope());
    if (method_ == MethodId::SimLayerKv) {
        // The layers its prefill finds lazy at this budget; none for a budget that holds the
        // whole prompt, whose selection keeps every layer whole (Press::select).
        lazy_ = budget_ >= capture.promptLength() ? std::vector<bool>(static_cast<size_t>(capture.layers()), false)
                                                  : SimLayerKvPress::lazyLayers(capture, params_, budget_);
        return;
    }
    if (critical()) {
        // The kept prompt positions' norms, as the press ranked them (a selection head's own,
        // or its KV head group's mean); the model's W_o for the rows decoded later.
        if (!model) {
            throw Error("--decode-every with " + params_.method + " needs the model's output projection for the rows it "
                        "decodes, which tensors given with --inputs do not have");
        }
        model_ = model;
        norms_.assign(capture.layers(), {});
        for (int64_t l = 0; l < capture.layers(); ++l) {
            const at::Tensor perHead = CriticalKvPress::headNorms(capture, l, selection.gqa, params_.method);
            const int64_t T = perHead.size(1);
            for (int64_t c = 0; c < perHead.size(0); ++c) {
                const double* n = perHead.data_ptr<double>() + c * T;
                std::vector<double> row;
                for (int32_t p : selection.kept[l][c]) row.push_back(n[p]);
                norms_[l].push_back(std::move(row));
            }
        }
    }
    if (votes()) {
        // The last `window` queries of the prompt (fewer when it is shorter).
        window_.assign(capture.layers(), at::Tensor());
        for (int64_t l = 0; l < capture.layers(); ++l) {
            const at::Tensor& q = capture.windowQueries(l);  // [H, min(64, T), D]
            const int64_t w = std::min<int64_t>(params_.window, q.size(1));
            window_[l] = q.narrow(1, q.size(1) - w, w).to(at::kFloat).clone();
        }
        return;
    }
    if (expects()) {
        if (!capture.queryStatistics()) {
            throw Error("--decode-every with expected needs the statistics of every prompt query, which only a model "
                        "prefill records (not tensors given with --inputs)");
        }
        stats_ = *capture.queryStatistics();
        // The prompt's queries after the sinks, as sums again (n x mean, n x (cov + mean mean^T)).
        const int64_t sinks = params_.sinks;
        queryCount_ = capture.promptLength() - sinks;
        querySum_.assign(capture.layers(), at::Tensor());
        queryOuter_.assign(capture.layers(), at::Tensor());
        for (int64_t l = 0; l < capture.layers(); ++l) {
            const auto [mean, cov] = stats_->meanAndCovariance(l, sinks);
            querySum_[l] = mean * double(queryCount_);
            queryOuter_[l] = (cov + mean.unsqueeze(2) * mean.unsqueeze(1)) * double(queryCount_);
        }
        return;
    }
    if (!observes()) return;
    const int64_t L = selection.layers(), heads = selection.headsPerLayer();
    const int64_t G = selection.gqa == GqaMode::KvHead ? selection.queryHeads / selection.kvHeads : 1;
    scores_.assign(L, std::vector<std::vector<double>>(heads));
    queries_.assign(L, at::Tensor());
    for (int64_t l = 0; l < L; ++l) {
        at::Tensor grouped;  // [heads, T]: the query heads of each selection head averaged, as the press ranks
        if (scorer_ == MethodId::H2o && capture.hasH2oScores()) {
            const at::Tensor s = capture.h2oScores(l).to(at::kCPU, at::kDouble);  // [H, T]
            grouped = s.view({heads, G, s.size(1)}).mean(1).contiguous();
        }
        for (int64_t c = 0; c < heads; ++c) {
            std::vector<double>& row = scores_[l][c];
            const double* g = grouped.defined() ? grouped.data_ptr<double>() + c * grouped.size(1) : nullptr;
            for (int32_t p : selection.kept[l][c]) row.push_back(g ? g[p] : 0.0);
        }
    }
}

void DecodeCompressor::onQueries(int64_t layer, const at::Tensor& q, int64_t position) {
    if (votes() && layer < static_cast<int64_t>(window_.size())) {
        // Slide the window: a new tensor each step, so a copy of this compressor keeps its own.
        c10::InferenceMode guard;
        const at::Tensor step = q.select(0, 0).to(window_[layer].device(), at::kFloat).unsqueeze(1);  // [H, 1, D]
        const at::Tensor grown = at::cat({window_[layer], step}, 1);
        const int64_t w = std::min<int64_t>(params_.window, grown.size(1));
        window_[layer] = grown.narrow(1, grown.size(1) - w, w).contiguous();
        return;
    }
    if (expects() && layer < static_cast<int64_t>(querySum_.size())) {
        c10::InferenceMode guard;
        const at::Tensor pre = stats_->rotatedBack(q, position).select(0, 0).to(at::kCPU, at::kDouble);  // [H, D]
        querySum_[layer] = querySum_[layer] + pre;
        queryOuter_[layer] = queryOuter_[layer] + pre.unsqueeze(2) * pre.unsqueeze(1);
        if (layer == static_cast<int64_t>(querySum_.size()) - 1) ++queryCount_;
        return;
    }
    if (!observes() || layer >= static_cast<int64_t>(queries_.size())) return;
    queries_[layer] = q.select(0, 0).to(at::kFloat).clone();  // [H, D]
}

void DecodeCompressor::accumulate(const CompressedCache& cache) {
    c10::InferenceMode guard;
    // The query heads reading each cache head (the same in every layer).
    const int64_t H = static_cast<int64_t>(cache.headMap().size());
    std::vector<at::Tensor> readers(static_cast<size_t>(cache.heads()));
    std::vector<double> share(static_cast<size_t>(cache.heads()), 0.0);  // readers / H
    for (int64_t c = 0; c < cache.heads(); ++c) {
        const std::vector<int64_t> heads = readersOf(cache, c);
        readers[c] = at::tensor(heads, at::kLong);
        share[c] = double(heads.size()) / double(H);
    }
    for (int64_t l = 0; l < cache.layers(); ++l) {
        if (!queries_[l].defined()) throw Error("the rolling form needs the decode's queries (pass the compressor to decode)");
        const std::vector<at::Tensor> keys = cache.keys(l);
        const int64_t D = queries_[l].size(1);
        for (int64_t c = 0; c < cache.heads(); ++c) {
            const at::Tensor q = queries_[l].index_select(0, readers[c].to(queries_[l].device()));
            const at::Tensor k = keys[static_cast<size_t>(c)].to(at::kFloat);  // [n, D]
            const at::Tensor p =
                at::softmax(at::matmul(q, k.t()) / std::sqrt(double(D)), -1).mean(0).to(at::kCPU, at::kDouble);
            std::vector<double>& acc = scores_[l][c];
            acc.resize(static_cast<size_t>(k.size(0)), 0.0);
            const double* pp = p.contiguous().data_ptr<double>();
            const bool tova = scorer_ == MethodId::Tova;
            for (size_t r = 0; r < acc.size(); ++r) acc[r] = (tova ? 0.0 : acc[r]) + pp[r];
        }
        queries_[l] = at::Tensor();
        // TOVA: one score for the layer, the mean over all its query heads, while its heads
        // hold the same rows (TOVA's, ChunkKV's and per-layer's heads keep the same rows, so
        // equal lengths say it); under AdaKV, CriticalKV and CriticalAdaKV, whose heads keep
        // different rows even at equal lengths (CriticalKV's second stage ranks by each head's
        // own norms), each head's own.
        const bool headsShareRows =
            method_ == MethodId::Tova || method_ == MethodId::ChunkKv || method_ == MethodId::PerLayer;
        if (scorer_ == MethodId::Tova && headsShareRows && cache.heads() > 1) {
            std::vector<std::vector<double>>& heads = scores_[l];
            bool same = true;
            for (const auto& h : heads) same = same && h.size() == heads[0].size();
            if (same) {
                std::vector<double> mean(heads[0].size(), 0.0);
                for (int64_t c = 0; c < cache.heads(); ++c)
                    for (size_t r = 0; r < mean.size(); ++r) mean[r] += heads[c][r] * share[c];
                for (auto& h : heads) h = mean;
            }
        }
    }
}

std::vector<int64_t> DecodeCompressor::keptRows(const CompressedCache& cache, int64_t layer, int64_t head,
                                                int64_t budget) const {
    const int64_t n = cache.length(layer, head);
    std::vector<int64_t> rows;
    if (method_ == MethodId::StreamingLlm || method_ == MethodId::SimLayerKv) {
        for (int64_t r = 0; r < params_.sinks; ++r) rows.push_back(r);
        for (int64_t r = n - (budget - params_.sinks); r < n; ++r) rows.push_back(r);
        return rows;
    }
    if (method_ == MethodId::Tova) {
        const std::vector<double>& s = scores_[layer][head];
        for (int32_t r : presses::topPositions(s, budget)) rows.push_back(r);  // in double: no ties made
        return rows;
    }
    if (method_ == MethodId::H2o) {
        // The heavy hitters among the older rows, then the recent window.
        const std::vector<double>& acc = scores_[layer][head];
        const std::vector<double> older(acc.begin(), acc.begin() + (n - params_.window));
        for (int32_t r : presses::topPositions(older, budget - params_.window)) rows.push_back(r);
        for (int64_t r = n - params_.window; r < n; ++r) rows.push_back(r);
        return rows;
    }
    if (method_ == MethodId::LagKv) {
        // LagKV's rule on the rows: partitions of `lag` rows after the sinks, each scored
        // against the next, each keeping its share; the sinks and the tail whole.
        c10::InferenceMode guard;
        const size_t c = static_cast<size_t>(head);
        const at::Tensor s = presses::lagLocalScores(cache.keys(layer)[c].unsqueeze(0),
                                                     cache.values(layer)[c].unsqueeze(0), params_)[0]
                                 .to(at::kCPU)
                                 .contiguous();
        for (int32_t r : LagKvPress::keepHead(s.data_ptr<float>(), n, params_.sinks, params_.lag,
                                              params_.lagTailStart(n), budget))
            rows.push_back(r);
        return rows;
    }
    if (method_ == MethodId::Random) {
        // A new draw per compression among the rows before the window, then the window.
        const uint64_t seed = params_.seed + uint64_t(steps_ / every_) * 0xD1B54A32D192ED03ull;
        for (int32_t r : RandomPress::draw(seed, layer, head, n - params_.window, budget - params_.window))
            rows.push_back(r);
        for (int64_t r = n - params_.window; r < n; ++r) rows.push_back(r);
        return rows;
    }
    const std::vector<float> scores = rowScores(cache, layer, head, wraps(params_.method));
    if (method_ == MethodId::CriticalKv) {
        for (int32_t r : CriticalKvPress::keepHead(scores, norms_[layer][head].data(), budget - presses::alwaysKept(scores)))
            rows.push_back(r);
        return rows;
    }
    if (method_ == MethodId::ChunkKv) {
        // The rows between the leading NaNs (the scorer's sinks) and the trailing ones (the
        // window, LagKV's tail) in chunks of `chunk` from the first, the last one maybe short;
        // the best floor((budget - fixed) / chunk) chunks by their scores' sum, whole.
        const int64_t c = params_.chunk;
        int64_t lead = 0, trail = 0;
        while (lead < n && std::isnan(scores[size_t(lead)])) ++lead;
        while (trail < n - lead && std::isnan(scores[size_t(n - 1 - trail)])) ++trail;
        const std::vector<float> middle(scores.begin() + lead, scores.end() - trail);
        const int64_t ranked = n - lead - trail, chunks = (ranked + c - 1) / c;
        const int64_t keep = std::min(chunks, std::max<int64_t>(0, budget - lead - trail) / c);
        for (int64_t r = 0; r < lead; ++r) rows.push_back(r);
        for (int32_t chunk : presses::topPositions(presses::chunkSums(middle, c), keep))
            for (int64_t i = chunk * c; i < std::min(ranked, (chunk + 1) * c); ++i) rows.push_back(lead + i);
        for (int64_t r = n - trail; r < n; ++r) rows.push_back(r);
        return rows;
    }
    // NaN: always kept (the sinks, the window). A capture holding NaN is refused when made,
    // so no other row scores NaN here.
    for (int32_t r : presses::keptWithNaNs(scores, std::max<int64_t>(0, budget - presses::alwaysKept(scores))))
        rows.push_back(r);
    return rows;
}

std::vector<float> DecodeCompressor::rowScores(const CompressedCache& cache, int64_t layer, int64_t head,
                                               bool keepWindow) const {
    c10::InferenceMode guard;
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const at::Tensor k = cache.keys(layer)[static_cast<size_t>(head)];  // [n, D]
    const int64_t n = k.size(0);
    auto toVector = [](const at::Tensor& t) {
        const at::Tensor s = t.to(at::kCPU, at::kFloat).contiguous();
        return std::vector<float>(s.data_ptr<float>(), s.data_ptr<float>() + s.numel());
    };
    // NaN (always kept) on the first `sinks` rows, then `rest` (fp32 [n - sinks]).
    auto afterSinks = [&](const at::Tensor& rest, int64_t sinks) {
        std::vector<float> out(static_cast<size_t>(sinks), nan);
        const std::vector<float> r = toVector(rest);
        out.insert(out.end(), r.begin(), r.end());
        return out;
    };
    std::vector<float> out;
    if (scorer_ == MethodId::SnapKv) {
        // The window's queries of the heads reading this one vote over its rows before the
        // window's own (the last w rows: every compression keeps them, so they are the last
        // w tokens, the queries' own): kernels::layerScores on one KV head of G readers.
        if (window_.empty()) throw Error("SnapKV's decode form needs DecodeCompressor::start before the first step");
        const at::Tensor& all = window_[layer];
        const int64_t w = all.size(1);
        const at::Tensor q = all.index_select(0, at::tensor(readersOf(cache, head), at::kLong).to(all.device()));
        kernels::VoteSpec spec = presses::voteSpec(params_);
        spec.window = w;
        spec.perQueryHead = false;  // one row: the mean of the readers' votes
        if (method_ == MethodId::ChunkKv) spec.kernel = 1;  // ChunkKV sums the votes unpooled
        out = toVector(kernels::layerScores(q, k.unsqueeze(0), spec)[0]);  // [n - w]
        out.resize(static_cast<size_t>(n), nan);
        return out;
    }
    if (scorer_ == MethodId::Tova || scorer_ == MethodId::H2o) {
        // TOVA: this step's attention (accumulate: the layer's mean while its heads hold the same
        // rows, for tova, chunkkv and perlayer only); H2O: the attention each row has accumulated
        // (the prompt's, then every step's).
        const std::vector<double>& s = scores_[layer][head];
        out.assign(s.begin(), s.end());
    } else if (scorer_ == MethodId::LagKv) {
        // NaN on the sinks and the tail (the last full partition with the remainder).
        out = toVector(presses::lagLocalScores(k.unsqueeze(0), cache.values(layer)[static_cast<size_t>(head)].unsqueeze(0),
                                               params_)[0]);
    } else if (scorer_ == MethodId::Expected) {
        // Expected Attention of the rows after the sinks under the statistics so far.
        if (querySum_.empty()) throw Error("Expected Attention's decode form needs DecodeCompressor::start before the first step");
        const int64_t sinks = std::min<int64_t>(params_.sinks, n), D = k.size(1);
        const std::vector<int64_t> readers = readersOf(cache, head);
        const at::Tensor idx = at::tensor(readers, at::kLong);
        const double count = double(queryCount_);
        const at::Tensor mean = querySum_[layer].index_select(0, idx) / count;  // [G, D]
        const at::Tensor cov = queryOuter_[layer].index_select(0, idx) / count - mean.unsqueeze(2) * mean.unsqueeze(1);
        const at::Tensor& R = rotation_;  // [D, D], from the next position (afterStep)
        const at::Device dev = k.device();
        const at::Tensor mu = at::matmul(mean, R.t()).to(dev, at::kFloat);                               // [G, D]
        const at::Tensor sigma = at::matmul(at::matmul(R, cov), R.t()).to(dev, at::kFloat);             // [G, D, D]
        const at::Tensor kr = k.narrow(0, sinks, n - sinks).to(at::kFloat);                               // [m, D]
        const at::Tensor vr = cache.values(layer)[static_cast<size_t>(head)].narrow(0, sinks, n - sinks).to(at::kFloat);
        at::Tensor a = at::zeros({n - sinks}, kr.options());
        for (int64_t g = 0; g < static_cast<int64_t>(readers.size()); ++g) {
            const at::Tensor linear = at::mv(kr, mu[g]) / std::sqrt(double(D));
            const at::Tensor quad = (at::matmul(kr, sigma[g]) * kr).sum(-1) / (2.0 * double(D));
            a.add_(at::softmax(linear + quad, -1));
        }
        out = afterSinks(a.div_(double(readers.size())) * vr.norm(2, {-1}), sinks);
    } else if (scorer_ == MethodId::Cur) {
        const int64_t sinks = std::min<int64_t>(params_.sinks, n);
        const at::Tensor s = presses::curLocalScores(k.unsqueeze(0), cache.values(layer)[static_cast<size_t>(head)].unsqueeze(0));
        out = afterSinks(s[0].narrow(0, sinks, n - sinks), sinks);
    } else {
        out = toVector(scorer_ == MethodId::Knorm ? presses::negativeKeyNorms(k) : presses::negativeAnchorCosines(k));
    }
    // A wrapper keeps the last `window` rows (the most recent tokens) as it does at prefill.
    if (keepWindow) std::fill(out.end() - std::min<int64_t>(params_.window, n), out.end(), nan);
    return out;
}

void DecodeCompressor::keep(CompressedCache& cache, int64_t layer, int64_t head, const std::vector<int64_t>& rows) {
    cache.keepRows(layer, head, rows);
    // The rows' accumulated (H2O) or last (TOVA) attention, and their CriticalKV norms, follow them.
    auto follow = [&rows](std::vector<double>& perRow) {
        std::vector<double> kept;
        for (int64_t r : rows) kept.push_back(perRow[static_cast<size_t>(r)]);
        perRow = std::move(kept);
    };
    if (observes()) follow(scores_[layer][head]);
    if (critical()) follow(norms_[layer][head]);
}

void DecodeCompressor::extendNorms(const CompressedCache& cache) {
    if (norms_.empty()) throw Error("CriticalKV's decode form needs DecodeCompressor::start before the first step");
    c10::InferenceMode guard;
    for (int64_t l = 0; l < cache.layers(); ++l) {
        at::Tensor wo;  // fp32 W_o, dequantised once per layer and compression, when a head needs it
        const std::vector<at::Tensor> values = cache.values(l);
        for (int64_t c = 0; c < cache.heads(); ++c) {
            std::vector<double>& norms = norms_[l][c];
            const int64_t have = static_cast<int64_t>(norms.size()), n = cache.length(l, c);
            if (have >= n) continue;
            if (!wo.defined()) wo = kernels::floatWeight(model_->weights().layers[l].wo).to(values[0].device());
            // The mean over the query heads reading this head, as the prompt's rows have it.
            const at::Tensor v = values[static_cast<size_t>(c)].narrow(0, have, n - have);
            const std::vector<int64_t> readers = readersOf(cache, c);
            at::Tensor sum = at::zeros({n - have}, at::kDouble);
            for (int64_t h : readers) sum += kernels::projectedValueNorms(wo, v, h).to(at::kCPU, at::kDouble);
            sum /= double(readers.size());
            const double* s = sum.data_ptr<double>();
            norms.insert(norms.end(), s, s + (n - have));
        }
    }
}

bool DecodeCompressor::afterStep(CompressedCache& cache) {
    if (observes()) {
        if (scores_.empty()) throw Error("the rolling form needs DecodeCompressor::start before the first step");
        // H2O accumulates every step; TOVA's score is the step's own, needed only when due.
        if (scorer_ == MethodId::H2o || (steps_ + 1) % every_ == 0) accumulate(cache);
    }
    if (++steps_ % every_ != 0) return false;
    // The same for every head of every layer: the rotation averaged from the next position.
    if (expects()) rotation_ = stats_->averageRotation(cache.nextPosition(), params_.future);
    if (critical()) extendNorms(cache);
    // PyramidKV: each layer's share of layers x budget, as its prefill splits a prompt as long
    // as the sequence so far.
    std::vector<int64_t> layerBudget(static_cast<size_t>(cache.layers()), budget_);
    if (method_ == MethodId::PyramidKv) {
        layerBudget = PyramidKvPress::prefixBudgets(cache.layers(), cache.nextPosition(), params_.window, budget_,
                                                    params_.beta, params_.schedule);
        for (int64_t& b : layerBudget) b += params_.window;
    } else if (method_ == MethodId::PerLayer) {
        // Per-layer: the layers share layers x (budget - fixed) in proportion to --layer-weights
        // as its prefill shares them for a prompt as long as the sequence so far; fixed: the
        // rows the scorer keeps whole (its window or longest LagKV tail, its sinks).
        const int64_t L = cache.layers(), fixed = fixedRows(), available = cache.nextPosition() - fixed;
        const std::vector<double> weights =
            params_.layerWeights.empty() ? std::vector<double>(static_cast<size_t>(L), 1.0) : params_.layerWeights;
        if (static_cast<int64_t>(weights.size()) != L) {
            throw Error("--layer-weights has " + std::to_string(weights.size()) + " weights; the model has " +
                        std::to_string(L) + " layers, one weight each");
        }
        const std::vector<int64_t> shares = presses::cakeLayerBudgets(weights, (budget_ - fixed) * L, available);
        for (int64_t l = 0; l < L; ++l) layerBudget[l] = std::clamp<int64_t>(shares[l], 0, available) + fixed;
    }
    if (method_ == MethodId::SimLayerKv) {
        // Only the lazy layers are kept at the budget; the others keep every row.
        if (lazy_.size() != static_cast<size_t>(cache.layers()))
            throw Error("SimLayerKV's decode form needs DecodeCompressor::start before the first step");
        for (int64_t l = 0; l < cache.layers(); ++l)
            if (!lazy_[l]) layerBudget[l] = std::numeric_limits<int64_t>::max();
    }
    bool dropped = false;
    for (int64_t l = 0; l < cache.layers(); ++l) {
        if (method_ == MethodId::AdaKv || method_ == MethodId::CriticalAdaKv) {
            // The layer's heads share heads x budget entries as AdaKV's prefill shares them.
            int64_t total = 0;
            for (int64_t c = 0; c < cache.heads(); ++c) total += cache.length(l, c);
            if (total <= cache.heads() * budget_) continue;
            presses::HeadScores scores;
            for (int64_t c = 0; c < cache.heads(); ++c) scores.push_back(rowScores(cache, l, c, true));
            std::vector<std::vector<int32_t>> kept;
            if (method_ == MethodId::CriticalAdaKv) {
                // AdaKV's allocation, each head keeping its share as CriticalKV does.
                std::vector<const double*> norms;
                for (int64_t c = 0; c < cache.heads(); ++c) norms.push_back(norms_[l][c].data());
                kept = CriticalAdaKvPress::keepLayer(scores, norms, budget_, params_.alpha, scorer_ == MethodId::SnapKv);
            } else {
                kept = AdaKvPress::keepLayer(scores, budget_, params_.alpha, scorer_ == MethodId::SnapKv);
            }
            for (int64_t c = 0; c < cache.heads(); ++c) keep(cache, l, c, std::vector<int64_t>(kept[c].begin(), kept[c].end()));
            dropped = true;
            continue;
        }
        for (int64_t c = 0; c < cache.heads(); ++c) {
            if (cache.length(l, c) <= layerBudget[l]) continue;
            keep(cache, l, c, keptRows(cache, l, c, layerBudget[l]));
            dropped = true;
        }
    }
    return dropped;
}

}  // namespace kvlens
