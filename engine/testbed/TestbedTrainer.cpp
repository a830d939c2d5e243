#include "engine/testbed/TestbedTrainer.h"

#include <chrono>
#include <cmath>

#include "core/Error.h"
#include "engine/testbed/TestbedVocabulary.h"

namespace kvlens {

TestbedTrainer::TestbedTrainer(const TestbedTrainingOptions& options)
    : options_(options), vocab_(TestbedVocabulary::standard()) {
    if (options_.stages.empty()) throw Error("testbed: no training stages");
    for (const TestbedStage& s : options_.stages) {
        if (s.length > options_.shape.context) {
            throw Error("testbed: a stage of " + std::to_string(s.length) + " tokens exceeds the context of " +
                        std::to_string(options_.shape.context));
        }
    }
    tokenizer_ = std::make_unique<LlamaTokenizer>(vocab_, "testbed vocabulary");
    model_ = std::make_shared<TestbedModel>(options_.shape, static_cast<int64_t>(vocab_.tokens.size()), options_.seed);
    if (!options_.init.empty()) model_->loadGguf(options_.init);
    curriculum_ = std::make_unique<TestbedCurriculum>(*tokenizer_, options_.seed + 1, options_.lmWeight);
}

TestbedTrainer::~TestbedTrainer() = default;

int64_t TestbedTrainer::totalSteps() const {
    int64_t n = 0;
    for (const TestbedStage& s : options_.stages) n += s.steps;
    return n;
}

void TestbedTrainer::save(const std::string& path, int64_t steps) const {
    const TestbedShape& s = options_.shape;
    std::string stages;
    for (const TestbedStage& st : options_.stages)
        stages += (stages.empty() ? "" : ",") + std::to_string(st.length) + "x" + std::to_string(st.batch) + "x" +
                  std::to_string(st.steps);
    model_->writeGguf(path, vocab_,
                      {{"seed", std::to_string(options_.seed)},
                       {"init", options_.init.empty() ? "(none: from the seed)" : options_.init},
                       {"steps", std::to_string(steps) + " of " + std::to_string(totalSteps())},
                       {"stages", stages},
                       {"shape", std::to_string(s.layers) + " layers, width " + std::to_string(s.embed) + ", " +
                                     std::to_string(s.heads) + " heads, " + std::to_string(s.kvHeads) +
                                     " KV heads, ffn " + std::to_string(s.ffn)}});
}

std::vector<TestbedStepRecord> TestbedTrainer::run(const std::function<void(const TestbedStepRecord&)>& onStep) {
    torch::optim::AdamW optimizer(model_->parameters(),
                                  torch::optim::AdamWOptions(options_.learningRate).betas({0.9, 0.95}).weight_decay(0.1));
    const int64_t total = totalSteps();
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<TestbedStepRecord> records;
    int64_t step = 0;
    for (const TestbedStage& stage : options_.stages) {
        for (int64_t i = 0; i < stage.steps; ++i) {
            ++step;
            const double warm = std::min(1.0, double(step) / double(std::max<int64_t>(1, options_.warmup)));
            const double progress = double(step - 1) / double(std::max<int64_t>(1, total - 1));
            const double lr = options_.learningRate * warm * (0.1 + 0.9 * 0.5 * (1.0 + std::cos(M_PI * progress)));
            for (auto& group : optimizer.param_groups())
                static_cast<torch::optim::AdamWOptions&>(group.options()).lr(lr);

            const TestbedBatch batch = curriculum_->batch(stage);
            const at::Tensor logits = model_->forward(batch.ids);
            const int64_t V = logits.size(-1);
            const at::Tensor ce = at::cross_entropy_loss(logits.reshape({-1, V}), batch.targets.reshape({-1}),
                                                         {}, at::Reduction::None)
                                      .view(batch.weights.sizes());
            const at::Tensor loss = (ce * batch.weights).sum() / batch.weights.sum().clamp_min(1e-6);
            optimizer.zero_grad();
            loss.backward();
            torch::nn::utils::clip_grad_norm_(model_->parameters(), 1.0);
            optimizer.step();

            TestbedStepRecord r;
            r.step = step;
            r.length = stage.length;
            r.learningRate = lr;
            r.loss = loss.item<double>();
            {
                at::NoGradGuard ng;
                const at::Tensor right = logits.argmax(-1).eq(batch.targets);
                double aRight = 0, aCount = 0, aLoss = 0, cRight = 0, cCount = 0, exact = 0, rows = 0;
                for (int64_t b = 0; b < batch.ids.size(0); ++b) {
                    const at::Tensor m = batch.answer[b];
                    const double n = m.sum().item<double>();
                    if (n == 0) continue;
                    const double k = right[b].masked_select(m).sum().item<double>();
                    if (batch.copy[b]) {
                        cRight += k;
                        cCount += n;
                    } else {
                        aRight += k;
                        aCount += n;
                        aLoss += ce[b].masked_select(m).sum().item<double>();
                        exact += k == n ? 1.0 : 0.0;
                        rows += 1;
                    }
                }
                r.answerAccuracy = aCount > 0 ? aRight / aCount : 0.0;
                r.answerLoss = aCount > 0 ? aLoss / aCount : 0.0;
                r.answerExact = rows > 0 ? exact / rows : 0.0;
                r.copyAccuracy = cCount > 0 ? cRight / cCount : 0.0;
            }
            r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            records.push_back(r);
            if (onStep) onStep(r);
            if (!options_.out.empty() && options_.saveEvery > 0 && step % options_.saveEvery == 0)
                save(options_.out, step);
        }
    }
    if (!options_.out.empty()) save(options_.out, step);
    return records;
}

}  // namespace kvlens
