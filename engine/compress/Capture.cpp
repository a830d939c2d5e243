#include "engine/compress/Capture.h"

#include <c10/core/InferenceMode.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

#include "core/Error.h"
#include "core/Methods.h"
#include "core/PressParams.h"
#include "engine/compress/CaptureWork.h"
#include "engine/compress/presses/Press.h"
#include "engine/compress/presses/CriticalKvNormsWork.h"
#include "engine/compress/presses/FinchPrefillWork.h"
#include "engine/compress/presses/KvzipReconstructionWork.h"
#include "engine/compress/presses/NonCausalReplayWork.h"
#include "engine/model/LlamaModel.h"
#include "kernels/LayerSelection.h"

namespace kvlens {
namespace {

const char* const kPrefill = CaptureWork::kPrefill;
void requireFinite(const at::Tensor& t, int64_t layer, const char* headKind, const std::string& what,
                   const std::string& source) {
    CaptureWork::requireFinite(t, layer, headKind, what, source);
}

// Copies the rows of q [n, H, D] (positions p0 .. p0 + n) at positions [from, from + count)
// into dst [H, count, D] (row r = position from + r): a window may straddle two chunks.
void copyWindowRows(const at::Tensor& q, int64_t p0, int64_t from, int64_t count, at::Tensor& dst) {
    const int64_t lo = std::max(from, p0), hi = std::min(from + count, p0 + q.size(0));
    if (lo >= hi) return;
    if (!dst.defined()) dst = at::empty({q.size(1), count, q.size(2)}, q.options().dtype(at::kFloat));
    dst.narrow(1, lo - from, hi - lo).copy_(q.narrow(0, lo - p0, hi - lo).permute({1, 0, 2}));
}

// Keeps the queries of chosen (layer, head) pairs at every prompt position, [T, D] fp32,
// chunk by chunk.
void keepHeadQueries(std::map<std::pair<int64_t, int64_t>, at::Tensor>& wanted, int64_t layer,
                     const at::Tensor& q, int64_t p0, int64_t promptLength) {
    const int64_t n = std::min<int64_t>(q.size(0), promptLength - p0);
    if (n <= 0) return;
    for (auto& [lh, t] : wanted) {
        if (lh.first != layer) continue;
        if (!t.defined()) t = at::empty({promptLength, q.size(2)}, q.options().dtype(at::kFloat));
        t.narrow(0, p0, n).copy_(q.narrow(0, 0, n).select(1, lh.second));
    }
}

class CaptureObserver : public ForwardObserver {
public:
    CaptureObserver(int64_t layers, int64_t promptLength,
                    const std::vector<std::pair<int64_t, int64_t>>& fullQueryHeads, QueryStatistics* stats)
        : queries(layers), promptLength_(promptLength), stats_(stats) {
        for (const auto& lh : fullQueryHeads) fullQueries[lh] = at::Tensor();
    }

    void onQueries(int64_t layer, const at::Tensor& q, int64_t firstPosition) override {
        keepHeadQueries(fullQueries, layer, q, firstPosition, promptLength_);
        if (stats_) stats_->add(layer, q, firstPosition);
        // Keep the queries of the last kMaxWindow prompt positions, [H, w, D] fp32.
        const int64_t w = Capture::windowCapacityFor(promptLength_);
        copyWindowRows(q, firstPosition, promptLength_ - w, w, queries[layer]);
    }

    std::vector<at::Tensor> queries;
    std::map<std::pair<int64_t, int64_t>, at::Tensor> fullQueries;

private:
    int64_t promptLength_;
    QueryStatistics* stats_;
};

void requireFiniteCapture(const Capture& c, const std::string& source) {
    for (int64_t l = 0; l < c.layers(); ++l) {
        requireFinite(c.windowQueries(l), l, "query head", "window queries", source);
        requireFinite(c.keys(l), l, "KV head", "keys", source);
        requireFinite(c.values(l), l, "KV head", "values", source);
    }
}

}  // namespace

std::shared_ptr<Capture> Capture::fromPrefill(
    LlamaModel& model, const std::vector<int32_t>& prompt, const ProgressFn& progress,
    const std::vector<std::pair<int64_t, int64_t>>& fullQueryHeads, int64_t spareTokens) {
    const ModelConfig& c = model.config();
    for (const auto& [layer, head] : fullQueryHeads) {
        if (layer < 0 || layer >= c.nLayers || head < 0 || head >= c.nHeads) {
            throw Error("head " + std::to_string(layer) + ":" + std::to_string(head) +
                        " does not exist: the model has layers 0-" + std::to_string(c.nLayers - 1) +
                        " and query heads 0-" + std::to_string(c.nHeads - 1));
        }
    }
    if (prompt.size() < 2) throw Error("the prompt needs at least 2 tokens to compress");
    if (static_cast<int64_t>(prompt.size()) > c.contextLength) {
        throw Error("the prompt is " + std::to_string(prompt.size()) +
                    " tokens, longer than the model's context of " + std::to_string(c.contextLength) +
                    " tokens");
    }
    std::shared_ptr<Capture> capture(new Capture());
    capture->promptLength_ = static_cast<int64_t>(prompt.size());
    capture->queryHeads_ = c.nHeads;
    capture->kvHeads_ = c.nKvHeads;
    capture->headDim_ = c.headDim;
    capture->prompt_ = prompt;
    for (int64_t l = 0; l < c.nLayers; ++l) {
        capture->slidingWindows_.push_back(c.windowAt(l));
        capture->localRope_ = capture->localRope_ || c.localRope(l);
    }
    capture->attentionSoftcap_ = c.attnSoftcap;
    capture->cache_ =
        std::make_unique<KvCache>(model.makeCache(capture->promptLength_ + std::max<int64_t>(spareTokens, 0)));
    capture->queryStats_ = std::make_unique<QueryStatistics>(
        c.nLayers, capture->promptLength_, model.ropeInverseFrequencies(), c.ropeDim, c.ropeStyle == RopeStyle::Halves);
    CaptureObserver observer(c.nLayers, capture->promptLength_, fullQueryHeads, capture->queryStats_.get());
    const auto start = std::chrono::steady_clock::now();
    capture->lastLogits_ = model.forward(prompt, *capture->cache_, false, progress, &observer);
    capture->prefillSeconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    capture->windowQueries_ = std::move(observer.queries);
    capture->fullQueries_ = std::move(observer.fullQueries);
    requireFiniteCapture(*capture, kPrefill);
    // The default window's votes are part of the capture: the first SnapKV,
    // PyramidKV or AdaKV selection after a prefill is as quick as any other.
    const int64_t window = std::min<int64_t>(PressParams().window, capture->promptLength_ - 1);
    capture->votes(0, window);
    return capture;
}

std::shared_ptr<Capture> Capture::fromTensors(const std::vector<at::Tensor>& windowQueries,
                                              const std::vector<at::Tensor>& keys,
                                              const std::vector<at::Tensor>& values,
                                              const std::vector<at::Tensor>& outputProjections) {
    if (windowQueries.empty() || keys.size() != windowQueries.size() || values.size() != keys.size()) {
        throw Error("need window queries, keys and values for every layer");
    }
    std::shared_ptr<Capture> capture(new Capture());
    const at::Tensor& k0 = keys[0];
    capture->queryHeads_ = windowQueries[0].size(0);
    capture->kvHeads_ = k0.size(0);
    capture->promptLength_ = k0.size(1);
    capture->headDim_ = k0.size(2);
    const int64_t L = static_cast<int64_t>(keys.size());
    capture->cache_ = std::make_unique<KvCache>(L, capture->kvHeads_, capture->headDim_,
                                                capture->promptLength_, k0.scalar_type(), k0.device());
    for (int64_t l = 0; l < L; ++l) {
        capture->cache_->append(l, keys[l], values[l]);
        capture->windowQueries_.push_back(windowQueries[l].to(at::kFloat).contiguous());
    }
    requireFiniteCapture(*capture, "the inputs hold");
    if (!outputProjections.empty()) {
        if (int64_t(outputProjections.size()) != L) throw Error("need an output projection for every layer or none");
        std::vector<at::Tensor> all(L);
        for (int64_t l = 0; l < L; ++l) {
            const at::Tensor& w = outputProjections[l];
            if (w.dim() != 2 || w.size(1) != capture->queryHeads_ * capture->headDim_)
                throw Error("layer " + std::to_string(l) + "'s output projection is not [E, " +
                            std::to_string(capture->queryHeads_ * capture->headDim_) + "] (query heads x head dim)");
            all[l] = CriticalKvNormsWork::norms(w.to(at::kFloat).contiguous(),
                                                capture->values(l).narrow(1, 0, capture->promptLength_),
                                                capture->queryHeads_);
        }
        capture->memoStore(CriticalKvNormsWork::key(), all);
    }
    return capture;
}

std::shared_ptr<void> Capture::borrowSpare() const {
    bool expected = false;
    if (!spareLent_->compare_exchange_strong(expected, true)) return nullptr;
    // The flag outlives the capture if the borrower does.
    std::shared_ptr<std::atomic<bool>> flag = spareLent_;
    return std::shared_ptr<void>(flag.get(), [flag](void*) { *flag = false; });
}

at::Tensor Capture::memoScores(const std::string& name, int64_t layer,
                               const std::function<at::Tensor()>& compute) const {
    std::lock_guard<std::mutex> lock(votesMutex_);
    auto it = memo_.find({name, layer});
    if (it == memo_.end()) {
        c10::InferenceMode guard;
        it = memo_.emplace(std::make_pair(name, layer), compute().to(at::kFloat).contiguous()).first;
    }
    return it->second;
}

bool Capture::windowed() const {
    for (int64_t l = 0; l < layers(); ++l)
        if (firstReached(l) > 0) return true;
    return false;
}

int64_t Capture::fullCacheBytes(int64_t layer) const {
    const at::Tensor k = keys(layer);  // [KV, T, D]
    return 2 * k.size(0) * (promptLength_ - firstReached(layer)) * k.size(2) * k.element_size();
}

at::Tensor Capture::votes(int64_t layer, int64_t window) const {
    std::lock_guard<std::mutex> lock(votesMutex_);
    auto it = votes_.find(window);
    if (it == votes_.end()) {
        std::vector<at::Tensor> perLayer(layers());
        for (int64_t l = 0; l < layers(); ++l) perLayer[l] = computeVotes(l, window);
        it = votes_.emplace(window, std::move(perLayer)).first;
    }
    return it->second[layer];
}

at::Tensor Capture::computeVotes(int64_t layer, int64_t window) const {
    c10::InferenceMode guard;
    const int64_t T = promptLength_;
    if (window < 1 || window > windowCapacity() || window >= T) {
        throw Error("window " + std::to_string(window) + " needs between 1 and " +
                    std::to_string(std::min(windowCapacity(), T - 1)) + " window queries");
    }
    at::Tensor votes =
        kernels::windowVotes(windowQueries_[layer], keys(layer), window, {}, slidingWindow(layer), attentionSoftcap_);
    requireFinite(votes, layer, "query head", "votes (window " + std::to_string(window) + ")",
                  kPrefill);
    return votes;
}

namespace {

// Keeps the queries of chosen (layer, head) pairs of a replayed prompt.
class QueryKeeper : public ForwardObserver {
public:
    QueryKeeper(std::map<std::pair<int64_t, int64_t>, at::Tensor>& wanted, int64_t promptLength)
        : wanted_(wanted), promptLength_(promptLength) {}
    void onQueries(int64_t layer, const at::Tensor& q, int64_t p0) override {
        keepHeadQueries(wanted_, layer, q, p0, promptLength_);
    }

private:
    std::map<std::pair<int64_t, int64_t>, at::Tensor>& wanted_;
    int64_t promptLength_;
};

}  // namespace

void Capture::keepQueries(LlamaModel& model, const std::vector<std::pair<int64_t, int64_t>>& heads,
                          const ProgressFn& progress) {
    c10::InferenceMode guard;
    if (prompt_.empty()) throw Error("recomputing queries needs a capture made by a model prefill");
    const ModelConfig& c = model.config();
    std::map<std::pair<int64_t, int64_t>, at::Tensor> wanted;
    int64_t deepest = -1;
    for (const auto& [layer, head] : heads) {
        if (layer < 0 || layer >= c.nLayers || head < 0 || head >= c.nHeads || layer >= layers()) {
            throw Error("head " + std::to_string(layer) + ":" + std::to_string(head) +
                        " does not exist: the model has layers 0-" + std::to_string(c.nLayers - 1) +
                        " and query heads 0-" + std::to_string(c.nHeads - 1));
        }
        if (hasQueries(layer, head)) continue;
        wanted[{layer, head}] = at::Tensor();
        deepest = std::max(deepest, layer);
    }
    if (wanted.empty()) return;
    QueryKeeper keeper(wanted, promptLength_);
    model.replay(prompt_, *cache_, keeper, progress, deepest);
    for (auto& [lh, t] : wanted) fullQueries_[lh] = std::move(t);
}

void Capture::keepScoresFor(LlamaModel& model, const std::string& method, const ProgressFn& progress) const {
    PressParams params;
    params.method = method;
    keepScoresFor(model, params, progress);
}

bool Capture::needsReplayFor(const PressParams& params) const { return !pendingWork(params).empty(); }

std::string Capture::pendingWork(const PressParams& params) const {
    if (prompt_.empty()) return "";  // a capture from tensors has what it was given
    std::string work;
    for (const CaptureWork* w : CaptureWork::all()) {
        const std::string what = w->pending(*this, params);
        if (!what.empty()) work += (work.empty() ? "" : " and ") + what;
    }
    return work;
}

void Capture::keepScoresFor(LlamaModel& model, const PressParams& params, const ProgressFn& progress) const {
    if (prompt_.empty()) return;
    std::vector<const CaptureWork*> due;
    for (const CaptureWork* w : CaptureWork::all())
        if (!w->pending(*this, params).empty()) due.push_back(w);
    if (due.empty()) return;
    // Bad settings fail before a replay, not after it (H2O's needs none: any budget uses it).
    if (methods::named(params.method).id != MethodId::H2o) params.validate(promptLength_, windowCapacity());
    Press::requireModelSupport(*this, params);
    std::lock_guard<std::mutex> lock(statsMutex_);
    const ModelConfig& c = model.config();
    if (c.nLayers != layers() || c.nHeads != queryHeads_ || c.nKvHeads != kvHeads_ || c.headDim != headDim_)
        throw Error(std::string(due.front()->needer()) + " the model that made the capture (another one is loaded)");
    c10::InferenceMode guard;
    // Each piece of work fills its own share of one bar, in order, rather than each running it
    // from 0 to 1 again.
    const int64_t pieces = static_cast<int64_t>(due.size());
    for (int64_t i = 0; i < pieces; ++i) {
        if (due[size_t(i)]->pending(*this, params).empty()) continue;  // another thread made it meanwhile
        ProgressFn share;
        if (progress)
            share = [&progress, i, pieces](double f, const std::string& what) {
                progress((double(i) + f) / double(pieces), what);
            };
        due[size_t(i)]->run(*this, model, params, share);
    }
}

void Capture::keepRecent(const std::string& kind, const std::string& prefix, size_t keep) const {
    std::vector<std::string>& recent = recent_[kind];
    recent.push_back(prefix);
    while (recent.size() > keep) {
        // A name ending in ':' is the prefix of a set ("finch:B:W:m:" + k, v, kept, logits);
        // any other is one name ("kvzip:2048:4", not also "kvzip:2048:40").
        const std::string& old = recent.front();
        const bool set = old.back() == ':';
        for (auto it = memo_.begin(); it != memo_.end();) {
            const std::string& name = it->first.first;
            it = (set ? name.rfind(old, 0) == 0 : name == old) ? memo_.erase(it) : std::next(it);
        }
        recent.erase(recent.begin());
    }
}

at::Tensor Capture::memoFound(const std::string& name, int64_t layer) const {
    std::lock_guard<std::mutex> lock(votesMutex_);
    auto it = memo_.find({name, layer});
    return it == memo_.end() ? at::Tensor() : it->second;
}

void Capture::memoStore(const std::string& name, const std::vector<at::Tensor>& perLayer) const {
    std::lock_guard<std::mutex> lock(votesMutex_);
    for (size_t l = 0; l < perLayer.size(); ++l) memo_[{name, int64_t(l)}] = perLayer[l];
}

PrefilledCache Capture::prefilledCache(const PressParams& params) const {
    PrefilledCache own;
    if (!methods::effectiveNeeds(params).has(Need::SecondPrefill)) return own;
    const std::string key = FinchPrefillWork::key(params, promptLength_);
    // All of one cache under one lock: an older one may be dropped meanwhile (kFinchCaches).
    std::lock_guard<std::mutex> lock(votesMutex_);
    auto found = [&](const std::string& name, int64_t layer) {
        auto it = memo_.find({key + name, layer});
        return it == memo_.end() ? at::Tensor() : it->second;
    };
    if (!found("k", 0).defined()) return own;
    own.lastLogits = found("logits", 0);
    for (int64_t l = 0; l < layers(); ++l) {
        own.keys.push_back(found("k", l));
        own.values.push_back(found("v", l));
        own.kept.push_back(found("kept", l));
    }
    return own;
}

at::Tensor Capture::outputValueNorms(int64_t layer) const { return memoFound(CriticalKvNormsWork::key(), layer); }

at::Tensor Capture::reconstructionScores(int64_t layer, int64_t chunk, int64_t sinks) const {
    return memoFound(KvzipReconstructionWork::key(chunk, sinks), layer);
}

at::Tensor Capture::nonCausalAttention(int64_t layer, int64_t chunk, int64_t lo, int64_t hi) const {
    return memoFound(NonCausalReplayWork::key(chunk, lo, hi), layer);
}

const at::Tensor& Capture::queries(int64_t layer, int64_t head) const {
    auto it = fullQueries_.find({layer, head});
    if (it == fullQueries_.end() || !it->second.defined()) {
        throw Error("the queries of layer " + std::to_string(layer) + " head " + std::to_string(head) +
                    " were not kept by the prefill");
    }
    return it->second;
}

int64_t Capture::bytes() const {
    int64_t total = cache_ ? cache_->bytes() : 0;
    for (const auto& [lh, t] : fullQueries_)
        if (t.defined()) total += t.numel() * t.element_size();
    for (const at::Tensor& t : windowQueries_) total += t.numel() * t.element_size();
    if (queryStats_) total += queryStats_->bytes();
    if (hasH2oScores())
        for (const at::Tensor& t : h2oScores_) total += t.numel() * t.element_size();
    std::lock_guard<std::mutex> lock(votesMutex_);
    for (const auto& [w, perLayer] : votes_)
        for (const at::Tensor& t : perLayer) total += t.numel() * t.element_size();
    for (const auto& [key, t] : memo_) total += t.numel() * t.element_size();
    return total;
}

}  // namespace kvlens
