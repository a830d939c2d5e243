// Scores compression runs against FullKV on one captured prompt: the full-cache
// greedy continuation and its per-step logits are computed once (recording each
// step's most-attended prompt positions for the hit rate), then each selection
// is gathered, decoded greedily and teacher-forced, and measured.
#pragma once

#include <memory>

#include "engine/compress/Capture.h"
#include "engine/compress/DecodeCompressor.h"
#include "engine/model/LlamaModel.h"
#include "core/RunMetrics.h"
#include "core/Selection.h"
#include "engine/analysis/HitRate.h"

namespace kvlens {

class MethodEvaluator {
public:
    // The hit rate counts each query head's top `hitK` prompt positions (at most
    // the prompt length) at every step.
    static constexpr int64_t kHitK = 16;
    // `progress` hears every decode step of the full-cache continuation, here and
    // in each evaluate() (it may throw to stop the work).
    // `suffix`: tokens fed on every cache (the full one and each compressed one) after
    // the captured prompt and before the answer, as kvpress evaluates by default: the
    // context alone is compressed, then the question is appended to what was kept.
    // The capture must have room for them and the answer (Capture::fromPrefill's
    // newTokens). Empty: the answer follows the prompt (the question inside it).
    MethodEvaluator(LlamaModel& model, std::shared_ptr<const Capture> capture, int64_t newTokens,
                    ProgressFn progress = {}, std::vector<int32_t> suffix = {});

    // Selects with `params`, gathers, decodes and measures.
    RunMetrics evaluate(const PressParams& params);
    RunMetrics evaluate(const Selection& selection, double selectSeconds = 0.0);
    // The same, compressing the cache during decoding as `decode` says (its step count
    // starts anew; the teacher-forced and the greedy run each keep their own).
    RunMetrics evaluate(const Selection& selection, const DecodeCompressor& decode, double selectSeconds = 0.0);

    // Replaces the progress callback the decode steps report to.
    void setProgress(ProgressFn progress) { progress_ = std::move(progress); }

    const std::vector<int32_t>& fullTokens() const { return fullTokens_; }
    const Capture& capture() const { return *capture_; }

private:
    RunMetrics run(const Selection& selection, const DecodeCompressor* decode, double selectSeconds);

    LlamaModel& model_;
    std::shared_ptr<const Capture> capture_;
    int64_t n_;
    ProgressFn progress_;
    std::vector<int32_t> suffix_;
    std::vector<int32_t> fullTokens_;    // y_1 .. y_n
    std::vector<at::Tensor> fullLogits_;  // after feeding y_i: fp32 [vocab], i = 1..n
    int64_t fullBytes_ = 0;
    std::unique_ptr<HitRate> hitRate_;
};

}  // namespace kvlens
