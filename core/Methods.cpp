// The method and knob tables, and what is derived from them.
#include "core/Methods.h"

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/Error.h"
#include "core/PressParams.h"

namespace kvlens::methods {

namespace {

using K = Knob;
using N = Need;
using P = Keep;
using F = MethodFamily;
using D = DecodeForm;

const KnobSet kSnapKnobs = {K::Window, K::Kernel, K::Pooling, K::Gqa};

// One line a method. Facts about a method live here and in its press's own files only.
const std::vector<MethodInfo>& table() {
    static const std::vector<MethodInfo> t = {
        {MethodId::Full, "full", "FullKV", F::Baseline, {}, {}, {}, false, "", false, {}, {}, false, false, D::None,
         "", "", "", "", "keeps every position (the reference every run is compared with)", "ranks nothing: keeps every position"},
        {MethodId::SnapKv, "snapkv", "SnapKV", F::Scorer, kSnapKnobs, {N::WindowVotes}, {P::Window}, false, "", true,
         kSnapKnobs, {}, true, false, D::Own,
         "Li et al. 2024, SnapKV: LLM Knows What You are Looking for Before Generation", "SnapKVPress",
         "defaults W=64, kernel 5, avg pooling there; W=32, kernel 7, max pooling here (pass them to compare). "
         "kvpress averages the window's attention where the votes are summed here: the same ranking per head",
         "", "the window and the B - W prefix positions of highest pooled window votes", ""},
        {MethodId::PyramidKv, "pyramidkv", "PyramidKV", F::LayerAllocator, kSnapKnobs | KnobSet{K::Beta, K::Schedule},
         {N::WindowVotes}, {P::Window}, false, "", false, {}, {}, true, false, D::Own,
         "Cai et al. 2024, PyramidKV: Dynamic KV Cache Compression based on Pyramidal Information Funneling",
         "PyramidKVPress",
         "kvpress spreads T(1-r) with the window counted inside (max_capacity_prompt = W + T(1-r)), caps the "
         "first layer at T - W, rounds each layer's budget and falls back to round(T(1-r)) when its schedule "
         "is out of range; here each layer's B - W prefix entries fall linearly (exact: summing to L(B - W)). "
         "--convention kvpress applies kvpress's schedule",
         "", "SnapKV's votes with a budget falling linearly from the first layer to the last", "",
         KvpressForm::Convention, std::nullopt, std::nullopt, {K::Schedule}},
        {MethodId::StreamingLlm, "streamingllm", "StreamingLLM", F::Baseline, {K::Sinks}, {}, {P::Sinks, P::Recent},
         false, "", false, {}, {}, false, false, D::Own,
         "Xiao et al. 2024, Efficient Streaming Language Models with Attention Sinks", "StreamingLLMPress",
         "the same (n_sink 4)", "", "the first sinks and the most recent B - sinks positions", "ranks nothing: keeps by position"},
        {MethodId::H2o, "h2o", "H2O", F::Scorer, {K::Window}, {N::PromptReplay}, {P::Window}, false, "", true,
         {K::Window}, {}, true, true, D::Own,
         "Zhang et al. 2023, H2O: Heavy-Hitter Oracle for Efficient Generative Inference of LLMs",
         "ObservedAttentionPress",
         "kvpress divides each key's accumulated attention by the queries that see it (T - j), averages the query "
         "heads and keeps no window; here the sum the paper ranks, with the window kept",
         "",
         "the window and the B - W positions of highest attention accumulated over every prompt query", "",
         KvpressForm::None},
        {MethodId::AdaKv, "adakv", "AdaKV", F::Wrapper, {K::Window, K::Scorer, K::Alpha}, {}, {P::Window, P::ScorerEnds},
         true, "snapkv", false, {}, {}, false, false, D::ViaScorer,
         "Feng et al. 2024, Ada-KV: Optimizing KV Cache Eviction by Adaptive Budget Allocation", "AdaKVPress(press)",
         "kvpress ranks the raw scores with no window and sizes n_safe = int(alpha * n_kept) on a total that "
         "includes the window; here the window is kept, alpha * (B - W - sinks) is guaranteed and SnapKV's votes "
         "are normalised per head. --convention kvpress applies kvpress's form",
         "", "heads share the layer's H x (B - W) entries by their scores, each guaranteed alpha of its share", "",
         KvpressForm::Convention, KeepSet{P::ScorerEnds}, std::nullopt, {}, true},
        {MethodId::Random, "random", "Random", F::Baseline, {K::Window, K::Seed}, {}, {P::Window}, false, "", false, {},
         {}, false, false, D::Own, "", "RandomPress", "kvpress keeps no window", "",
         "the window and B - W prefix positions drawn uniformly (seeded)", "ranks nothing: keeps a seeded draw",
         KvpressForm::None},
        {MethodId::Tova, "tova", "TOVA", F::Scorer, {}, {N::WindowVotes}, {}, false, "", true, {}, {}, true, false,
         D::Own, "Oren et al. 2024, Transformers are Multi-State RNNs", "TOVAPress",
         "TOVAPress always keeps the last position; here it competes like any other (--convention kvpress keeps it)",
         "", "one set per layer: the B positions the last query attends to most, averaged over the query heads", "",
         KvpressForm::Convention, KeepSet{P::Last}},
        {MethodId::Knorm, "knorm", "KNorm", F::Scorer, {}, {}, {}, false, "", true, {}, {}, false, false, D::Own,
         "Devoto et al. 2024, A Simple and Effective L2 Norm-Based Strategy for KV Cache Compression", "KnormPress",
         "the same", "", "the B keys of lowest L2 norm", ""},
        {MethodId::KeyDiff, "keydiff", "KeyDiff", F::Scorer, {}, {}, {}, false, "", true, {}, {}, true, false, D::Own,
         "Park et al. 2025, KeyDiff", "KeyDiffPress", "the same one-shot score", "",
         "the B keys least similar to the mean of the head's unit keys", ""},
        {MethodId::LagKv, "lagkv", "LagKV", F::Scorer, {K::Sinks, K::Lag}, {}, {P::Sinks, P::LagTail}, false, "", true,
         {K::Sinks, K::Lag}, {}, true, false, D::Own, "Liang et al. 2025, LagKV", "LagKVPress",
         "kvpress takes one global top-k over the partitions' ranks (ties where topk puts them) and keeps part of "
         "the tail when the budget is too small; here each partition gets its share and such a budget is refused",
         "", "the sinks, each partition's share by its keys' and values' spread against the next, the tail whole", "each partition keeps its own share by its scores: kept scores the most within a partition",
         KvpressForm::Same, std::nullopt, std::nullopt, {}, false, KvpressPad::One},
        {MethodId::ChunkKv, "chunkkv", "ChunkKV", F::Wrapper, {K::Window, K::Scorer, K::Chunk}, {},
         {P::Window, P::ScorerEnds}, true, "snapkv", false, {}, {K::Kernel, K::Pooling}, false, false, D::ViaScorer,
         "Liu et al. 2025, ChunkKV: Semantic-Preserving KV Cache Compression", "ChunkKVPress(press)",
         "kvpress's port sums the scores over the layer's heads and keeps one set of chunks for all: that is "
         "chunkkv-kvpress", "", "the best whole chunks of C positions by the scorer's unpooled scores, and the window", "",
         KvpressForm::Twin, std::nullopt, MethodId::ChunkKvKvpress},
        {MethodId::Expected, "expected", "Expected Attention", F::Scorer, {K::Sinks, K::Future}, {N::QueryStats},
         {P::Sinks}, false, "", true, {K::Sinks, K::Future}, {}, false, false, D::Own,
         "Devoto, Jeblick, Jegou 2025, Expected Attention", "ExpectedAttentionPress",
         "the same (epsilon 0, covariance and value norm on)", "",
         "the sinks and the B - S best by the value norm times the expected attention of future queries", ""},
        {MethodId::Cur, "cur", "CUR", F::Scorer, {K::Sinks}, {}, {P::Sinks}, false, "", true, {K::Sinks}, {}, true,
         false, D::Own, "Sengupta, Chaudhary, Chakraborty 2025, CurDKV", "CURPress",
         "the same (kv_product, local window 16, no random projection; each head's scores sum to 1)", "",
         "the sinks and the B - S best by the keys' and values' local leverage product", "", KvpressForm::Same,
         std::nullopt, std::nullopt, {}, false, KvpressPad::One},
        {MethodId::Cake, "cake", "CAKE", F::LayerAllocator, {K::Window, K::Scorer, K::Tau1, K::Tau2}, {N::WindowVotes},
         {P::Window, P::ScorerEnds}, true, "cake", true, {K::Window, K::Gamma}, {}, true, false, D::None,
         "Qin et al. 2025, CAKE: Cascading and Adaptive KV Cache Eviction with Layer Preferences", "",
         "kvpress has no CAKE press (the authors' code is the reference)", "",
         "layers share the budget by their attention's entropy and variance; each keeps its best by the indicator", "",
         KvpressForm::None},
        {MethodId::SimLayerKv, "simlayerkv", "SimLayerKV", F::LayerAllocator, {K::Sinks, K::Lazy}, {N::WindowVotes},
         {P::Sinks, P::Recent}, false, "", false, {}, {}, false, false, D::Own,
         "Zhang et al. 2024, SimLayerKV", "SimLayerKVPress",
         "kvpress keeps one recent position fewer and measures the share over the first 4 and last n_recent", "",
         "a lazy layer keeps its sinks and most recent positions; any other layer the whole prompt", "a lazy layer keeps by recency; the scores (the last query's attention) judge the layer", KvpressForm::None},
        {MethodId::PerLayer, "perlayer", "per-layer", F::LayerAllocator, {K::Window, K::Scorer, K::LayerWeights}, {},
         {P::Window, P::ScorerEnds}, true, "snapkv", false, {}, {}, false, false, D::ViaScorer, "",
         "PerLayerCompressionPress(press)", "kvpress takes a ratio per layer; weights proportional to the kept shares "
         "split the same total", "", "layers share the budget by --layer-weights, each ranking by the scorer", "", KvpressForm::None},
        {MethodId::Leverage, "leverage", "LeverageScore", F::Scorer, {K::Sketch, K::Seed}, {N::PreRopeKeys}, {}, false,
         "", true, {K::Sketch, K::Seed}, {}, true, false, D::None,
         "Chari & Van Durme 2025, Compactor (its leverage half)", "LeverageScorePress",
         "kvpress draws a new sketch at every call; here it is drawn from --seed", "",
         "the B positions of highest approximate leverage of the pre-RoPE keys", "", KvpressForm::None},
        {MethodId::NonCausal, "noncausal", "non-causal attention", F::Scorer, {K::AttnChunk}, {N::PromptReplay}, {},
         false, "", true, {K::AttnChunk}, {}, true, true, D::None,
         "Chari & Van Durme 2025, Compactor (its attention half)", "NonCausalAttnPress",
         "kvpress's padded key columns of a short last chunk absorb part of each softmax; not reproduced", "",
         "the B positions of highest non-causal chunked attention times the value norm", "", KvpressForm::None},
        {MethodId::Compactor, "compactor", "Compactor", F::Scorer,
         {K::Window, K::Sinks, K::Sketch, K::AttnChunk, K::Blend, K::Seed}, {N::PromptReplay, N::PreRopeKeys},
         {P::Window, P::Sinks}, false, "", true, {K::Window, K::Sinks, K::Sketch, K::AttnChunk, K::Blend, K::Seed}, {},
         true, true, D::None,
         "Chari & Van Durme 2025, Compactor: Calibrated Query-Agnostic KV Cache Compression", "CompactorPress",
         "kvpress's defaults are --sinks 8 --window 4 (here 4 and 32)", "",
         "the sinks and the window, then the best by blend x leverage + non-causal attention", ""},
        {MethodId::CriticalKv, "criticalkv", "CriticalKV", F::Wrapper, {K::Window, K::Scorer}, {N::WoNorms},
         {P::Window, P::ScorerEnds}, true, "snapkv", false, {}, {}, false, true, D::ViaScorer,
         "Feng et al. 2025, Identify Critical KV Cache in LLM Inference from an Output Perturbation Perspective",
         "CriticalKVPress(press)",
         "kvpress's first stage is int(B/2) with the window inside and it ranks SnapKV's mean votes (its 1e-4 "
         "weighs W times more); here floor((B - W - sinks)/2) of the summed votes. --convention kvpress applies "
         "kvpress's form",
         "", "half the ranked entries by the scorer, the rest by (score + 1e-4) x the value's norm through W_o", "the first stage keeps the scorer's best whatever they show; the shown second-stage scores order the rest",
         KvpressForm::Convention, KeepSet{P::ScorerEnds}},
        {MethodId::CriticalAdaKv, "criticaladakv", "CriticalAdaKV", F::Wrapper, {K::Window, K::Scorer, K::Alpha},
         {N::WoNorms}, {P::Window, P::ScorerEnds}, true, "snapkv", false, {}, {}, false, true, D::ViaScorer,
         "Feng et al. 2025 (the CriticalKV paper's AdaKV form)", "CriticalAdaKVPress(press)",
         "kvpress ranks SnapKV's mean votes, allocates on raw scores with n_safe = int(alpha * B) and the window "
         "inside, and its first stage is int(b/2) of each head's b; here the summed votes, normalised per head as "
         "adakv. --convention kvpress applies kvpress's form",
         "", "AdaKV's allocation, then CriticalKV's two stages within each head's share", "the first stage keeps the scorer's best whatever they show; the shown second-stage scores order the rest",
         KvpressForm::Convention, KeepSet{P::ScorerEnds}, std::nullopt, {}, true},
        {MethodId::Kvzip, "kvzip", "KVzip", F::Scorer, {K::Sinks, K::RepeatChunk}, {N::Reconstruction}, {P::Sinks},
         false, "", true, {K::Sinks, K::RepeatChunk}, {}, true, true, D::None,
         "Kim et al. 2025, KVzip: Query-Agnostic KV Cache Compression with Context Reconstruction", "KVzipPress",
         "kvpress's repeat prompt follows the chat template; here the plain form for every model, fp32 scores",
         "", "L x KV x B entries shared over all heads by the attention of the prompt's reconstruction", "",
         KvpressForm::None},
        {MethodId::Finch, "finch", "Finch", F::OwnPrefill, {K::Window, K::FinchChunk}, {N::SecondPrefill}, {P::Window},
         false, "", false, {}, {}, false, true, D::None,
         "Corallo & Papotti 2024, FINCH: Prompt-guided Key-Value Cache Compression", "",
         "the paper's chunked prefill; kvpress's FinchPress is finch-kvpress",
         "--think cannot prune Finch's cache: Finch prefills its own, with re-rotated keys",
         "prefills the context again in chunks, each evicted to its share by the question's attention", "ranks while prefilling again: no scores on the capture",
         KvpressForm::Twin, std::nullopt, MethodId::FinchKvpress},
        {MethodId::FinchKvpress, "finch-kvpress", "Finch (kvpress)", F::Scorer, {K::Window}, {N::WindowVotes},
         {P::Window}, false, "", false, {}, {}, false, false, D::None, "Corallo & Papotti 2024, FINCH",
         "FinchPress", "the same (question = the last --window tokens; kept keys re-rotated to 0 .. B-1)",
         "--think cannot prune finch-kvpress's keys: they are re-rotated after the selection, which mixes the "
         "channels ThinK would score",
         "the window and the best by the question's attention, keys re-rotated to consecutive positions", ""},
        {MethodId::ChunkKvKvpress, "chunkkv-kvpress", "ChunkKV (kvpress)", F::Wrapper, {K::Scorer, K::Chunk}, {}, {},
         true, "snapkv", false, {}, {K::Gqa}, false, false, D::None, "Liu et al. 2025, ChunkKV",
         "ChunkKVPress(press)",
         "the same, scores padded as each kvpress scorer pads them; with --scorer lagkv the scores of "
         "LagKVPress(cross_scoring=True), where kvpress's default (False, and --convention kvpress) ranks within "
         "each partition",
         "",
         "one set of whole chunks per layer by the scorer's scores summed over heads", "", KvpressForm::Convention,
         std::nullopt, std::nullopt, {}, true},
    };
    return t;
}

const std::vector<KnobInfo>& knobTable() {
    using T = KnobType;
    constexpr int64_t M = int64_t(1) << 20;
    static const std::vector<KnobInfo> t = {
        {K::Window, "--window", "window", "W", "32", "observation window: the last W prompt queries, kept whole",
         T::Int, 1, M},
        {K::Scorer, "--scorer", "scorer", "scorer", "the method's own", "the method a wrapper ranks by", T::Name},
        {K::Kernel, "--kernel", "kernel", "k", "7", "SnapKV's pooling width along positions (odd)", T::Int, -M, M},
        {K::Pooling, "--pool", "pool", "", "max", "SnapKV's pooling: max or avg", T::Word, 0, 0, "max|avg"},
        {K::Gqa, "--gqa", "gqa", "", "kv-head", "one selection per KV head (votes averaged) or per query head",
         T::Word, 0, 0, "kv-head|query-head"},
        {K::Beta, "--beta", "beta", "beta", "20", "PyramidKV: the first layer's to the last layer's budget ratio",
         T::Real},
        {K::Schedule, "--schedule", "schedule", "", "exact", "PyramidKV: exact (sums to L(B - W)) or factory",
         T::Word, 0, 0, "exact|factory"},
        {K::Alpha, "--alpha", "alpha", "alpha", "0.2", "each head's guaranteed share of the ranked entries", T::Real},
        {K::Sinks, "--sinks", "sinks", "sinks", "4", "the first positions, always kept", T::Int, 0, M},
        {K::Lag, "--lag", "lag", "lag", "128", "LagKV: positions per partition", T::Int, 1, M},
        {K::Chunk, "--chunk", "chunk", "chunk", "10", "ChunkKV: positions per chunk", T::Int, 1, M},
        {K::Future, "--future", "future", "future", "512", "Expected Attention: future query positions averaged",
         T::Int, 1, int64_t(1) << 24},
        {K::Tau1, "--tau1", "tau1", "tau1", "1", "CAKE: the entropy's exponent 1/tau1 in the layer preference",
         T::Real},
        {K::Tau2, "--tau2", "tau2", "tau2", "1", "CAKE: the variance's exponent 1/tau2 in the layer preference",
         T::Real},
        {K::Gamma, "--gamma", "gamma", "gamma", "200", "CAKE's indicator: mean + gamma x variance", T::Real},
        {K::Lazy, "--lazy", "lazy", "lazy", "0.9", "SimLayerKV: a layer is lazy above this share", T::Real},
        {K::LayerWeights, "--layer-weights", "layer_weights", "weights", "equal", "per-layer: each layer's share",
         T::Reals},
        {K::Sketch, "--sketch", "sketch", "sketch", "48", "columns of the keys' Gaussian sketch", T::Int, 1, 1 << 12},
        {K::AttnChunk, "--attn-chunk", "attn_chunk", "attn-chunk", "256", "non-causal attention: positions per chunk",
         T::Int, 1, M},
        {K::RepeatChunk, "--repeat-chunk", "repeat_chunk", "repeat-chunk", "2048",
         "KVzip: prompt positions repeated per reconstruction pass", T::Int, 1, M},
        {K::FinchChunk, "--finch-chunk", "finch_chunk", "finch-chunk", "512", "Finch: context positions per step",
         T::Int, 1, M},
        {K::Blend, "--blend", "blend", "blend", "auto", "Compactor: the leverage scores' weight (auto: 1 - B/T)",
         T::Real},
        {K::Seed, "--seed", "seed", "seed", "0", "Random's draw and LeverageScore's sketch", T::Seed},
        {K::Think, "--think", "think", "think", "0", "ThinK: share of each kept key's channels pruned", T::Real},
        {K::Convention, "--convention", "convention", "", "paper",
         "paper, or kvpress: keep exactly the positions kvpress's press keeps (ratio budgets as int(T(1 - r)))",
         T::Word, 0, 0, "paper|kvpress"},
    };
    return t;
}

std::string escapeCell(const char* text) {
    std::string out;
    for (const char* c = text; *c; ++c) out += *c == '|' ? std::string("\\|") : std::string(1, *c);
    return out;
}

std::string knobList(KnobSet set, const char* sep) {
    std::string out;
    for (const KnobInfo& k : knobTable())
        if (set.has(k.knob)) out += (out.empty() ? "" : sep) + std::string(k.flag);
    return out;
}

// The tests that pin each method's definition (GoogleTest filters, in tests/engine/): the
// table's "tests" column, printed by kvlens methods --markdown and --json. Every method is
// also in PressScoresRule.* (its shown scores order what it keeps), and each kvpress form in
// KvpressConvention.*.
struct MethodTests {
    MethodId id;
    const char* tests;
};
constexpr MethodTests kTests[] = {
    {MethodId::Full, "DTypes/FullKvBitIdentity.*, CompressedCacheTest.*"},
    {MethodId::SnapKv, "OracleParity.*, Params/LayerSelectionPress.*, Press.SnapKvKeepsTopPooledVotesPerHead"},
    {MethodId::PyramidKv, "PyramidSchedule.*, OracleParity.*, Press.PyramidKvGivesEachLayerItsScheduledSnapKvBudget"},
    {MethodId::StreamingLlm, "Press.StreamingLlmKeepsSinksAndTheMostRecent"},
    {MethodId::H2o, "Press.H2oKeepsTheTopAccumulatedAttention, Press.H2oScoresComeOnFirstUseFromAReplayOfThePrompt, Shapes/H2oScorerShapes.*"},
    {MethodId::AdaKv, "Press.AdaKvSharesEachLayersPoolAmongHeads, Params/LayerSelectionPress.*, Shapes/ScorerWrapperShapes.*"},
    {MethodId::Random, "Press.RandomIsReproduciblePerSeedAndDiffersAcrossSeeds, DecodeRandom.*"},
    {MethodId::Tova, "Shapes/ScoringPress.*, ScoringPress.*"},
    {MethodId::Knorm, "Shapes/ScoringPress.*, ScoringPress.*"},
    {MethodId::KeyDiff, "Shapes/ScoringPress.*, ScoringPress.*"},
    {MethodId::LagKv, "Shapes/LagChunkPress.LagKvKeepsWhatTheDefinitionKeeps, LagChunkPress.*"},
    {MethodId::ChunkKv, "Shapes/LagChunkPress.ChunkKvKeepsWholeChunksByTheirSummedVotes, Shapes/ScorerWrapperShapes.*"},
    {MethodId::Expected, "RopeLayouts/ExpectedAttention.*, ExpectedAttentionCapture.*, ExpectedAttentionDecode.*"},
    {MethodId::Cur, "Shapes/CurPressShapes.*, CurPress.*"},
    {MethodId::Cake, "Shapes/CakePressShapes.*, CakePress.*"},
    {MethodId::SimLayerKv, "Shapes/SimLayerKvShapes.*, SimLayerKvPress.*, DecodeSimLayerKv.*"},
    {MethodId::PerLayer, "PerLayerPress.*"},
    {MethodId::Leverage, "Shapes/CompactorShapes.*, CompactorPress.*"},
    {MethodId::NonCausal, "Shapes/CompactorShapes.*, CompactorPress.*"},
    {MethodId::Compactor, "Shapes/CompactorShapes.*, CompactorPress.*"},
    {MethodId::CriticalKv, "Shapes/CriticalKvShapes.*, CriticalKvPress.*, DecodeCritical.*"},
    {MethodId::CriticalAdaKv, "Shapes/CriticalKvShapes.CriticalAdaKvKeepsTheDefinition, DecodeCritical.*"},
    {MethodId::Kvzip, "Shapes/KvzipShapes.*, KvzipPress.*"},
    {MethodId::Finch, "Gqa/FinchShapes.*, FinchPress.*"},
    {MethodId::FinchKvpress, "FinchKvpress.*"},
    {MethodId::ChunkKvKvpress, "Shapes/ChunkKvKvpress.*, ChunkKvKvpress.*"},
};

// Every method has its line, in MethodId order (a method added without one fails the build).
constexpr bool everyMethodHasItsTests() {
    if (sizeof kTests / sizeof kTests[0] != size_t(MethodId::ChunkKvKvpress) + 1) return false;
    for (size_t i = 0; i < sizeof kTests / sizeof kTests[0]; ++i)
        if (kTests[i].id != MethodId(i)) return false;
    return true;
}
static_assert(everyMethodHasItsTests(), "every method names the tests that pin it, in MethodId order");

const char* testsOf(MethodId id) { return kTests[int(id)].tests; }

template <typename E>
std::string enumList(EnumSet<E> set, const char* (*name)(E), const char* sep) {
    std::string out;
    for (int i = 0; i < int(E::Count_); ++i)
        if (set.has(E(i))) out += (out.empty() ? "" : sep) + std::string(name(E(i)));
    return out;
}


// Every method on a model with sliding-window layers (Phi-3, Mistral v0.1, Gemma): stated once
// here, applied by Press::select (keepInsideWindows) and the compressed cache.
const char* const kSlidingWindowRule =
    "On a local layer (sliding window W, prompt T > W - 1) a decode step reaches only positions T - W + 1 .. T - 1, "
    "so each head keeps min(its budget, W - 1) of them: those the method kept there, then the rest of the window by "
    "the method's scores (NaN first, ties to the lower position; the most recent for a method without scores). A "
    "window under the budget keeps the whole window and frees nothing; the compressed decode drops rows as the window "
    "slides, as the full cache's does. The scores themselves apply each query's window. kvpress instead leaves "
    "Gemma 3's sliding layers uncompressed. Not yet on a windowed model (refused in one line): finch, finch-kvpress, "
    "the non-causal scorer and compactor (which blends it in), kvzip, --decode-every.";

}  // namespace

const std::vector<MethodInfo>& all() { return table(); }

const MethodInfo& info(MethodId id) { return table()[static_cast<size_t>(id)]; }

const MethodInfo* find(std::string_view name) {
    for (const MethodInfo& m : table())
        if (name == m.name) return &m;
    return nullptr;
}

const MethodInfo& named(std::string_view name, const std::string& what) {
    if (const MethodInfo* m = find(name)) return *m;
    std::string list;
    for (const auto& n : names()) list += (list.empty() ? "" : ", ") + n;
    throw Error(what + " '" + std::string(name) + "' is not one of " + list);
}

const std::vector<std::string>& names() {
    static const std::vector<std::string> n = [] {
        std::vector<std::string> out;
        for (const MethodInfo& m : table()) out.push_back(m.name);
        return out;
    }();
    return n;
}

const std::vector<std::string>& scorerNames() {
    static const std::vector<std::string> n = [] {
        std::vector<std::string> out;
        for (const MethodInfo& m : table())
            if (m.usableAsScorer) out.push_back(m.name);
        return out;
    }();
    return n;
}

const std::vector<KnobInfo>& knobs() { return knobTable(); }

const KnobInfo& knob(Knob k) { return knobTable()[static_cast<size_t>(k)]; }

bool kvpressReproduced(const PressParams& p) {
    const MethodInfo* m = find(p.method);
    if (!m || m->kvpressForm == KvpressForm::None) return false;
    const MethodInfo* s = m->takesScorer ? find(p.scorerInEffect()) : nullptr;
    return !s || s->kvpressForm != KvpressForm::None;
}

std::string underConvention(const std::string& method, Convention convention) {
    const MethodInfo* m = find(method);
    return convention == Convention::Kvpress && m && m->kvpressTwin ? info(*m->kvpressTwin).name : method;
}

KeepSet keepsUnder(const MethodInfo& m, Convention c) {
    return c == Convention::Kvpress && m.kvpressKeeps ? *m.kvpressKeeps : m.keeps;
}

KnobSet effectiveKnobs(const PressParams& p) {
    const MethodInfo* m = find(p.method);
    if (!m) return {};
    KnobSet set = m->knobs;
    if (m->takesScorer) {
        if (const MethodInfo* s = find(p.scorerInEffect())) set |= s->scorerKnobs - m->masksScorerKnobs;
    }
    if (p.think > 0.0) set |= KnobSet{Knob::Window, Knob::Think};
    if (kvpressReproduced(p)) set.add(Knob::Convention);
    if (p.convention == Convention::Kvpress) set = set - m->kvpressUnread;
    return set;
}

NeedSet effectiveNeeds(const PressParams& p) {
    const MethodInfo* m = find(p.method);
    if (!m) return {};
    NeedSet set = m->needs;
    if (m->takesScorer) {
        if (const MethodInfo* s = find(p.scorerInEffect())) set |= s->needs;
    }
    return set;
}

std::string crossHeadNote(const PressParams& p) {
    const MethodInfo* m = find(underConvention(p.method, p.convention));
    if (!m || !m->comparesHeads) return "";
    const std::string scorerName = p.scorer.empty() ? m->defaultScorer : p.scorer;
    const MethodInfo* s = find(scorerName);
    if (!s || s->crossHeadComparable) return "";
    return std::string(m->name) + " compares " + s->name + "'s scores across KV heads, and " + s->name +
           "'s scores share no scale across heads: a head whose scores run larger takes more of the budget "
           "(kvpress compares them the same way); " +
           listWhere([](const MethodInfo& x) { return x.usableAsScorer && x.crossHeadComparable; }, " or ") +
           " share one";
}

const char* familyName(MethodFamily f) {
    switch (f) {
        case MethodFamily::Baseline: return "baseline";
        case MethodFamily::Scorer: return "scorer";
        case MethodFamily::Wrapper: return "wrapper";
        case MethodFamily::LayerAllocator: return "layer allocator";
        case MethodFamily::OwnPrefill: return "own prefill";
    }
    return "";
}

const char* needName(Need n) {
    switch (n) {
        case Need::WindowVotes: return "window votes";
        case Need::QueryStats: return "query statistics";
        case Need::PromptReplay: return "prompt replay";
        case Need::PreRopeKeys: return "pre-RoPE keys";
        case Need::WoNorms: return "W_o value norms";
        case Need::Reconstruction: return "reconstruction pass";
        case Need::SecondPrefill: return "second prefill";
        case Need::Count_: break;
    }
    return "";
}

const char* keepName(Keep k) {
    switch (k) {
        case Keep::Window: return "window";
        case Keep::Sinks: return "sinks";
        case Keep::LagTail: return "LagKV's tail";
        case Keep::ScorerEnds: return "the scorer's ends";
        case Keep::Recent: return "recent";
        case Keep::Last: return "the last position";
        case Keep::Count_: break;
    }
    return "";
}

const char* kvpressFormName(KvpressForm f) {
    switch (f) {
        case KvpressForm::Same: return "the same";
        case KvpressForm::Convention: return "with --convention kvpress";
        case KvpressForm::None: return "not reproduced";
        case KvpressForm::Twin: return "as its kvpress twin with --convention kvpress";
    }
    return "";
}

const char* decodeFormName(DecodeForm d) {
    switch (d) {
        case DecodeForm::None: return "none";
        case DecodeForm::Own: return "own";
        case DecodeForm::ViaScorer: return "via its scorer";
    }
    return "";
}

std::string knobReaders(const KnobInfo& k) {
    if (k.knob == Knob::Think)
        return std::string("every method but ") + listWhere([](const MethodInfo& m) { return *m.noThink != '\0'; });
    if (k.knob == Knob::Convention) return listWhere([](const MethodInfo& m) { return m.kvpressForm != KvpressForm::None; });
    const bool viaScorer = k.knob != Knob::Scorer && std::any_of(table().begin(), table().end(), [&](const MethodInfo& m) {
                               return m.usableAsScorer && m.scorerKnobs.has(k.knob);
                           });
    const std::string unread = listWhere([&](const MethodInfo& m) { return m.kvpressUnread.has(k.knob); });
    return listWhere([&](const MethodInfo& m) {
               return m.knobs.has(k.knob) || (m.usableAsScorer && m.scorerKnobs.has(k.knob));
           }) +
           (viaScorer ? " (and a wrapper ranking by one of them)" : "") +
           (unread.empty() ? "" : "; not " + unread + " under --convention kvpress");
}

std::string knobValuesText(const KnobInfo& k) {
    switch (k.type) {
        case KnobType::Int: return "an integer in [" + std::to_string(k.min) + ", " + std::to_string(k.max) + "]";
        case KnobType::Real: return k.knob == Knob::Blend ? "a number >= 0, or auto" : "a number";
        case KnobType::Seed: return "an integer in [0, 2^64 - 1]";
        case KnobType::Word: {
            std::string words = k.words;
            const size_t bar = words.rfind('|');
            std::string out;
            for (char c : words.substr(0, bar)) out += c == '|' ? std::string(", ") : std::string(1, c);
            return out + " or " + words.substr(bar + 1);
        }
        case KnobType::Name: return "a method's name (" + listWhere([](const MethodInfo& m) { return m.usableAsScorer; }, " or ") + ")";
        case KnobType::Reals: return "numbers, comma-separated (JSON: a list)";
    }
    return "";
}

std::string tableText() {
    // Columns as wide as their longest entry.
    size_t name = 6, family = 6, decode = 6, kvpress = 7;
    for (const MethodInfo& m : table()) {
        name = std::max(name, std::strlen(m.name));
        family = std::max(family, std::strlen(familyName(m.family)));
        decode = std::max(decode, std::strlen(decodeFormName(m.decode)));
        kvpress = std::max(kvpress, std::strlen(m.kvpress));
    }
    std::ostringstream s;
    auto row = [&](const char* a, const char* b, const char* c, const char* d, const char* e) {
        s << a << std::string(name + 2 - std::strlen(a), ' ') << b << std::string(family + 2 - std::strlen(b), ' ') << c
          << std::string(decode + 2 - std::strlen(c), ' ') << d << std::string(kvpress + 2 - std::strlen(d), ' ') << e
          << "\n";
    };
    row("method", "family", "decode", "kvpress", "keeps");
    for (const MethodInfo& m : table())
        row(m.name, familyName(m.family), decodeFormName(m.decode), *m.kvpress ? m.kvpress : "-", m.summary);
    s << "\nSliding windows: " << kSlidingWindowRule << "\n";
    return s.str();
}

std::string tableJson() {
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (const MethodInfo& m : table()) {
        nlohmann::ordered_json knobsJson = nlohmann::ordered_json::array();
        for (const KnobInfo& k : knobTable())
            if (m.knobs.has(k.knob)) knobsJson.push_back(k.json);
        nlohmann::ordered_json kvpressUnread = nlohmann::ordered_json::array();
        for (const KnobInfo& k : knobTable())
            if (m.kvpressUnread.has(k.knob)) kvpressUnread.push_back(k.json);
        nlohmann::ordered_json scorerKnobs = nlohmann::ordered_json::array();
        for (const KnobInfo& k : knobTable())
            if (m.scorerKnobs.has(k.knob)) scorerKnobs.push_back(k.json);
        nlohmann::ordered_json needs = nlohmann::ordered_json::array(), keeps = nlohmann::ordered_json::array();
        for (int i = 0; i < int(Need::Count_); ++i)
            if (m.needs.has(Need(i))) needs.push_back(needName(Need(i)));
        for (int i = 0; i < int(Keep::Count_); ++i)
            if (m.keeps.has(Keep(i))) keeps.push_back(keepName(Keep(i)));
        out.push_back({{"name", m.name},
                       {"display", m.display},
                       {"family", familyName(m.family)},
                       {"knobs", knobsJson},
                       {"takes_scorer", m.takesScorer},
                       {"default_scorer", m.defaultScorer},
                       {"usable_as_scorer", m.usableAsScorer},
                       {"scorer_knobs", scorerKnobs},
                       {"needs", needs},
                       {"keeps", keeps},
                       {"cross_head_comparable", m.crossHeadComparable},
                       {"compares_heads", m.comparesHeads},
                       {"costly_first_use", m.costlyFirstUse},
                       {"decode", decodeFormName(m.decode)},
                       {"paper", m.paper},
                       {"kvpress", m.kvpress},
                       {"kvpress_delta", m.kvpressDelta},
                       {"kvpress_form", kvpressFormName(m.kvpressForm)},
                       {"kvpress_twin", m.kvpressTwin ? info(*m.kvpressTwin).name : ""},
                       {"kvpress_unread", kvpressUnread},
                       {"summary", m.summary},
                       {"rank_rule", m.rankRule},
                       {"tests", testsOf(m.id)}});
    }
    nlohmann::ordered_json knobsOut = nlohmann::ordered_json::array();
    for (const KnobInfo& k : knobTable())
        knobsOut.push_back({{"flag", k.flag},
                            {"json", k.json},
                            {"default", k.defaultText},
                            {"values", knobValuesText(k)},
                            {"help", k.help}});
    return nlohmann::ordered_json{{"methods", out}, {"knobs", knobsOut}, {"sliding_window_rule", kSlidingWindowRule}}
               .dump(2) +
           "\n";
}

std::string tableMarkdown() {
    std::ostringstream s;
    s << "# Methods\n\n"
      << "Generated by `kvlens methods --markdown` from the method table (`core/Methods.cpp`); a test keeps this "
         "page equal to it. Each method's definition in depth, with its costs: [method-notes.md](method-notes.md). "
         "The tests column names the GoogleTest filters (tests/engine/) that pin each definition; every method is "
         "also in PressScoresRule.* (its shown scores order what it keeps) and every kvpress form in "
         "KvpressConvention.*.\n\n"
      << "**Sliding windows.** " << kSlidingWindowRule << "\n\n"
      << "| method | family | keeps | knobs | needs | decode | paper | kvpress | kvpress's positions | against kvpress "
         "| tests |\n"
      << "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n";
    for (const MethodInfo& m : table()) {
        std::string knobsCell = knobList(m.knobs, ", ");
        if (m.takesScorer) knobsCell += std::string(knobsCell.empty() ? "" : ", ") + "the scorer's";
        std::string needs = enumList<Need>(m.needs, needName, ", ");
        s << "| `" << m.name << "` | " << familyName(m.family) << (m.usableAsScorer ? ", usable as --scorer" : "")
          << " | " << escapeCell(m.summary) << (*m.rankRule ? std::string(" (its scores: ") + m.rankRule + ")" : "")
          << " | " << (knobsCell.empty() ? "-" : knobsCell) << " | "
          << (needs.empty() ? "-" : needs) << (m.costlyFirstUse ? " (costly first use)" : "") << " | "
          << decodeFormName(m.decode) << " | " << (*m.paper ? escapeCell(m.paper) : "-") << " | "
          << (*m.kvpress ? std::string("`") + m.kvpress + "`" : std::string("-")) << " | "
          << (m.kvpressTwin ? std::string("as `") + info(*m.kvpressTwin).name + "` with --convention kvpress"
              : *m.kvpress  ? std::string(kvpressFormName(m.kvpressForm))
                            : std::string("-"))
          << " | "
          << (*m.kvpressDelta ? escapeCell(m.kvpressDelta) : "-") << " | " << escapeCell(testsOf(m.id)) << " |\n";
    }
    s << "\n## Knobs\n\n| flag | JSON key | values | default | what it sets | read by |\n"
         "| --- | --- | --- | --- | --- | --- |\n";
    for (const KnobInfo& k : knobTable()) {
        s << "| `" << k.flag << "` | `" << k.json << "` | " << escapeCell(knobValuesText(k).c_str()) << " | "
          << k.defaultText << " | " << escapeCell(k.help) << " | " << knobReaders(k) << " |\n";
    }
    return s.str();
}

}  // namespace kvlens::methods
