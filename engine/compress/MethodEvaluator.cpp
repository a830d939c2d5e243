#include "engine/compress/MethodEvaluator.h"

#include <chrono>
#include <cmath>

#include "core/Error.h"
#include "engine/model/Sampler.h"
#include "engine/compress/presses/Press.h"

namespace kvlens {
namespace {

double now() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

int32_t greedyToken(const at::Tensor& logits) {
    return Sampler::argmax(logits.data_ptr<float>(), logits.numel());
}

// KL(p || q) of the softmaxes of two logit vectors, in double.
double klDivergence(const at::Tensor& p, const at::Tensor& q) {
    at::Tensor lp = at::log_softmax(p.to(at::kDouble), -1), lq = at::log_softmax(q.to(at::kDouble), -1);
    return std::max(0.0, (lp.exp() * (lp - lq)).sum().item<double>());
}

Selection fullSelection(const Capture& capture) {
    PressParams full;
    full.method = "full";
    return Press::create("full")->select(capture, full);
}

}  // namespace

MethodEvaluator::MethodEvaluator(LlamaModel& model, std::shared_ptr<const Capture> capture,
                                 int64_t newTokens, ProgressFn progress, std::vector<int32_t> suffix)
    : model_(model), capture_(std::move(capture)), n_(newTokens), progress_(std::move(progress)),
      suffix_(std::move(suffix)) {
    if (n_ < 1) throw Error("-n must be at least 1 to compare outputs");
    if (capture_->prompt().empty()) throw Error("outputs need a capture made by a model prefill");
    const int64_t room = model_.config().contextLength - capture_->promptLength();
    const int64_t extra = static_cast<int64_t>(suffix_.size());
    if (n_ + extra > room) {
        throw Error("-n " + std::to_string(n_) + (extra ? " after " + std::to_string(extra) + " question tokens" : "") +
                    " does not fit: the prompt leaves " + std::to_string(room) + " tokens of the model's context");
    }
    // The full cache's continuation, decoded on a compressed cache that kept
    // everything (bit-identical to the plain cache).
    CompressedCache cache(*capture_, fullSelection(*capture_), n_ + extra);
    fullBytes_ = cache.bytes();
    hitRate_ = std::make_unique<HitRate>(capture_, n_, std::min(kHitK, capture_->promptLength()));
    at::Tensor first = capture_->lastLogits();
    for (int32_t t : suffix_) first = model_.decode(t, cache);
    int32_t token = greedyToken(first);
    for (int64_t i = 0; i < n_; ++i) {
        if (progress_) progress_(double(i) / double(n_), "full-cache decode, step " + std::to_string(i + 1));
        fullTokens_.push_back(token);
        at::Tensor logits = model_.decode(token, cache, hitRate_->stepObserver(i));
        fullLogits_.push_back(logits);
        token = greedyToken(logits);
    }
}

RunMetrics MethodEvaluator::evaluate(const PressParams& params) {
    const double t0 = now();
    capture_->keepScoresFor(model_, params, progress_);
    Selection selection = Press::create(params.method)->select(*capture_, params);
    return evaluate(selection, now() - t0);
}

RunMetrics MethodEvaluator::evaluate(const Selection& selection, double selectSeconds) {
    return run(selection, nullptr, selectSeconds);
}

RunMetrics MethodEvaluator::evaluate(const Selection& selection, const DecodeCompressor& decode,
                                     double selectSeconds) {
    return run(selection, &decode, selectSeconds);
}

RunMetrics MethodEvaluator::run(const Selection& selection, const DecodeCompressor* decode, double selectSeconds) {
    RunMetrics m;
    m.selectSeconds = selectSeconds;
    m.fullTokens = fullTokens_;
    m.fullBytes = fullBytes_;

    double t0 = now();
    CompressedCache forced(*capture_, selection, n_ + static_cast<int64_t>(suffix_.size()));
    // A cache that drops rows while decoding cannot read the capture's own buffers.
    if (decode && forced.borrowsCapture()) forced = forced.clone();
    m.gatherSeconds = now() - t0;
    m.bytes = forced.bytes();
    m.allocatedBytes = forced.allocatedBytes();
    m.ratio = double(m.bytes) / double(m.fullBytes);
    const HitRate::Result hit = hitRate_->of(selection, selection.params.window);
    m.hitRate = hit.mean;
    m.hitRatePerLayer = hit.perLayer;
    m.hitK = hitRate_->k();
    m.hitSteps = hitRate_->steps();
    for (int64_t l = 0; l < forced.layers(); ++l) {
        m.bytesPerLayer.push_back(forced.bytes(l));
        std::vector<int64_t> perHead;
        for (int64_t c = 0; c < forced.heads(); ++c) {
            perHead.push_back(forced.bytes(l, c));
        }
        m.bytesPerHead.push_back(std::move(perHead));
    }

    // Teacher-forced along the full continuation. The greedy run is the same
    // until its first divergence; there it forks off a copy of the cache.
    t0 = now();
    int64_t top1 = 0;
    std::unique_ptr<CompressedCache> free;
    // With compression during decoding, each cache has its own compressor (a fork
    // takes a copy of the forced one's, mid-count), and the greedy run's entries per head
    // (the cache's entries over layers x cache heads, rounded up: heads and layers may hold
    // different counts, as AdaKV's and PyramidKV's do) are recorded after each answer step.
    std::unique_ptr<DecodeCompressor> forcedRule, freeRule;
    if (decode) {
        forcedRule = std::make_unique<DecodeCompressor>(*decode);
        forcedRule->start(*capture_, selection, &model_);
    }
    auto perHead = [](const CompressedCache& c) {
        int64_t total = 0;
        for (int64_t l = 0; l < c.layers(); ++l)
            for (int64_t h = 0; h < c.heads(); ++h) total += c.length(l, h);
        const int64_t heads = c.layers() * c.heads();
        return (total + heads - 1) / heads;
    };
    auto fork = [&] {
        free = std::make_unique<CompressedCache>(forced.clone());
        if (forcedRule) freeRule = std::make_unique<DecodeCompressor>(*forcedRule);
    };
    auto stepForced = [&](int32_t token) {
        at::Tensor logits = model_.decode(token, forced, forcedRule.get());
        if (forcedRule) forcedRule->afterStep(forced);
        return logits;
    };
    auto stepFree = [&](int32_t token) {
        at::Tensor logits = model_.decode(token, *free, freeRule.get());
        if (freeRule) freeRule->afterStep(*free);
        return logits;
    };
    const at::Tensor ownLogits = capture_->prefilledCache(selection.params).lastLogits;
    if (suffix_.empty() && ownLogits.defined()) {
        // Finch prefilled the prompt itself: the logits after it, and so the first answer
        // token, are its own.
        const int32_t first = greedyToken(ownLogits);
        if (first != fullTokens_[0]) {
            fork();
            m.tokens.push_back(first);
        }
    }
    if (!suffix_.empty()) {
        // The question on what was kept: its first answer token is this cache's own
        // (without a suffix it is the prefill's, the same for every method).
        at::Tensor logits;
        for (int32_t t : suffix_) logits = stepForced(t);
        const int32_t first = greedyToken(logits);
        if (first != fullTokens_[0]) {
            fork();
            m.tokens.push_back(first);
        }
    }
    for (int64_t i = 0; i < n_; ++i) {
        if (progress_) progress_(double(i) / double(n_), "compressed decode, step " + std::to_string(i + 1));
        at::Tensor logits = stepForced(fullTokens_[i]);
        m.klPerStep.push_back(klDivergence(fullLogits_[i], logits));
        const int32_t mine = greedyToken(logits), theirs = greedyToken(fullLogits_[i]);
        if (mine == theirs) ++top1;
        if (decode && !free && i + 1 < n_) m.cacheEntries.push_back(perHead(forced));
        if (!free && i + 1 < n_) {
            m.tokens.push_back(fullTokens_[i]);
            if (mine != theirs) {
                fork();
                m.tokens.push_back(mine);
            }
        }
    }
    if (!free) m.tokens.push_back(fullTokens_[n_ - 1]);
    while (free && static_cast<int64_t>(m.tokens.size()) < n_) {
        m.tokens.push_back(greedyToken(stepFree(m.tokens.back())));
        if (decode) m.cacheEntries.push_back(perHead(*free));
    }
    m.decodeSeconds = now() - t0;
    m.decodeEvery = decode ? decode->every() : 0;

    m.agreedPrefix = 0;
    while (m.agreedPrefix < n_ && m.tokens[m.agreedPrefix] == fullTokens_[m.agreedPrefix]) ++m.agreedPrefix;
    int64_t equal = 0;
    for (int64_t i = 0; i < n_; ++i) equal += m.tokens[i] == fullTokens_[i];
    m.tokenAgreement = double(equal) / double(n_);
    double kl = 0.0;
    for (double k : m.klPerStep) kl += k;
    m.meanKl = kl / double(n_);
    m.top1Agreement = double(top1) / double(n_);
    return m;
}

}  // namespace kvlens
