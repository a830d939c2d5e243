#include "engine/analysis/AttentionMap.h"

#include <c10/core/InferenceMode.h>

#include <cmath>
#include <limits>

#include "engine/compress/Capture.h"
#include "core/Error.h"
#include "kernels/CausalAttention.h"
#include "kernels/LayerSelection.h"

namespace kvlens {
namespace {

// The keys query head `head` reads, fp32 [T, D].
at::Tensor headKeys(const Capture& capture, int64_t layer, int64_t head) {
    const int64_t kvHead = head / (capture.queryHeads() / capture.kvHeads());
    return capture.keys(layer).select(0, kvHead).to(at::kFloat);
}

// Softmax rows [row0, row0 + n) of one head's causal attention (inside the layer's sliding
// window, if any; Gemma 2's logits soft-capped): fp32 [n, T] on the CPU.
at::Tensor attentionRows(const at::Tensor& q, const at::Tensor& k, int64_t row0, int64_t n, int64_t slidingWindow,
                         double softcap) {
    const int64_t T = k.size(0), D = k.size(1);
    at::Tensor scores = at::mm(q.narrow(0, row0, n), k.t()).mul_(1.0 / std::sqrt(double(D)));
    kernels::softcapLogits(scores, softcap);
    scores.masked_fill_(kernels::attentionMask(row0, n, T, slidingWindow, k.device()),
                        -std::numeric_limits<float>::infinity());
    return at::softmax(scores, -1).to(at::kCPU).contiguous();
}

}  // namespace

void AttentionMap::streamRows(const Capture& capture, int64_t layer, int64_t head, int64_t blockRows,
                              const RowSink& sink, const ProgressFn& progress) {
    c10::InferenceMode guard;
    if (blockRows < 1) throw Error("attention map: the row block must be at least 1 row");
    const at::Tensor& q = capture.queries(layer, head);  // throws when not kept
    const at::Tensor k = headKeys(capture, layer, head);
    const int64_t T = capture.promptLength();
    const std::string what = "attention map L" + std::to_string(layer) + " H" + std::to_string(head);
    for (int64_t r0 = 0; r0 < T; r0 += blockRows) {
        if (progress) progress(double(r0) / double(T), what);
        const int64_t n = std::min(blockRows, T - r0);
        const at::Tensor rows = attentionRows(q, k, r0, n, capture.slidingWindow(layer), capture.attentionSoftcap());
        sink(r0, n, rows.data_ptr<float>());
    }
    if (progress) progress(1.0, what);
}

std::vector<float> AttentionMap::region(const Capture& capture, int64_t layer, int64_t head, int64_t row0,
                                        int64_t row1, int64_t col0, int64_t col1) {
    const int64_t T = capture.promptLength();
    if (row0 < 0 || row1 > T || row0 >= row1 || col0 < 0 || col1 > T || col0 >= col1) {
        throw Error("attention map region [" + std::to_string(row0) + ", " + std::to_string(row1) + ") x [" +
                    std::to_string(col0) + ", " + std::to_string(col1) + ") is outside the " +
                    std::to_string(T) + " x " + std::to_string(T) + " map");
    }
    c10::InferenceMode guard;
    const at::Tensor& q = capture.queries(layer, head);
    const at::Tensor rows =
        attentionRows(q, headKeys(capture, layer, head), row0, row1 - row0, capture.slidingWindow(layer),
                      capture.attentionSoftcap())
            .narrow(1, col0, col1 - col0)
            .contiguous();
    return std::vector<float>(rows.data_ptr<float>(), rows.data_ptr<float>() + rows.numel());
}

}  // namespace kvlens
