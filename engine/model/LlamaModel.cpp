#include "engine/model/LlamaModel.h"

#include <c10/core/InferenceMode.h>
#include <torch/version.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/Error.h"
#include "engine/model/CachingHostAllocator.h"
#include "engine/model/RopeFrequencies.h"
#include "kernels/CausalAttention.h"
#include "kernels/GeluMul.h"
#include "kernels/Linear.h"
#include "kernels/RmsNorm.h"
#include "kernels/Rope.h"
#include "kernels/SiluMul.h"

namespace kvlens {
namespace {

void requireVocabulary(const std::vector<int32_t>& tokens, int64_t vocabSize) {
    for (int32_t id : tokens) {
        if (id < 0 || id >= vocabSize) {
            throw Error("token id " + std::to_string(id) + " is outside the vocabulary of " +
                        std::to_string(vocabSize));
        }
    }
}

}  // namespace

LlamaModel::LlamaModel(ModelConfig config, ModelWeights weights, c10::Device device,
                       c10::ScalarType dtype)
    : config_(std::move(config)), weights_(std::move(weights)), device_(device), dtype_(dtype) {
    CachingHostAllocator::install();  // a forward's large temporaries reuse their pages
    std::vector<float> factors;
    if (weights_.ropeFreqFactors.defined()) {
        const at::Tensor f = weights_.ropeFreqFactors.to(at::kCPU, at::kFloat).contiguous();
        factors.assign(f.data_ptr<float>(), f.data_ptr<float>() + f.numel());
    }
    const RopeFrequencies rope = RopeFrequencies::of(config_, factors);
    invFreq_ = at::tensor(rope.inverse, at::kFloat).to(device_);
    ropeMagnitude_ = rope.magnitude;
    if (config_.localRopeTheta > 0.0) {
        // Gemma 3's local layers: their own base, no scaling (Hugging Face's rotary_emb_local).
        ModelConfig local = config_;
        local.ropeTheta = config_.localRopeTheta;
        local.ropeScaling = RopeScaling::None;
        localInvFreq_ = at::tensor(RopeFrequencies::of(local, {}).inverse, at::kFloat).to(device_);
    }
    // On the CPU a block's scores stay at 16 MB (fp32), so the softmax's passes over
    // them run in cache: a 4096-token prefill of the TinyLlama shape ran at 158.5
    // tokens/s with 64 MB blocks, 207.5 with 8 MB, 220.9 with 16 MB (42.7 with 2 MB,
    // where the GEMMs get too small: hence at least 16 queries a block, whatever the
    // keys). On a GPU the CPU's bound would cut a 32K-token prefill into blocks of
    // a few queries, each a few small kernels.
    if (device_.is_cuda()) blockBytes_ = 1ll << 30;
}

void LlamaModel::softcap(at::Tensor& logits, double cap) { kernels::softcapLogits(logits, cap); }

KvCache LlamaModel::makeCache(int64_t capacity) const {
    return KvCache(config_.nLayers, config_.nKvHeads, config_.headDim, capacity, dtype_, device_);
}

int64_t LlamaModel::queryBlockSize(int64_t keys) const {
    const int64_t perQuery = config_.nHeads * std::max<int64_t>(keys, 1) * 4;
    return std::clamp<int64_t>(blockBytes_ / perQuery, minQueryBlock_, 1024);
}

at::Tensor LlamaModel::attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                 int64_t firstPosition, int64_t window, at::Tensor* columnSums) const {
    // q: [T, H, D]; k, v: [KV, S, D] with S = firstPosition + T.
    const int64_t T = q.size(0), H = q.size(1), D = q.size(2);
    const int64_t KV = k.size(0), G = H / KV;
    const double scale = 1.0 / std::sqrt(double(D));
    const int64_t W = window;  // 0: none
    const double cap = config_.attnSoftcap;
#if TORCH_VERSION_MAJOR >= 2
    // On a GPU, a plain prefill from position 0 (no H2O sums wanted) is one
    // fused causal attention (LibTorch's flash or memory-efficient kernels).
    if (!columnSums && cap == 0.0 && q.is_cuda() && firstPosition == 0 && T > 1 && k.size(1) == T && (W == 0 || T <= W)) {
        const at::Tensor qq = q.permute({1, 0, 2}).unsqueeze(0);  // [1, H, T, D]
        const at::Tensor kk = (G > 1 ? k.repeat_interleave(G, 0) : k).unsqueeze(0);
        const at::Tensor vv = (G > 1 ? v.repeat_interleave(G, 0) : v).unsqueeze(0);
        const at::Tensor o = at::scaled_dot_product_attention(qq, kk, vv, {}, 0.0, true);
        return o.squeeze(0).permute({1, 0, 2}).reshape({T, H * D});
    }
#endif
    // Query heads of one group are contiguous: head h reads KV head h / G.
    at::Tensor qg = q.permute({1, 0, 2}).reshape({KV, G, T, D});
    at::Tensor out = at::empty({KV, G, T, D}, q.options());
    const int64_t block = queryBlockSize(firstPosition + T);
    const auto posOpts = at::TensorOptions().dtype(at::kLong).device(device_);
    at::Tensor sums;
    if (columnSums) {
        sums = at::zeros({KV, G, firstPosition + T}, q.options().dtype(at::kFloat));
    }
    // The scale goes on the queries once, not on every block's scores.
    const at::Tensor qScaled = qg.mul(scale);
    // H2O's fp32 scores read the keys in fp32: converted once, not once a block.
    const at::Tensor keys32 = columnSums && dtype_ != at::kFloat ? k.to(at::kFloat) : at::Tensor();
    for (int64_t b0 = 0; b0 < T; b0 += block) {
        const int64_t nb = std::min(block, T - b0);
        const int64_t S = firstPosition + b0 + nb;  // keys the block's last query sees
        // A sliding window W: query position p sees keys after p - W, so the block's keys
        // start after its first query's position - W, and a query further in the block
        // masks the keys before its own window.
        const int64_t first = firstPosition + b0;
        const int64_t k0 = W > 0 ? std::max<int64_t>(0, first - W + 1) : 0;
        const int64_t Sk = S - k0;
        at::Tensor kb = k.narrow(1, k0, Sk), vb = v.narrow(1, k0, Sk);
        // Query i of the block sits at position firstPosition + b0 + i and sees keys up to
        // it: only the block's own last nb keys can lie after one of its queries.
        const at::Tensor later =
            nb > 1 ? at::ones({nb, nb}, posOpts.dtype(at::kBool)).triu(1) : at::Tensor();  // [nb, nb]
        // Query i masks key column c (position k0 + c) when k0 + c <= first + i - W.
        const int64_t shift = first - W + 1 - k0;  // column bound of query 0
        const at::Tensor early = W > 0 && shift + nb - 1 > 0
                                     ? at::arange(Sk, posOpts).unsqueeze(0).lt(at::arange(nb, posOpts).unsqueeze(1) + shift)
                                     : at::Tensor();  // [nb, Sk]
        auto maskLater = [&](at::Tensor logits) {  // [KV, G, nb, Sk]
            softcap(logits, cap);  // before the mask, as llama.cpp and Hugging Face
            if (later.defined()) logits.narrow(3, Sk - nb, nb).masked_fill_(later, -std::numeric_limits<float>::infinity());
            if (early.defined()) logits.masked_fill_(early, -std::numeric_limits<float>::infinity());
            return logits;
        };
        at::Tensor logits = at::bmm(qScaled.narrow(2, b0, nb).reshape({KV, G * nb, D}), kb.transpose(1, 2));
        at::Tensor probs = at::softmax(maskLater(logits.view({KV, G, nb, Sk})), -1, at::kFloat);
        if (columnSums) {
            // H2O's scores come from fp32 logits, like the SnapKV votes, so its
            // ranking does not inherit bf16 rounding; the attention output keeps
            // the compute dtype's path, so a capture's prefill equals a plain one.
            at::Tensor exact =
                dtype_ == at::kFloat
                    ? probs
                    : at::softmax(maskLater(at::bmm(qg.narrow(2, b0, nb).reshape({KV, G * nb, D}).to(at::kFloat),
                                                    keys32.narrow(1, k0, Sk).transpose(1, 2))
                                                .mul_(scale)
                                                .view({KV, G, nb, Sk})),
                                  -1);
            sums.narrow(2, k0, Sk).add_(exact.sum(2));
        }
        probs = probs.to(dtype_).view({KV, G * nb, Sk});
        out.narrow(2, b0, nb).copy_(at::bmm(probs, vb).view({KV, G, nb, D}));
    }
    if (columnSums) *columnSums = sums.view({H, firstPosition + T});
    return out.view({H, T, D}).permute({1, 0, 2}).reshape({T, H * D});
}

at::Tensor LlamaModel::forward(const std::vector<int32_t>& tokens, KvCache& cache, bool allLogits,
                               const ProgressFn& progress, ForwardObserver* observer, int64_t stopAfterLayer) {
    return runChunked(tokens, cache.length(), allLogits, progress,
                      [&](int64_t p0) -> AttentionStep {
                          return [&, p0](int64_t l, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
                              if (observer) observer->onQueries(l, q, p0);
                              cache.append(l, k.transpose(0, 1), v.transpose(0, 1));
                              return observedAttention(l, q, cache.keys(l), cache.values(l), p0, observer);
                          };
                      },
                      stopAfterLayer);
}

void LlamaModel::replay(const std::vector<int32_t>& tokens, const KvCache& filled, ForwardObserver& observer,
                        const ProgressFn& progress, int64_t stopAfterLayer) {
    const int64_t T = static_cast<int64_t>(tokens.size());
    const int64_t layers = stopAfterLayer >= 0 ? std::min(stopAfterLayer + 1, config_.nLayers) : config_.nLayers;
    for (int64_t l = 0; l < layers; ++l) {
        if (l >= filled.layers() || filled.length(l) < T) {
            throw Error("a replay needs the keys and values of all " + std::to_string(T) +
                        " prompt tokens in layer " + std::to_string(l));
        }
    }
    runChunked(tokens, 0, false, progress,
               [&](int64_t p0) -> AttentionStep {
                   return [&, p0](int64_t l, const at::Tensor& q, const at::Tensor&, const at::Tensor&) {
                       observer.onQueries(l, q, p0);
                       const int64_t S = p0 + q.size(0);
                       return observedAttention(l, q, filled.keys(l).narrow(1, 0, S),
                                                filled.values(l).narrow(1, 0, S), p0, &observer);
                   };
               },
               layers - 1);
}

void LlamaModel::runAfter(const std::vector<int32_t>& tokens, const KvCache& filled, ForwardObserver& observer,
                          const ProgressFn& progress) {
    if (filled.layers() < config_.nLayers) {
        throw Error("running after a cache needs all " + std::to_string(config_.nLayers) + " layers' keys and values");
    }
    KvCache own(config_.nLayers, config_.nKvHeads, config_.headDim, std::max<int64_t>(1, int64_t(tokens.size())), dtype_,
                device_);
    runChunked(tokens, filled.length(), false, progress,
               [&](int64_t p0) -> AttentionStep {
                   return [&, p0](int64_t l, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
                       own.append(l, k.transpose(0, 1), v.transpose(0, 1));
                       observer.onKeys(l, own.keys(l));
                       observer.onQueries(l, q, p0);
                       // One layer's copy at a time: [KV, filled + own, D].
                       const at::Tensor keys = at::cat({filled.keys(l), own.keys(l)}, 1);
                       const at::Tensor values = at::cat({filled.values(l), own.values(l)}, 1);
                       return observedAttention(l, q, keys, values, p0, &observer);
                   };
               },
               config_.nLayers - 1);  // every layer, no logits
}

at::Tensor LlamaModel::observedAttention(int64_t layer, const at::Tensor& q, const at::Tensor& keys,
                                         const at::Tensor& values, int64_t firstPosition,
                                         ForwardObserver* observer) const {
    if (observer && observer->wantsAttentionColumnSums()) {
        at::Tensor sums;
        at::Tensor a = attention(q, keys, values, firstPosition, config_.windowAt(layer), &sums);
        observer->onAttentionColumnSums(layer, sums);
        return a;
    }
    const int64_t W = config_.windowAt(layer), T = q.size(0);
    // The fused kernel has no soft-capping: Gemma 2 takes the blocked path.
    const bool fused = config_.attnSoftcap == 0.0;
    if (W > 0 && firstPosition + T > W) {
        // Keys before the first query's window are seen by no query: left out. What is
        // left is masked by attention() when a later query's window starts further on;
        // a decode step (one query) sees exactly the last W keys, through the fused kernel.
        const int64_t start = std::max<int64_t>(0, firstPosition - W + 1);
        const at::Tensor k = keys.narrow(1, start, keys.size(1) - start), v = values.narrow(1, start, values.size(1) - start);
        const int64_t p = firstPosition - start;
        return fused && p + T <= W && kernels::useFusedAttention(q, k) ? kernels::causalAttention(q, k, v, p)
                                                                       : attention(q, k, v, p, W);
    }
    return fused && kernels::useFusedAttention(q, keys) ? kernels::causalAttention(q, keys, values, firstPosition)
                                                        : attention(q, keys, values, firstPosition, W);
}

at::Tensor LlamaModel::runChunked(const std::vector<int32_t>& tokens, int64_t p0, bool allLogits,
                                  const ProgressFn& progress, const StepAt& stepAt, int64_t stopAfterLayer) {
    const int64_t T = static_cast<int64_t>(tokens.size());
    if (T <= prefillChunk_) return run(tokens, p0, allLogits, progress, stepAt(p0), stopAfterLayer);
    requireVocabulary(tokens, config_.vocabSize);  // before the first chunk fills the cache
    const int64_t chunks = (T + prefillChunk_ - 1) / prefillChunk_;
    std::vector<at::Tensor> perChunk;
    at::Tensor last;
    for (int64_t c = 0; c < chunks; ++c) {
        const int64_t off = c * prefillChunk_, n = std::min(prefillChunk_, T - off);
        const std::vector<int32_t> part(tokens.begin() + off, tokens.begin() + off + n);
        ProgressFn sub;
        if (progress) {
            sub = [&, off, n, c](double f, const std::string& what) {
                progress((double(off) + f * double(n)) / double(T),
                         "chunk " + std::to_string(c + 1) + "/" + std::to_string(chunks) + ", " + what);
            };
        }
        last = run(part, p0 + off, allLogits, sub, stepAt(p0 + off), stopAfterLayer);
        if (allLogits && last.defined()) perChunk.push_back(last);
    }
    return allLogits && !perChunk.empty() ? at::cat(perChunk, 0) : last;
}

at::Tensor LlamaModel::decode(int32_t token, CompressedCache& cache, ForwardObserver* observer) {
    const int64_t position = cache.nextPosition();
    return run({token}, position, false, {},
               [&](int64_t l, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
                   if (observer) observer->onQueries(l, q, position);
                   cache.append(l, k, v);
                   return kernels::raggedAttention(q, cache.keys(l), cache.values(l), cache.headMap(),
                                                   config_.attnSoftcap);
               });
}

at::Tensor LlamaModel::run(const std::vector<int32_t>& tokens, int64_t p0, bool allLogits,
                           const ProgressFn& progress, const AttentionStep& attend, int64_t stopAfterLayer) {
    c10::InferenceMode guard;
    const int64_t T = static_cast<int64_t>(tokens.size());
    const ModelConfig& c = config_;
    if (T == 0) throw Error("no tokens to run");
    requireVocabulary(tokens, c.vocabSize);
    std::vector<int64_t> ids(tokens.begin(), tokens.end());
    // The residual stream stays fp32; matmul inputs are in the compute dtype.
    at::Tensor x = kernels::embeddingRows(weights_.tokenEmbedding, ids).to(device_);  // fp32 [T, E]
    if (c.embedScale != 1.0) x.mul_(c.embedScale);  // Gemma: sqrt(E), in fp32 as llama.cpp
    // Gemma's query_pre_attn_scalar: the queries scaled so that the attention's (and the
    // observers') 1/sqrt(D) gives the model's scale.
    const double queryFactor = c.queryScale > 0.0 ? c.queryScale * std::sqrt(double(c.headDim)) : 1.0;
    const int64_t qd = c.nHeads * c.headDim, kvd = c.nKvHeads * c.headDim;
    const bool halves = c.ropeStyle == RopeStyle::Halves;

    const int64_t layers = stopAfterLayer >= 0 ? std::min(stopAfterLayer + 1, c.nLayers) : c.nLayers;
    for (int64_t l = 0; l < layers; ++l) {
        if (progress) progress(double(l) / double(layers), "layer " + std::to_string(l));
        const LayerWeights& L = weights_.layers[l];
        at::Tensor h = kernels::rmsNorm(x, L.attnNorm, c.rmsEps, dtype_);
        at::Tensor qkv = kernels::linear(h, L.wqkv, L.bqkv);  // [T, qd + 2 kvd]
        at::Tensor q = qkv.narrow(1, 0, qd).view({T, c.nHeads, c.headDim});
        at::Tensor k = qkv.narrow(1, qd, kvd).view({T, c.nKvHeads, c.headDim});
        at::Tensor v = qkv.narrow(1, qd + kvd, kvd).view({T, c.nKvHeads, c.headDim});
        if (c.qkNorm) {
            // Qwen3: each head's q and k RMS-normalised (its own weight) before RoPE.
            q = kernels::rmsNorm(q.reshape({T * c.nHeads, c.headDim}).to(at::kFloat), L.qNorm, c.rmsEps, dtype_)
                    .view({T, c.nHeads, c.headDim});
            k = kernels::rmsNorm(k.reshape({T * c.nKvHeads, c.headDim}).to(at::kFloat), L.kNorm, c.rmsEps, dtype_)
                    .view({T, c.nKvHeads, c.headDim});
        }
        if (c.localRope(l)) {
            kernels::rope(q, k, p0, localInvFreq_, c.ropeDim, halves, 1.0f);
        } else {
            kernels::rope(q, k, p0, invFreq_, c.ropeDim, halves, ropeMagnitude_);
        }
        if (queryFactor != 1.0) q.mul_(queryFactor);
        at::Tensor attn = kernels::linear(attend(l, q, k, v), L.wo, {}, at::kFloat);
        if (c.postNorms) attn = kernels::rmsNorm(attn, L.attnPostNorm, c.rmsEps, at::kFloat);
        x.add_(attn);

        h = kernels::rmsNorm(x, L.ffnNorm, c.rmsEps, dtype_);
        const at::Tensor gateUp = kernels::linear(h, L.wGateUp);
        at::Tensor act = c.activation == Activation::GeluTanhGate ? kernels::geluMul(gateUp) : kernels::siluMul(gateUp);
        at::Tensor mlp = kernels::linear(act, L.wDown, {}, at::kFloat);
        if (c.postNorms) mlp = kernels::rmsNorm(mlp, L.ffnPostNorm, c.rmsEps, at::kFloat);
        x.add_(mlp);
    }
    if (progress) progress(1.0, "done");
    if (stopAfterLayer >= 0) return at::Tensor();
    at::Tensor last = allLogits ? x : x.narrow(0, T - 1, 1);
    at::Tensor logits = kernels::linear(kernels::rmsNorm(last, weights_.outputNorm, c.rmsEps, dtype_),
                                        weights_.output, {}, at::kFloat);
    softcap(logits, c.finalSoftcap);  // Gemma 2
    logits = logits.to(at::kCPU);
    return allLogits ? logits : logits[0];
}

}  // namespace kvlens
