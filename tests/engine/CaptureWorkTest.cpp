// The work a method needs from the model beyond the prefill (CaptureWork): every method whose
// table line needs a replay of the prompt, W_o's value norms, a reconstruction or a second
// prefill has a piece of work that says so before it runs and nothing pending after; every
// other method has none. A need the table gains without a CaptureWork fails here.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "core/Methods.h"
#include "core/PressParams.h"
#include "engine/compress/Capture.h"
#include "engine/compress/CaptureWork.h"
#include "engine/compress/RepeatPrompt.h"
#include "engine/model/LlamaModel.h"
#include "engine/model/ModelSpec.h"
#include "engine/model/ModelWeights.h"

namespace kvlens {
namespace {

struct Fixture {
    ModelConfig config;
    std::unique_ptr<LlamaModel> model;

    Fixture() {
        config = ModelSpec::parse("random:tiny:layers=2").randomConfig();
        config.nKvHeads = 2;
        model = std::make_unique<LlamaModel>(config, ModelWeights::random(config, 5, c10::Device(c10::kCPU), c10::kFloat),
                                             c10::Device(c10::kCPU), c10::kFloat);
    }

    std::shared_ptr<Capture> capture() const {
        std::vector<int32_t> prompt(120);
        for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = int32_t((i * 29 + 5) % 400 + 3);
        std::shared_ptr<Capture> c = Capture::fromPrefill(*model, prompt);
        RepeatPrompt repeat;
        repeat.first = {7, 8, 9};
        repeat.later = {10, 11};
        repeat.suffix = {12};
        c->setRepeatPrompt(repeat);
        return c;
    }
};

TEST(CaptureWork, EveryNeedTheModelComputesIsAPieceOfWorkThatSaysSo) {
    Fixture f;
    const NeedSet computed = {Need::PromptReplay, Need::WoNorms, Need::Reconstruction, Need::SecondPrefill};
    for (const MethodInfo& m : methods::all()) {
        PressParams p;
        p.method = m.name;
        p.budget = 48;
        p.window = 8;
        p.repeatChunk = 64;
        p.finchChunk = 64;
        p.attnChunk = 32;
        p.lag = 16;
        const NeedSet needs = methods::effectiveNeeds(p);
        bool wants = false;
        for (int n = 0; n < int(Need::Count_); ++n) wants = wants || (needs.has(Need(n)) && computed.has(Need(n)));
        const std::shared_ptr<Capture> c = f.capture();
        const std::string pending = c->pendingWork(p);
        EXPECT_EQ(!pending.empty(), wants) << m.name << ": '" << pending << "'";
        if (!wants) continue;
        std::vector<std::string> said;
        c->keepScoresFor(*f.model, p, [&](double, const std::string& what) { said.push_back(what); });
        EXPECT_EQ(c->pendingWork(p), "") << m.name << ": still pending after keepScoresFor";
        // The same work is not done twice: nothing more to say on a second call.
        said.clear();
        c->keepScoresFor(*f.model, p, [&](double, const std::string& what) { said.push_back(what); });
        EXPECT_TRUE(said.empty()) << m.name;
        // A budget that holds the whole prompt ranks nothing (H2O's own decode form aside).
        p.budget = 120;
        EXPECT_EQ(f.capture()->pendingWork(p).empty(), m.id != MethodId::H2o) << m.name;
    }
}

}  // namespace
}  // namespace kvlens
