#include "engine/LlamaModel.h"

#include <c10/core/InferenceMode.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "engine/Error.h"

namespace kvlens {

LlamaModel::LlamaModel(ModelConfig config, ModelWeights weights, c10::Device device,
                       c10::ScalarType dtype)
    : config_(std::move(config)), weights_(std::move(weights)), device_(device), dtype_(dtype) {
    const int64_t half = config_.ropeDim / 2;
    std::vector<float> inv(half);
    for (int64_t i = 0; i < half; ++i) {
        inv[i] = static_cast<float>(
            std::pow(config_.ropeTheta, -2.0 * double(i) / double(config_.ropeDim)));
    }
    invFreq_ = at::tensor(inv, at::kFloat).to(device_);
}

KvCache LlamaModel::makeCache(int64_t capacity) const {
    return KvCache(config_.nLayers, config_.nKvHeads, config_.headDim, capacity, dtype_, device_);
}

int64_t LlamaModel::queryBlockSize(int64_t keys) const {
    const int64_t perQuery = config_.nHeads * std::max<int64_t>(keys, 1) * 4;
    return std::clamp<int64_t>(blockBytes_ / perQuery, 1, 1024);
}

at::Tensor LlamaModel::rmsNorm(const at::Tensor& x, const at::Tensor& weight) const {
    // x is the fp32 residual stream.
    return x * at::rsqrt(x.pow(2).mean(-1, true) + config_.rmsEps) * weight;
}

at::Tensor LlamaModel::applyRope(const at::Tensor& x, const at::Tensor& cos,
                                 const at::Tensor& sin) const {
    // x: [T, heads, headDim]; cos/sin: [T, 1, ropeDim/2]. Rotation in fp32.
    const int64_t T = x.size(0), nh = x.size(1), D = x.size(2), R = config_.ropeDim;
    at::Tensor xf = x.to(at::kFloat);
    at::Tensor rot = xf.narrow(2, 0, R);
    at::Tensor out;
    if (config_.ropeStyle == RopeStyle::Adjacent) {
        at::Tensor pairs = rot.reshape({T, nh, R / 2, 2});
        at::Tensor x0 = pairs.select(3, 0), x1 = pairs.select(3, 1);
        out = at::stack({x0 * cos - x1 * sin, x0 * sin + x1 * cos}, 3).reshape({T, nh, R});
    } else {
        at::Tensor x0 = rot.narrow(2, 0, R / 2), x1 = rot.narrow(2, R / 2, R / 2);
        out = at::cat({x0 * cos - x1 * sin, x0 * sin + x1 * cos}, 2);
    }
    if (R < D) out = at::cat({out, xf.narrow(2, R, D - R)}, 2);
    return out.to(dtype_);
}

at::Tensor LlamaModel::attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                 int64_t firstPosition) const {
    // q: [T, H, D]; k, v: [KV, S, D] with S = firstPosition + T.
    const int64_t T = q.size(0), H = q.size(1), D = q.size(2);
    const int64_t KV = k.size(0), G = H / KV;
    const double scale = 1.0 / std::sqrt(double(D));
    // Query heads of one group are contiguous: head h reads KV head h / G.
    at::Tensor qg = q.permute({1, 0, 2}).reshape({KV, G, T, D});
    at::Tensor out = at::empty({KV, G, T, D}, q.options());
    const int64_t block = queryBlockSize(firstPosition + T);
    const auto posOpts = at::TensorOptions().dtype(at::kLong).device(device_);
    for (int64_t b0 = 0; b0 < T; b0 += block) {
        const int64_t nb = std::min(block, T - b0);
        const int64_t S = firstPosition + b0 + nb;  // keys the block's last query sees
        at::Tensor qb = qg.narrow(2, b0, nb).reshape({KV, G * nb, D});
        at::Tensor kb = k.narrow(1, 0, S), vb = v.narrow(1, 0, S);
        at::Tensor scores = at::bmm(qb, kb.transpose(1, 2)).to(at::kFloat).mul_(scale);
        if (nb > 1 || S > firstPosition + b0 + 1) {
            // Query i of the block sits at position firstPosition + b0 + i.
            at::Tensor qpos = at::arange(firstPosition + b0, firstPosition + b0 + nb, posOpts);
            at::Tensor kpos = at::arange(0, S, posOpts);
            at::Tensor masked = kpos.unsqueeze(0) > qpos.unsqueeze(1);  // [nb, S]
            scores = scores.view({KV, G, nb, S})
                         .masked_fill_(masked, -std::numeric_limits<float>::infinity())
                         .view({KV, G * nb, S});
        }
        at::Tensor probs = at::softmax(scores, -1).to(dtype_);
        out.narrow(2, b0, nb).copy_(at::bmm(probs, vb).view({KV, G, nb, D}));
    }
    return out.view({H, T, D}).permute({1, 0, 2}).reshape({T, H * D});
}

at::Tensor LlamaModel::forward(const std::vector<int32_t>& tokens, KvCache& cache, bool allLogits) {
    c10::InferenceMode guard;
    const int64_t T = static_cast<int64_t>(tokens.size());
    const int64_t p0 = cache.length();
    const ModelConfig& c = config_;
    if (T == 0) throw Error("no tokens to run");
    for (int32_t id : tokens) {
        if (id < 0 || id >= c.vocabSize) {
            throw Error("token id " + std::to_string(id) + " is outside the vocabulary of " +
                        std::to_string(c.vocabSize));
        }
    }
    std::vector<int64_t> ids(tokens.begin(), tokens.end());
    at::Tensor idx = at::tensor(ids, at::kLong).to(device_);
    at::Tensor x = weights_.tokenEmbedding.index_select(0, idx).to(at::kFloat);  // [T, E]

    at::Tensor pos = at::arange(p0, p0 + T, at::TensorOptions().dtype(at::kFloat).device(device_));
    at::Tensor angles = pos.unsqueeze(1) * invFreq_.unsqueeze(0);  // [T, R/2]
    at::Tensor cos = angles.cos().unsqueeze(1), sin = angles.sin().unsqueeze(1);

    for (int64_t l = 0; l < c.nLayers; ++l) {
        const LayerWeights& L = weights_.layers[l];
        at::Tensor h = rmsNorm(x, L.attnNorm).to(dtype_);
        at::Tensor q = L.bq.defined() ? at::linear(h, L.wq, L.bq) : at::linear(h, L.wq);
        at::Tensor k = L.bk.defined() ? at::linear(h, L.wk, L.bk) : at::linear(h, L.wk);
        at::Tensor v = L.bv.defined() ? at::linear(h, L.wv, L.bv) : at::linear(h, L.wv);
        q = applyRope(q.view({T, c.nHeads, c.headDim}), cos, sin);
        k = applyRope(k.view({T, c.nKvHeads, c.headDim}), cos, sin);
        v = v.view({T, c.nKvHeads, c.headDim});
        cache.append(l, k.transpose(0, 1), v.transpose(0, 1));
        at::Tensor a = attention(q, cache.keys(l), cache.values(l), p0);
        x = x + at::linear(a, L.wo).to(at::kFloat);

        h = rmsNorm(x, L.ffnNorm).to(dtype_);
        at::Tensor gate = at::linear(h, L.wGate), up = at::linear(h, L.wUp);
        at::Tensor act = (at::silu(gate.to(at::kFloat)) * up.to(at::kFloat)).to(dtype_);
        x = x + at::linear(act, L.wDown).to(at::kFloat);
    }
    at::Tensor last = allLogits ? x : x.narrow(0, T - 1, 1);
    at::Tensor logits = at::linear(rmsNorm(last, weights_.outputNorm).to(dtype_), weights_.output)
                            .to(at::kFloat)
                            .to(at::kCPU);
    return allLogits ? logits : logits[0];
}

}  // namespace kvlens
