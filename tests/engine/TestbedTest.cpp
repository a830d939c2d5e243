// The retrieval testbed: its vocabulary spells every task word as one token; the
// model written as GGUF runs through the ordinary loader and forward pass with the
// logits the training module computes; training from a seed repeats and its loss falls.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "core/Error.h"
#include "engine/eval/NeedleTask.h"
#include "engine/gguf/GgufFile.h"
#include "engine/gguf/GgufWriter.h"
#include "engine/model/ModelLoader.h"
#include "engine/testbed/TestbedTrainer.h"
#include "engine/testbed/TestbedVocabulary.h"
#include "support/TinyModelFile.h"

namespace kvlens {
namespace {

TEST(TestbedVocabulary, EveryTaskWordIsOneTokenAfterASpaceAndAfterPunctuation) {
    const LlamaTokenizer t(TestbedVocabulary::standard(), "testbed");
    std::stringstream words(needleTaskBuiltInText());
    int checked = 0;
    for (std::string w; words >> w;) {
        while (!w.empty() && std::ispunct(static_cast<unsigned char>(w.back()))) w.pop_back();
        if (w.empty() || w.find('-') != std::string::npos) continue;
        EXPECT_EQ(t.encode(w, false).size(), 1u) << w;            // "▁w"
        EXPECT_EQ(t.encode("x-" + w, false).size(), 3u) << w;     // "▁x" "-" "w"
        ++checked;
    }
    EXPECT_GT(checked, 300);
    // Anything else still round-trips: letters, then bytes.
    const std::string odd = "Zebras über 42 {x}\n\ttabs";
    EXPECT_EQ(t.decode(t.encode(odd, false)), " " + odd);  // the space prefix
}

TEST(TestbedVocabulary, TaskPromptsNeedNoByteTokensButForNewlines) {
    const LlamaVocab v = TestbedVocabulary::standard();
    const LlamaTokenizer t(v, "testbed");
    for (const char* kind : {"single", "multikey", "multivalue", "multiquery", "kv", "vt"}) {
        NeedleSpec spec;
        spec.kind = needleKindNamed(kind);
        spec.tokens = 600;
        const NeedleSample s = makeNeedleSample(spec, t);
        int bytes = 0;
        for (int32_t id : s.tokens) bytes += v.types[static_cast<size_t>(id)] == LlamaTokenType::Byte;
        const std::string p = s.prompt();
        EXPECT_EQ(bytes, std::count(p.begin(), p.end(), '\n')) << kind;
    }
}

TestbedShape smallShape() {
    TestbedShape s;
    s.layers = 2;
    s.embed = 32;
    s.heads = 4;
    s.kvHeads = 2;
    s.ffn = 48;
    s.context = 512;
    return s;
}

TEST(TestbedModel, ItsGgufRunsThroughTheOrdinaryLoaderWithTheSameLogits) {
    const LlamaVocab vocab = TestbedVocabulary::standard();
    TestbedModel m(smallShape(), static_cast<int64_t>(vocab.tokens.size()), 3);
    // Move the norms off 1 so a swapped or missing norm would show.
    {
        at::NoGradGuard ng;
        for (auto& p : m.named_parameters())
            if (p.key().find("norm") != std::string::npos) p.value().uniform_(0.5, 1.5);
    }
    const std::string path = test::testOutputPath("testbed_small.gguf");
    m.writeGguf(path, vocab, {{"seed", "3"}});

    LoadedModel loaded = loadModel(path, c10::Device(c10::kCPU), c10::kFloat);
    const std::vector<int32_t> ids = loaded.tokenizer->encode(
        "One of the special magic numbers for silent-harbor is: 4821937. The river bends twice.", true);
    KvCache cache = loaded.model->makeCache(4);
    const at::Tensor got = loaded.model->forward(ids, cache, true);
    at::Tensor want;
    {
        at::NoGradGuard ng;
        want = m.forward(at::tensor(std::vector<int64_t>(ids.begin(), ids.end()), at::kLong).unsqueeze(0))[0];
    }
    ASSERT_EQ(got.sizes(), want.sizes());
    EXPECT_LT((got - want).abs().max().item<double>(), 1e-4);
    EXPECT_EQ(loaded.model->config().contextLength, 512);
    GgufFile file(path);
    EXPECT_EQ(file.getString("kvlens.testbed.seed"), "3");
    EXPECT_EQ(file.getString("general.name"), "kvlens-testbed");
}

TEST(TestbedModel, LoadingItsGgufContinuesFromTheSameWeights) {
    const LlamaVocab vocab = TestbedVocabulary::standard();
    const int64_t V = static_cast<int64_t>(vocab.tokens.size());
    TestbedModel a(smallShape(), V, 3), b(smallShape(), V, 4);
    const std::string path = test::testOutputPath("testbed_init.gguf");
    a.writeGguf(path, vocab, {});
    const at::Tensor ids = at::arange(40, at::kLong).unsqueeze(0) + 300;
    at::NoGradGuard ng;
    EXPECT_FALSE(at::equal(a.forward(ids), b.forward(ids)));
    b.loadGguf(path);
    EXPECT_TRUE(at::equal(a.forward(ids), b.forward(ids)));
    TestbedShape wider = smallShape();
    wider.embed = 64;
    TestbedModel c(wider, V, 1);
    try {
        c.loadGguf(path);
        FAIL();
    } catch (const Error& e) {
        EXPECT_EQ(std::string(e.what()), path + ": tensor 'token_embd.weight' is not f32 of the testbed's shape");
    }
}

TEST(TestbedModel, ShapesThatDoNotDivideAreOneLine) {
    TestbedShape s = smallShape();
    s.kvHeads = 3;
    try {
        TestbedModel m(s, 100, 1);
        FAIL();
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "testbed: 4 heads, 3 KV heads and width 32 do not divide");
    }
}

TestbedTrainingOptions tinyRun(const std::string& out) {
    TestbedTrainingOptions o;
    o.shape = smallShape();
    o.stages = {{192, 4, 24, 0.5}};
    o.learningRate = 1e-2;
    o.warmup = 4;
    o.out = out;
    o.seed = 11;
    return o;
}

TEST(TestbedTrainer, TheLossFallsAndTheSeedRepeatsTheRun) {
    const std::string path = test::testOutputPath("testbed_trained.gguf");
    TestbedTrainer a(tinyRun(path));
    const std::vector<TestbedStepRecord> ra = a.run();
    ASSERT_EQ(ra.size(), 24u);
    double first = 0, last = 0;
    for (int i = 0; i < 4; ++i) {
        first += ra[static_cast<size_t>(i)].loss;
        last += ra[ra.size() - 1 - static_cast<size_t>(i)].loss;
    }
    EXPECT_LT(last, first * 0.8) << "first four steps " << first / 4 << ", last four " << last / 4;
    // The written model loads as any GGUF.
    LoadedModel loaded = loadModel(path, c10::Device(c10::kCPU), c10::kFloat);
    EXPECT_EQ(loaded.model->config().nLayers, 2);

    TestbedTrainingOptions o = tinyRun("");
    o.stages = {{192, 2, 3, 0.5}};
    TestbedTrainer b(o), c(o);
    const std::vector<TestbedStepRecord> rb = b.run(), rc = c.run();
    for (size_t i = 0; i < rb.size(); ++i) EXPECT_EQ(rb[i].loss, rc[i].loss) << "step " << i + 1;
}

TEST(TestbedTrainer, AStageLongerThanTheContextIsOneLine) {
    TestbedTrainingOptions o = tinyRun("");
    o.stages = {{1024, 1, 1, 0.0}};
    try {
        TestbedTrainer t(o);
        FAIL();
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "testbed: a stage of 1024 tokens exceeds the context of 512");
    }
}

TEST(GgufWriter, WritesWhatTheReaderReads) {
    GgufWriter w;
    w.addUInt32("a.u32", 7);
    w.addFloat32("a.f32", 0.5f);
    w.addBool("a.bool", true);
    w.addString("a.str", "hello");
    w.addStringArray("a.strs", {"x", "", "zz"});
    w.addFloat32Array("a.f32s", {1.5f, -2.0f});
    w.addInt32Array("a.i32s", {-3, 4});
    w.addTensor("t.f32", {3, 2}, GgufWriter::F32, {1, 2, 3, 4, 5, 6});
    w.addTensor("t.f16", {2}, GgufWriter::F16, {0.333333f, -65504.0f});
    const std::string path = test::testOutputPath("writer.gguf");
    w.write(path);
    GgufFile f(path);
    EXPECT_EQ(f.getUInt("a.u32"), 7u);
    EXPECT_EQ(f.getFloat("a.f32"), 0.5);
    EXPECT_TRUE(f.getBoolOr("a.bool", false));
    EXPECT_EQ(f.getString("a.str"), "hello");
    EXPECT_EQ(f.getStringArray("a.strs"), (std::vector<std::string>{"x", "", "zz"}));
    EXPECT_EQ(f.getNumberArray("a.f32s"), (std::vector<double>{1.5, -2.0}));
    EXPECT_EQ(f.getNumberArray("a.i32s"), (std::vector<double>{-3, 4}));
    const GgufTensorInfo* t = f.findTensor("t.f32");
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(t->shape, (std::vector<int64_t>{3, 2}));
    const float* v = reinterpret_cast<const float*>(f.tensorData(*t));
    EXPECT_EQ(v[5], 6.0f);
    const GgufTensorInfo* h = f.findTensor("t.f16");
    ASSERT_NE(h, nullptr);
    const uint16_t* hv = reinterpret_cast<const uint16_t*>(f.tensorData(*h));
    EXPECT_EQ(hv[0], 0x3555);  // 0.333333 rounds to 0x3555 (0.33325)
    EXPECT_EQ(hv[1], 0xFBFF);  // -65504, the largest half
    EXPECT_FALSE(std::ifstream(path + ".part").good());

    try {
        w.write("/nonexistent-dir/x.gguf");
        FAIL();
    } catch (const Error& e) {
        EXPECT_EQ(std::string(e.what()), "/nonexistent-dir/x.gguf: cannot write (No such file or directory)");
    }
}

}  // namespace
}  // namespace kvlens
