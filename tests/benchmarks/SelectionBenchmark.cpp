// Live re-selection cost: from a budget or method change to a gathered
// compressed cache, on a capture shaped like tinyllama-1.1b (22 layers, 32
// query heads, 4 KV heads, head dim 64) holding an 8192-token prompt. The
// capture's tensors are random (selection cost does not depend on values), so
// the benchmark needs no 3-minute prefill. Run: build/tests/kvlens_benchmarks
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Parallel.h>
#include <benchmark/benchmark.h>

#include <functional>

#include "engine/compress/Capture.h"
#include "engine/compress/CompressedCache.h"
#include "engine/compress/DecodeCompressor.h"
#include "engine/compress/presses/Press.h"
#include "engine/model/LlamaModel.h"
#include "engine/model/ModelLoader.h"

namespace kvlens {
namespace {

std::shared_ptr<Capture> makeCapture(int64_t layers, int64_t T, int64_t H, int64_t KV, int64_t D) {
    at::Generator gen = at::detail::createCPUGenerator(1);
    std::vector<at::Tensor> q, k, v;
    for (int64_t l = 0; l < layers; ++l) {
        q.push_back(at::randn({H, Capture::kMaxWindow, D}, gen));
        k.push_back(at::randn({KV, T, D}, gen).to(at::kBFloat16));
        v.push_back(at::randn({KV, T, D}, gen).to(at::kBFloat16));
    }
    return Capture::fromTensors(q, k, v);
}

const std::shared_ptr<Capture>& tinyllama8k() {
    static const std::shared_ptr<Capture> capture = makeCapture(22, 8192, 32, 4, 64);
    return capture;
}

// Expected Attention and LeverageScore need a prefill's query statistics, the non-causal
// attention a replay on the model: a random model of tinyllama-1.1b's shape (bf16)
// prefills 8192 tokens once, the first time a benchmark asks (a minute or two).
LoadedModel& tinyllamaModel() {
    static LoadedModel loaded = [] {
        at::set_num_threads(2);
        return loadModel("random:tinyllama-1.1b:ctx=8192", c10::Device(c10::kCPU), at::kBFloat16);
    }();
    return loaded;
}
const std::shared_ptr<Capture>& tinyllamaPrefill8k() {
    static const std::shared_ptr<Capture> capture = [] {
        at::set_num_threads(2);
        std::vector<int32_t> prompt(8192);
        for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = int32_t((i * 7919 + 13) % 31999 + 1);
        auto made = Capture::fromPrefill(*tinyllamaModel().model, prompt);
        made->setRepeatPrompt(RepeatPrompt::from(*tinyllamaModel().tokenizer));
        return made;
    }();
    return capture;
}

// One budget change: select with a budget not seen before (votes are cached per
// window, as in the GUI), then gather the compressed cache.
void selectAndGather(benchmark::State& state, const std::string& method, const std::shared_ptr<Capture>& capture,
                     Pooling pooling = Pooling::Max, const std::string& scorer = "",
                     const std::function<void(PressParams&)>& setup = {}) {
    at::set_num_threads(2);
    PressParams p;
    p.method = method;
    p.scorer = scorer;
    p.window = 32;
    p.pooling = pooling;
    if (setup) setup(p);
    auto press = Press::create(method);
    p.budget = 1024;
    press->select(*capture, p);  // computes and caches the window's votes once
    int64_t budget = 512;
    for (auto _ : state) {
        p.budget = budget;
        budget = budget == 2048 ? 512 : budget + 1;
        const Selection s = press->select(*capture, p);
        CompressedCache cache(*capture, s);
        benchmark::DoNotOptimize(cache.bytes());
    }
    state.SetLabel(method + (scorer.empty() ? "" : "(" + scorer + ")") + (p.think > 0 ? " think" : "") +
                   " T=" + std::to_string(capture->promptLength()));
}

void BM_SnapKvSelectAndGather8k(benchmark::State& state) { selectAndGather(state, "snapkv", tinyllama8k()); }
// Avg pooling sums each window on its own (exact ties), n x kernel adds like max pooling.
void BM_SnapKvAvgPoolSelectAndGather8k(benchmark::State& state) {
    selectAndGather(state, "snapkv", tinyllama8k(), Pooling::Avg);
}
void BM_PyramidKvSelectAndGather8k(benchmark::State& state) { selectAndGather(state, "pyramidkv", tinyllama8k()); }
void BM_AdaKvSelectAndGather8k(benchmark::State& state) { selectAndGather(state, "adakv", tinyllama8k()); }
void BM_TovaSelectAndGather8k(benchmark::State& state) { selectAndGather(state, "tova", tinyllama8k()); }
void BM_KnormSelectAndGather8k(benchmark::State& state) { selectAndGather(state, "knorm", tinyllama8k()); }
void BM_KeyDiffSelectAndGather8k(benchmark::State& state) { selectAndGather(state, "keydiff", tinyllama8k()); }
void BM_CurSelectAndGather8k(benchmark::State& state) { selectAndGather(state, "cur", tinyllama8k()); }
void BM_CakeSelectAndGather8k(benchmark::State& state) { selectAndGather(state, "cake", tinyllama8k()); }
void BM_SimLayerKvSelectAndGather8k(benchmark::State& state) { selectAndGather(state, "simlayerkv", tinyllama8k()); }
void BM_AdaKvKnormSelectAndGather8k(benchmark::State& state) {
    selectAndGather(state, "adakv", tinyllama8k(), Pooling::Max, "knorm");
}
void BM_LagKvSelectAndGather8k(benchmark::State& state) { selectAndGather(state, "lagkv", tinyllama8k()); }
void BM_StreamingLlmSelectAndGather8k(benchmark::State& state) { selectAndGather(state, "streamingllm", tinyllama8k()); }
void BM_RandomSelectAndGather8k(benchmark::State& state) { selectAndGather(state, "random", tinyllama8k()); }
// The layers' shares from 22 unequal weights (1 .. 22), each ranked by SnapKV's votes.
void BM_PerLayerSelectAndGather8k(benchmark::State& state) {
    selectAndGather(state, "perlayer", tinyllama8k(), Pooling::Max, "", [](PressParams& p) {
        for (int l = 1; l <= 22; ++l) p.layerWeights.push_back(double(l));
    });
}
// ThinK over SnapKV: each head's 25% lowest-energy key channels zeroed in the gathered keys.
void BM_ThinkSelectAndGather8k(benchmark::State& state) {
    selectAndGather(state, "snapkv", tinyllama8k(), Pooling::Max, "", [](PressParams& p) { p.think = 0.25; });
}
void BM_ChunkKvSelectAndGather8k(benchmark::State& state) { selectAndGather(state, "chunkkv", tinyllama8k()); }
void BM_ChunkKvKvpressSelectAndGather8k(benchmark::State& state) {
    selectAndGather(state, "chunkkv-kvpress", tinyllama8k());
}
void BM_ExpectedSelectAndGather8k(benchmark::State& state) {
    selectAndGather(state, "expected", tinyllamaPrefill8k());
}
void BM_LeverageSelectAndGather8k(benchmark::State& state) {
    selectAndGather(state, "leverage", tinyllamaPrefill8k());
}
// A method after what it computes on first use (kept with the capture): a new budget selects
// again from the kept scores. Compactor's blend follows 1 - B/T, so each budget blends again;
// KVzip ranks L x KV x T scores at once.
void selectAfterFirstUse(benchmark::State& state, const std::string& method) {
    const std::shared_ptr<Capture>& capture = tinyllamaPrefill8k();
    PressParams p;
    p.method = method;
    p.budget = 1024;
    capture->keepScoresFor(*tinyllamaModel().model, p);
    selectAndGather(state, method, capture);
}
void BM_CompactorSelectAndGather8k(benchmark::State& state) { selectAfterFirstUse(state, "compactor"); }
// H2O's accumulated attention (a replay of the prompt's attention, kept with the capture), the
// non-causal attention's replay, CriticalKV's value-through-output norms from the model's weights.
void BM_H2oSelectAndGather8k(benchmark::State& state) { selectAfterFirstUse(state, "h2o"); }
// kvpress's FinchPress: its position-weighted votes kept after the first use, the gathered keys
// turned by RoPE to their rows (the model's RoPE: the prefill's capture).
void BM_FinchKvpressSelectAndGather8k(benchmark::State& state) {
    selectAndGather(state, "finch-kvpress", tinyllamaPrefill8k());
}
void BM_NonCausalSelectAndGather8k(benchmark::State& state) { selectAfterFirstUse(state, "noncausal"); }
void BM_CriticalKvSelectAndGather8k(benchmark::State& state) { selectAfterFirstUse(state, "criticalkv"); }
void BM_CriticalAdaKvSelectAndGather8k(benchmark::State& state) { selectAfterFirstUse(state, "criticaladakv"); }
// Compression during decoding: one decode step's new row appended to every head of every
// layer of a cache at budget 1024 (the step's random queries watched, as the decode's are),
// then the compressor cutting each head back to 1024 by the method's rule (--decode-every 1).
// A real step costs the decode itself beside this.
// PyramidKV's layers keep their shares of 22 x 1024 (the first ones more than the 1024 they
// hold), as per-layer's do (equal weights); AdaKV's heads share each layer's 4 x 1024, ChunkKV
// keeps chunks of 10 rows (`scorer`: the wrapper's scorer, SnapKV's votes when empty).
// CriticalKV's: each step's new row's projected value norm (W_o turned to fp32 once per layer
// and compression), then its two stages.
void decodeCompression(benchmark::State& state, const std::string& method, const std::string& scorer = "") {
    at::set_num_threads(2);
    // Expected Attention's statistics and CriticalKV's norms come from a prefill: the random
    // model's 8192 tokens.
    const bool critical = method == "criticalkv" || method == "criticaladakv";
    const std::shared_ptr<Capture>& capture = method == "expected" || critical ? tinyllamaPrefill8k() : tinyllama8k();
    PressParams p;
    p.method = method;
    p.budget = 1024;
    p.window = 32;
    p.sinks = 4;
    p.scorer = scorer;
    // The cache starts as StreamingLLM's 1024 (the sinks and the most recent: the window too),
    // which every rule accepts; H2O needs a prefill's scores to select, and starts from zeros here.
    PressParams start = p;
    start.method = "streamingllm";
    start.scorer.clear();
    const Selection selection = Press::create("streamingllm")->select(*capture, start);
    CompressedCache cache(*capture, selection, 2);
    if (critical) capture->keepScoresFor(*tinyllamaModel().model, p);
    DecodeCompressor rule(p, 1);
    rule.start(*capture, selection, critical ? tinyllamaModel().model.get() : nullptr);
    at::Generator gen = at::detail::createCPUGenerator(7);
    const at::Tensor q = at::randn({1, 32, 64}, gen), k = at::randn({1, 4, 64}, gen).to(at::kBFloat16);
    int64_t position = capture->promptLength();
    for (auto _ : state) {
        for (int64_t l = 0; l < cache.layers(); ++l) {
            rule.onQueries(l, q, position);
            cache.append(l, k, k);
        }
        ++position;
        benchmark::DoNotOptimize(rule.afterStep(cache));
    }
    state.SetLabel(method + (scorer.empty() ? "" : "(" + scorer + ")") + " B=1024, 22 layers x 4 heads");
}
void BM_DecodeCompression8k(benchmark::State& state, const char* method) { decodeCompression(state, method); }
void BM_DecodeCompressionAdaKv8k(benchmark::State& state, const char* scorer) { decodeCompression(state, "adakv", scorer); }
void BM_DecodeCompressionWrapper8k(benchmark::State& state, const char* method, const char* scorer) {
    decodeCompression(state, method, scorer);
}
// What a method computes on first use for a setting not seen before, on the 8192-token prompt
// (every layer), once per iteration (`vary` makes each one new): the time beside the prefill.
void firstUseOfTheModel(benchmark::State& state, const std::string& method,
                        const std::function<void(PressParams&, int64_t)>& vary) {
    at::set_num_threads(2);
    const std::shared_ptr<Capture>& capture = tinyllamaPrefill8k();
    PressParams p;
    p.method = method;
    p.budget = 1024;
    int64_t i = 0;
    for (auto _ : state) {
        vary(p, i++);
        capture->keepScoresFor(*tinyllamaModel().model, p);
    }
    state.counters["prefill_s"] = capture->prefillSeconds();
}
// The non-causal attention's replay, once per (chunk, span): chunks of 257 + i.
void BM_NonCausalReplay8k(benchmark::State& state) {
    firstUseOfTheModel(state, "noncausal", [](PressParams& p, int64_t i) { p.attnChunk = 257 + i; });
}
// KVzip's reconstruction (4 chunks of 2048 after the sinks, each run after the whole prompt's
// KV), once per (chunk, sinks): sinks 4 + i.
void BM_KvzipReconstruction8k(benchmark::State& state) {
    firstUseOfTheModel(state, "kvzip", [](PressParams& p, int64_t i) { p.sinks = 4 + i; });
}
void BM_KvzipSelectAndGather8k(benchmark::State& state) { selectAfterFirstUse(state, "kvzip"); }
// Finch's own chunked prefill (16 chunks of 512, each with the 32-token question, evicting to
// its share), once per budget: the budget shapes every eviction, so a new budget is a new
// prefill (budget 1024 + i).
void BM_FinchPrefill8k(benchmark::State& state) {
    firstUseOfTheModel(state, "finch", [](PressParams& p, int64_t i) { p.budget = 1024 + i; });
}
// A budget Finch has prefilled already: the kept positions and the copy of its cache.
void BM_FinchSelectAndGather8k(benchmark::State& state) {
    at::set_num_threads(2);
    const std::shared_ptr<Capture>& capture = tinyllamaPrefill8k();
    PressParams p;
    p.method = "finch";
    p.budget = 1024;
    capture->keepScoresFor(*tinyllamaModel().model, p);
    auto press = Press::create("finch");
    for (auto _ : state) {
        const Selection s = press->select(*capture, p);
        CompressedCache cache(*capture, s);
        benchmark::DoNotOptimize(cache.bytes());
    }
    state.SetLabel("finch T=" + std::to_string(capture->promptLength()));
}
// The first selection with a setting not seen before (`vary` makes a new one each
// iteration), which computes the scores it then keeps.
void firstUse(benchmark::State& state, const std::string& method, const Capture& capture,
              const std::function<void(PressParams&, int64_t)>& vary) {
    at::set_num_threads(2);
    PressParams p;
    p.method = method;
    p.budget = 1024;
    auto press = Press::create(method);
    int64_t i = 0;
    for (auto _ : state) {
        vary(p, i++);
        benchmark::DoNotOptimize(press->select(capture, p).entries());
    }
}
void BM_ExpectedFirstUse8k(benchmark::State& state) {
    const std::shared_ptr<Capture>& capture = tinyllamaPrefill8k();
    firstUse(state, "expected", *capture, [](PressParams& p, int64_t i) { p.future = 512 + i; });
    state.counters["prefill_s"] = capture->prefillSeconds();  // the capture's own prefill, once
}
// CAKE's window attention statistics for a window not used before (every layer).
void BM_CakeFirstUse8k(benchmark::State& state) {
    firstUse(state, "cake", *tinyllama8k(), [](PressParams& p, int64_t i) { p.window = 33 + i; });
}
// LeverageScore's keys turned back, sketched and scored in fp64 (every layer), for a new seed.
void BM_LeverageFirstUse8k(benchmark::State& state) {
    firstUse(state, "leverage", *tinyllamaPrefill8k(), [](PressParams& p, int64_t i) { p.seed = 100 + uint64_t(i); });
}
void BM_LagKvFirstUse8k(benchmark::State& state) {
    firstUse(state, "lagkv", *tinyllama8k(), [](PressParams& p, int64_t i) { p.lag = 128 + i; });
}
// What the query statistics add to a prefill: every layer's queries of 8192 positions in
// chunks of 2048 (the prefill's), turned back from RoPE and summed into the statistics.
void BM_QueryStatistics8k(benchmark::State& state) {
    at::set_num_threads(2);
    const int64_t layers = 22, T = 8192, chunk = 2048, H = 32, D = 64;
    at::Generator gen = at::detail::createCPUGenerator(3);
    const at::Tensor q = at::randn({chunk, H, D}, gen).to(at::kBFloat16);
    const at::Tensor invFreq = at::pow(10000.0, at::arange(0, D, 2, at::kFloat) / -double(D));
    for (auto _ : state) {
        QueryStatistics stats(layers, T, invFreq, D, false);
        for (int64_t p0 = 0; p0 < T; p0 += chunk)
            for (int64_t l = 0; l < layers; ++l) stats.add(l, q, p0);
        benchmark::DoNotOptimize(stats.bytes());
    }
}

// A window change recomputes the votes of every layer (then they are cached).
void BM_WindowVotes8k(benchmark::State& state) {
    at::set_num_threads(2);
    const auto& capture = tinyllama8k();
    int64_t window = 16;
    for (auto _ : state) {
        for (int64_t l = 0; l < capture->layers(); ++l) benchmark::DoNotOptimize(capture->votes(l, window));
        window = window == 64 ? 16 : window + 1;
    }
}

// Small shapes: a smoke run for the test suite.
void BM_SnapKvSelectAndGatherSmall(benchmark::State& state) {
    static const auto capture = makeCapture(2, 256, 4, 2, 16);
    selectAndGather(state, "snapkv", capture);
}

BENCHMARK(BM_SnapKvSelectAndGather8k)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_SnapKvAvgPoolSelectAndGather8k)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_PyramidKvSelectAndGather8k)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_AdaKvSelectAndGather8k)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_TovaSelectAndGather8k)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_KnormSelectAndGather8k)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_KeyDiffSelectAndGather8k)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_CurSelectAndGather8k)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_CakeSelectAndGather8k)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_SimLayerKvSelectAndGather8k)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_AdaKvKnormSelectAndGather8k)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_LagKvSelectAndGather8k)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_ChunkKvSelectAndGather8k)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_ChunkKvKvpressSelectAndGather8k)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_ExpectedSelectAndGather8k)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_LeverageSelectAndGather8k)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_CompactorSelectAndGather8k)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_StreamingLlmSelectAndGather8k)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_RandomSelectAndGather8k)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_PerLayerSelectAndGather8k)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_ThinkSelectAndGather8k)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_H2oSelectAndGather8k)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_FinchKvpressSelectAndGather8k)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_NonCausalSelectAndGather8k)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_CriticalKvSelectAndGather8k)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_CriticalAdaKvSelectAndGather8k)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK_CAPTURE(BM_DecodeCompression8k, streamingllm, "streamingllm")->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK_CAPTURE(BM_DecodeCompression8k, knorm, "knorm")->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK_CAPTURE(BM_DecodeCompression8k, keydiff, "keydiff")->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK_CAPTURE(BM_DecodeCompression8k, h2o, "h2o")->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK_CAPTURE(BM_DecodeCompression8k, tova, "tova")->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK_CAPTURE(BM_DecodeCompression8k, snapkv, "snapkv")->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK_CAPTURE(BM_DecodeCompression8k, cur, "cur")->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK_CAPTURE(BM_DecodeCompression8k, expected, "expected")->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK_CAPTURE(BM_DecodeCompression8k, pyramidkv, "pyramidkv")->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK_CAPTURE(BM_DecodeCompression8k, lagkv, "lagkv")->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK_CAPTURE(BM_DecodeCompression8k, random, "random")->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK_CAPTURE(BM_DecodeCompressionAdaKv8k, snapkv, "snapkv")->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK_CAPTURE(BM_DecodeCompressionAdaKv8k, knorm, "knorm")->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK_CAPTURE(BM_DecodeCompressionAdaKv8k, tova, "tova")->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK_CAPTURE(BM_DecodeCompressionAdaKv8k, lagkv, "lagkv")->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK_CAPTURE(BM_DecodeCompressionWrapper8k, chunkkv, "chunkkv", "")->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK_CAPTURE(BM_DecodeCompressionWrapper8k, perlayer, "perlayer", "")->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK_CAPTURE(BM_DecodeCompressionWrapper8k, criticalkv_knorm, "criticalkv", "knorm")
    ->Unit(benchmark::kMillisecond)
    ->MinTime(2.0);
BENCHMARK_CAPTURE(BM_DecodeCompressionWrapper8k, criticalkv, "criticalkv", "")->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK_CAPTURE(BM_DecodeCompressionWrapper8k, criticaladakv, "criticaladakv", "")
    ->Unit(benchmark::kMillisecond)
    ->MinTime(2.0);
BENCHMARK(BM_ExpectedFirstUse8k)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(BM_LeverageFirstUse8k)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(BM_NonCausalReplay8k)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(BM_KvzipReconstruction8k)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(BM_KvzipSelectAndGather8k)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_FinchPrefill8k)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(BM_FinchSelectAndGather8k)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_LagKvFirstUse8k)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(BM_CakeFirstUse8k)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(BM_QueryStatistics8k)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(BM_WindowVotes8k)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(BM_SnapKvSelectAndGatherSmall)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace kvlens

BENCHMARK_MAIN();
