// The engine on a GPU against the same engine on the CPU: every method's kept
// sets on one capture (equal, by rule where scores tie at the cut to within
// rounding), the prefill, the capture and a compressed decode of a model on
// CUDA, a whole method evaluation, and a Hugging Face folder loaded on the GPU.
// Skipped, with the reason, without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "engine/compress/Capture.h"
#include "engine/compress/CompressedCache.h"
#include "engine/model/LlamaModel.h"
#include "engine/compress/MethodEvaluator.h"
#include "engine/model/ModelLoader.h"
#include "engine/compress/presses/Press.h"
#include "engine/compress/presses/PressScores.h"
#include "engine/gguf/GgufFile.h"
#include "engine/model/KvCache.h"
#include "kernels/LayerSelection.h"
#include "support/HfFolderWriter.h"
#include "support/TinyModelFile.h"

#include <filesystem>

namespace kvlens {
namespace {

#define REQUIRE_CUDA() \
    if (!at::hasCUDA()) GTEST_SKIP() << "no CUDA device: this LibTorch has no CUDA or sees no GPU"

const c10::Device kGpu("cuda:0");

std::vector<int32_t> promptOf(int64_t n) {
    std::vector<int32_t> prompt;
    for (int64_t i = 0; i < n; ++i) prompt.push_back(int32_t((37 * i + 11) % 250 + 3));
    return prompt;
}

// The CPU model's capture, and the same tensors as a capture on the GPU.
struct Captures {
    LoadedModel loaded;
    std::shared_ptr<Capture> cpu, gpu;
};

const Captures& captures() {
    static const std::unique_ptr<Captures> c = [] {
        auto out = std::make_unique<Captures>();
        out->loaded = loadModel("random:tiny", c10::Device(c10::kCPU), c10::kFloat);
        out->cpu = Capture::fromPrefill(*out->loaded.model, promptOf(400));
        std::vector<at::Tensor> q, k, v;
        for (int64_t l = 0; l < out->cpu->layers(); ++l) {
            q.push_back(out->cpu->windowQueries(l).to(kGpu));
            k.push_back(out->cpu->keys(l).to(kGpu));
            v.push_back(out->cpu->values(l).to(kGpu));
        }
        out->gpu = Capture::fromTensors(q, k, v);
        return out;
    }();
    return *c;
}

// Sets differ only in positions whose score is within `tol` of `cut`.
void expectOnlyTiesDiffer(const std::vector<int32_t>& cpu, const std::vector<int32_t>& gpu,
                          const std::vector<float>& scores, const std::vector<double>& cuts,
                          const std::string& what) {
    const std::set<int32_t> a(cpu.begin(), cpu.end()), b(gpu.begin(), gpu.end());
    auto nearACut = [&](int32_t p) {
        for (double cut : cuts)
            if (std::abs(scores[p] - cut) <= 1e-4 * std::abs(cut) + 1e-7) return true;
        return false;
    };
    for (int32_t p : a) {
        if (!b.count(p)) {
            EXPECT_TRUE(nearACut(p)) << what << ": only the CPU keeps " << p;
        }
    }
    for (int32_t p : b) {
        if (!a.count(p)) {
            EXPECT_TRUE(nearACut(p)) << what << ": only the GPU keeps " << p;
        }
    }
}

double kthLargest(std::vector<float> v, int64_t k) {
    std::nth_element(v.begin(), v.begin() + (k - 1), v.end(), std::greater<float>());
    return v[k - 1];
}

class CudaSelections : public testing::TestWithParam<std::tuple<std::string, std::string>> {};

TEST_P(CudaSelections, KeptSetsEqualTheCpusOnTheSameCapture) {
    REQUIRE_CUDA();
    const std::string method = std::get<0>(GetParam());
    const GqaMode gqa = parseGqaMode(std::get<1>(GetParam()));
    const Captures& c = captures();
    const int64_t T = c.cpu->promptLength();
    for (int64_t budget : {64, 200}) {
        PressParams p;
        p.method = method;
        p.budget = budget;
        p.gqa = gqa;
        const Selection cpu = Press::create(method)->select(*c.cpu, p);
        const Selection gpu = Press::create(method)->select(*c.gpu, p);
        ASSERT_EQ(gpu.layerBudgets, cpu.layerBudgets);
        ASSERT_EQ(gpu.layers(), cpu.layers());
        const bool voting = method == "snapkv" || method == "pyramidkv" || method == "adakv";
        for (int64_t l = 0; l < cpu.layers(); ++l) {
            ASSERT_EQ(gpu.kept[l].size(), cpu.kept[l].size());
            if (!voting) {
                EXPECT_EQ(gpu.kept[l], cpu.kept[l]) << method << " layer " << l;
                continue;
            }
            const presses::HeadScores scores = presses::pooledVotes(*c.cpu, l, p);
            const int64_t n = T - p.window;
            for (size_t h = 0; h < cpu.kept[l].size(); ++h) {
                const std::string what = method + " B" + std::to_string(budget) + " layer " +
                                         std::to_string(l) + " head " + std::to_string(h);
                std::vector<double> cuts;
                std::vector<float> s = scores[h];
                if (method == "adakv") {
                    // Normalised as AdaKV ranks them; the cuts are its per-head safeguard
                    // and the layer-wide pool's lowest kept score.
                    double sum = 0.0;
                    for (float x : s) sum += x;
                    for (float& x : s) x = float(x / sum);
                    const int64_t floor =
                        int64_t(std::floor(p.alpha * double(budget - p.window) + 1e-9));
                    if (floor > 0) cuts.push_back(kthLargest(s, floor));
                    // The pool's cut: the lowest score it handed out beyond the safeguards.
                    double lowest = INFINITY;
                    for (size_t hh = 0; hh < cpu.kept[l].size(); ++hh) {
                        std::vector<float> t = scores[hh];
                        double z = 0.0;
                        for (float x : t) z += x;
                        for (float& x : t) x = float(x / z);
                        const std::vector<int32_t> guard = presses::topPositions(t, floor);
                        const std::set<int32_t> safe(guard.begin(), guard.end());
                        for (int32_t pos : cpu.kept[l][hh])
                            if (pos < n && !safe.count(pos))
                                lowest = std::min(lowest, double(t[pos]));
                    }
                    if (std::isfinite(lowest)) cuts.push_back(lowest);
                } else {
                    cuts.push_back(kthLargest(s, cpu.layerBudgets[l] - p.window));
                }
                expectOnlyTiesDiffer(cpu.kept[l][h], gpu.kept[l][h], s, cuts, what);
                // Whatever differs, the window is kept and positions ascend.
                EXPECT_TRUE(std::is_sorted(gpu.kept[l][h].begin(), gpu.kept[l][h].end())) << what;
                EXPECT_EQ(gpu.kept[l][h].back(), T - 1) << what;
            }
        }
    }
}

INSTANTIATE_TEST_SUITE_P(
    Methods, CudaSelections,
    testing::Combine(testing::Values("full", "snapkv", "pyramidkv", "adakv", "streamingllm",
                                     "random"),
                     testing::Values("kv-head", "query-head")),
    [](const testing::TestParamInfo<std::tuple<std::string, std::string>>& info) {
        std::string gqa = std::get<1>(info.param);
        std::replace(gqa.begin(), gqa.end(), '-', '_');
        return std::get<0>(info.param) + "_" + gqa;
    });

TEST(CudaEngine, PrefillCaptureAndCompressedDecodeMatchTheCpu) {
    REQUIRE_CUDA();
    LoadedModel cpuModel = loadModel("random:tiny:layers=2", c10::Device(c10::kCPU), c10::kFloat);
    LoadedModel gpuModel = loadModel("random:tiny:layers=2", kGpu, c10::kFloat);
    const std::vector<int32_t> prompt = promptOf(300);
    const auto cpu = Capture::fromPrefill(*cpuModel.model, prompt);
    const auto gpu = Capture::fromPrefill(*gpuModel.model, prompt);
    gpu->setRepeatPrompt(RepeatPrompt::from(*gpuModel.tokenizer));  // KVzip reconstructs on the GPU
    ASSERT_TRUE(gpu->keys(0).is_cuda());
    EXPECT_FALSE(gpu->hasH2oScores());
    gpu->keepScoresFor(*gpuModel.model, "h2o");
    cpu->keepScoresFor(*cpuModel.model, "h2o");
    EXPECT_TRUE(gpu->hasH2oScores());
    ASSERT_TRUE(gpu->lastLogits().device().is_cpu());
    const double scale = cpu->lastLogits().abs().max().item<double>();
    EXPECT_LT((gpu->lastLogits() - cpu->lastLogits()).abs().max().item<double>(),
              1e-4 * scale + 1e-5);
    const double keyScale = cpu->keys(1).abs().max().item<double>();
    EXPECT_LT((gpu->keys(1).cpu() - cpu->keys(1)).abs().max().item<double>(), 1e-5 * keyScale);

    for (const std::string& method : PressParams::methodNames()) {
        PressParams p;
        p.method = method;
        p.budget = 100;
        p.lag = 16;  // LagKV's tail (lag to 2 lag - 1, and the sinks) must fit the budget
        p.finchChunk = 100;  // Finch's prefill in several steps, each re-rotating what it keeps
        // The methods that replay the prompt (non-causal attention) or reconstruct it (KVzip) do it
        // on the GPU first.
        gpu->keepScoresFor(*gpuModel.model, p);
        // Finch's cache is its own prefill's, not a gather: each device runs it.
        if (method == "finch") {
            cpu->keepScoresFor(*cpuModel.model, p);
            EXPECT_EQ(Press::create(method)->select(*cpu, p).kept, Press::create(method)->select(*gpu, p).kept);
        }
        // The GPU's selection, gathered on both devices: the decode must agree.
        const Selection s = Press::create(method)->select(*gpu, p);
        CompressedCache onGpu(*gpu, s, 4), onCpu(*cpu, s, 4);
        EXPECT_EQ(onGpu.bytes(), onCpu.bytes()) << method;
        int32_t token = 65;
        for (int step = 0; step < 4; ++step) {
            const at::Tensor a = gpuModel.model->decode(token, onGpu);
            const at::Tensor b = cpuModel.model->decode(token, onCpu);
            ASSERT_TRUE(a.device().is_cpu()) << method;
            EXPECT_LT((a - b).abs().max().item<double>(), 1e-4 * scale + 1e-5)
                << method << " step " << step;
            token = int32_t(b.argmax().item<int64_t>());
        }
    }
}

TEST(CudaEngine, MethodEvaluationRunsOnTheGpuInBf16) {
    REQUIRE_CUDA();
    LoadedModel loaded = loadModel("random:tiny:layers=2", kGpu, c10::kBFloat16);
    const auto capture = Capture::fromPrefill(*loaded.model, promptOf(256));
    MethodEvaluator evaluator(*loaded.model, capture, 8);
    PressParams full;
    full.method = "full";
    const RunMetrics f = evaluator.evaluate(full);
    // Not bit-identical here: the full cache's decode is LibTorch's bf16 path,
    // the compressed cache's the ragged kernel with fp32 probabilities.
    EXPECT_EQ(f.ratio, 1.0);
    EXPECT_LT(f.meanKl, 0.05);
    PressParams snap;
    snap.method = "snapkv";
    snap.budget = 64;
    const RunMetrics m = evaluator.evaluate(snap);
    EXPECT_EQ(int64_t(m.tokens.size()), 8);
    EXPECT_NEAR(m.ratio, 64.0 / 256.0, 0.02);
    EXPECT_GE(m.meanKl, 0.0);
    EXPECT_TRUE(std::isfinite(m.meanKl));
    EXPECT_GT(m.hitRate, 0.0);
    EXPECT_LE(m.hitRate, 1.0);
}

// A folder's weights go to the GPU as dense tensors (no in-place reads there): its
// logits equal the same folder's on the CPU, from F32 and from BF16 safetensors.
TEST(CudaEngine, AHuggingFaceFolderOnTheGpuEqualsItOnTheCpu) {
    REQUIRE_CUDA();
    const GgufFile src(std::string(KVLENS_SOURCE_DIR) + "/tests/data/gguf/tiny-llama3-Q4_K_M.gguf");
    for (const std::string dtype : {"F32", "BF16"}) {
        const std::string dir = test::testOutputPath("cuda_hf_llama3_" + dtype);
        std::filesystem::remove_all(dir);
        test::HfWriteOptions o;
        o.dtype = dtype;
        test::writeHfFolder(src, dir, o);
        LoadedModel cpu = loadModel(dir, c10::Device(c10::kCPU), c10::kFloat);
        LoadedModel gpu = loadModel(dir, kGpu, c10::kFloat);
        const std::vector<int32_t> ids = cpu.tokenizer->encode("Once upon a time, there was a little girl", true);
        const ModelConfig& c = cpu.model->config();
        KvCache cpuCache(c.nLayers, c.nKvHeads, c.headDim, int64_t(ids.size()), at::kFloat, c10::Device(c10::kCPU));
        KvCache gpuCache(c.nLayers, c.nKvHeads, c.headDim, int64_t(ids.size()), at::kFloat, kGpu);
        const at::Tensor a = cpu.model->forward(ids, cpuCache, true).to(at::kCPU, at::kFloat);
        const at::Tensor b = gpu.model->forward(ids, gpuCache, true).to(at::kCPU, at::kFloat);
        const double scale = a.abs().max().item<double>();
        EXPECT_LT((a - b).abs().max().item<double>(), 1e-4 * scale + 1e-5) << dtype;
    }
}

}  // namespace
}  // namespace kvlens
