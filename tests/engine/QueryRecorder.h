// Every query (after RoPE) of a forward pass, per layer, [positions, heads, headDim] in double:
// what the references of the methods that need all prompt queries (H2O's sums, KVzip's
// reconstruction) read, recorded by a plain forward rather than by the capture's replay.
#pragma once

#include <ATen/ATen.h>

#include <vector>

#include "engine/model/LlamaModel.h"

namespace kvlens::test {

class QueryRecorder : public ForwardObserver {
public:
    QueryRecorder(int64_t layers, int64_t positions) : queries(layers), positions_(positions) {}
    void onQueries(int64_t layer, const at::Tensor& q, int64_t p0) override {
        if (!queries[layer].defined()) queries[layer] = at::zeros({positions_, q.size(1), q.size(2)}, at::kDouble);
        queries[layer].narrow(0, p0, q.size(0)).copy_(q.to(at::kDouble));
    }
    std::vector<at::Tensor> queries;

private:
    int64_t positions_;
};

}  // namespace kvlens::test
