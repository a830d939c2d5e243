// Trains the testbed model (TestbedModel) on its curriculum with AdamW on the CPU,
// reproducibly from a seed: the weights, the rows and their order all come from it.
// Each step's loss and accuracies are reported (the training curve); the model is
// written as GGUF at every save point and at the end, so a stopped run keeps the last.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/testbed/TestbedCurriculum.h"
#include "engine/testbed/TestbedModel.h"

namespace kvlens {

struct TestbedTrainingOptions {
    uint64_t seed = 1;
    TestbedShape shape;
    std::vector<TestbedStage> stages = TestbedCurriculum::standardStages();
    double learningRate = 3e-3;   // peak, after a linear warm-up, cosine to a tenth
    int64_t warmup = 100;
    double lmWeight = 0.1;        // of the tokens that are not answers or copies
    std::string out;              // the GGUF; empty: not written
    std::string init;             // a GGUF to start from (a testbed of the same shape); empty: from the seed
    int64_t saveEvery = 100;
};

struct TestbedStepRecord {
    int64_t step = 0;         // 1-based, over all stages
    int64_t length = 0;       // the stage's row length
    double learningRate = 0;
    double loss = 0;          // weighted cross-entropy of the step
    double answerLoss = 0;    // cross-entropy over the needle tasks' answer tokens
    double answerAccuracy = 0;  // answer tokens right (teacher forced)
    double answerExact = 0;   // needle rows whose whole answer is right
    double copyAccuracy = 0;  // copied tokens right
    double seconds = 0;       // since the start
};

class TestbedTrainer {
public:
    explicit TestbedTrainer(const TestbedTrainingOptions& options);
    ~TestbedTrainer();

    int64_t totalSteps() const;
    // Runs every stage; `onStep` hears each step's record. Returns them all.
    std::vector<TestbedStepRecord> run(const std::function<void(const TestbedStepRecord&)>& onStep = {});

    TestbedModel& model() { return *model_; }
    const LlamaVocab& vocab() const { return vocab_; }
    const LlamaTokenizer& tokenizer() const { return *tokenizer_; }
    void save(const std::string& path, int64_t steps) const;

private:
    TestbedTrainingOptions options_;
    LlamaVocab vocab_;
    std::unique_ptr<LlamaTokenizer> tokenizer_;
    std::shared_ptr<TestbedModel> model_;
    std::unique_ptr<TestbedCurriculum> curriculum_;
};

}  // namespace kvlens
