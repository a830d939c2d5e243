// Compression during decoding, as kvpress's DecodingPress: every `every` decode steps,
// each head of a compressed cache longer than the budget keeps `budget` of its rows,
// chosen by the method's rule on what the cache holds then:
//   streamingllm  its original rolling form: the first `sinks` rows and the most recent
//   knorm         the rows of lowest key L2 norm
//   keydiff       the rows least similar to the anchor (the mean of the head's unit keys)
//   h2o           its original rolling form (Zhang et al. 2023): the last `window` rows and
//                 the heavy hitters, the rows of highest attention accumulated over the prompt
//                 (the capture's H2O scores of the kept positions, when it has them) and over
//                 every decode step since (each step's attention of the head's query heads,
//                 averaged, on every row the cache then holds, the new one included)
//   tova          its rolling form (Oren et al. 2024): the rows the step's query attends to
//                 most, its attention averaged over all the layer's query heads (one set for
//                 the layer while its heads hold the same rows, as a TOVA selection's do)
//   snapkv        as kvpress's DecodingPress(SnapKVPress): the observation window is the last
//                 `window` queries of the sequence (the prompt's last ones, from the capture,
//                 then each decode step's); the head keeps its last `window` rows (those
//                 queries' own tokens) and the budget - window rows before them of most pooled
//                 votes (the window queries' causal softmax summed, the mean of the query heads
//                 reading the head, pooled along the rows as `--kernel`/`--pool` say)
//   pyramidkv     SnapKV's decode form with a budget per layer: layer l keeps its share of
//                 layers x budget as PyramidKV's prefill (PyramidKvPress::prefixBudgets, --beta,
//                 --schedule) shares it for a prompt as long as the sequence so far
//   adakv         AdaKV around its --scorer's decode form (below), as kvpress's
//                 DecodingPress(AdaKVPress(scorer)): each layer longer than heads x budget
//                 keeps that many, its heads sharing them as AdaKV's prefill does
//                 (AdaKvPress::keepLayer: the last `window` rows and the scorer's sinks on
//                 every head, floor(alpha x P) best of each, the rest by a top-k over all heads;
//                 SnapKV's votes normalised per head); heads stay ragged, the layer at the budget
//   chunkkv       ChunkKV around its --scorer's decode form: a head keeps its scorer's sinks,
//                 its last `window` rows (or LagKV's tail) and the best
//                 floor((budget - those) / chunk) chunks of `chunk` consecutive rows between
//                 them (chunks from the first row after the sinks; the scores summed, SnapKV's
//                 votes unpooled), whole: so up to 2 (chunk - 1) rows under the budget (the
//                 budget's remainder, and a short last chunk among those kept)
//   perlayer      its --scorer's decode form with a budget per layer: the layers share
//                 layers x (budget - fixed) as its prefill shares them (--layer-weights,
//                 presses::cakeLayerBudgets) for a prompt as long as the sequence so far, fixed
//                 the rows kept whole (the window, with --scorer lagkv the longer of it and
//                 LagKV's longest tail 2 lag - 1, plus the scorer's sinks); the cache's mean at B
//   criticalkv    CriticalKV around its --scorer's decode form (kvpress's
//                 DecodingPress(CriticalKVPress(scorer))): a head above the budget keeps its
//                 last `window` rows and the scorer's sinks, then of the k ranked rows the
//                 floor(k / 2) best by the scorer and the rest by (score + 1e-4) x ||W_o v||_1
//                 (CriticalKvPress::keepHead); each row's norm (the mean over the query heads
//                 reading the head) comes with it: the capture's for the prompt's rows, the
//                 model's W_o on each decoded row's value, computed when a compression is due
//   criticaladakv AdaKV's decode form (above) allocates a layer above heads x budget among its
//                 heads; each head then keeps its share as criticalkv does, its first stage at
//                 least AdaKV's floor(alpha x P) (as its prefill, CriticalAdaKvPress)
//   simlayerkv    its lazy layers (SimLayerKvPress::lazyLayers at the budget, from the prompt's
//                 last query, as its prefill decides them; none when the budget holds the whole
//                 prompt, as its selection keeps every layer whole) in StreamingLLM's rolling
//                 form, the first `sinks` rows and the most recent; the other layers keep every
//                 row (the paper: a lazy layer stays lazy for the whole generation of an input)
//   random        the last `window` rows and budget - window rows drawn uniformly from the
//                 older ones, a new draw per compression (RandomPress::draw with the seed, the
//                 layer, the head and the compression's count): the floor to beat
//   A wrapper's --scorer ranks the rows as that method's decode form does (snapkv, tova,
//   h2o: the attention accumulated over the prompt and every step, knorm, keydiff, cur,
//   expected; lagkv: its lag-relative scores, NaN on the sinks and the tail), and always
//   keeps the last `window` rows too. TOVA's score is the layer's mean over its query heads
//   (ChunkKV's and per-layer's heads keep the same rows), under AdaKV, CriticalKV and
//   CriticalAdaKV each head's own readers' (their heads keep different rows).
//   lagkv         LagKV's rule on the rows (Liang et al. 2025 compress as the sequence grows):
//                 after the first `sinks`, partitions of `lag` rows, each but the last full
//                 one scored against the next (presses::lagLocalScores) and keeping its share
//                 of budget - sinks - tail; the sinks and the tail (the last full partition
//                 with the remainder) whole; the budget must hold sinks + 2 lag - 1
//   cur           CUR's score on the rows (squared key norm x squared value norm, each over
//                 its aligned group of 16 rows), the first `sinks` rows always kept
//   expected      Expected Attention on the rows after the first `sinks` (always kept), with
//                 the statistics of every query so far: the prompt's after its sinks and each
//                 decode step's, turned back from RoPE (mean, covariance over the count), RoPE
//                 averaged over the `future` positions from the next one, times ||v||
// (ties to the lower row). So a long output stays within the budget. Kept keys carry
// the RoPE rotation of their original positions and new tokens take the next original
// position: no re-rotation is needed while the sequence stays within the model's
// context (StreamingLLM's re-indexing to run past it is not done here).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/PressParams.h"
#include "core/Selection.h"
#include "engine/compress/Capture.h"
#include "engine/compress/CompressedCache.h"
#include "engine/compress/QueryStatistics.h"
#include "engine/model/LlamaModel.h"

namespace kvlens {

// A ForwardObserver of the decode steps (H2O's rolling form needs each step's queries):
// pass it to LlamaModel::decode, then call afterStep.
class DecodeCompressor : public ForwardObserver {
public:
    // Throws kvlens::Error naming --decode-every for a method without a decode form,
    // an `every` below 1, or a budget that is a ratio (decoding needs entries).
    DecodeCompressor(const PressParams& params, int64_t every);
    static bool supports(const std::string& method);
    // Throws kvlens::Error naming --decode-every for an `every` below 1.
    static void checkEvery(int64_t every);
    // Throws kvlens::Error (one line) for a model with a sliding window (ModelConfig::windowAt:
    // compression while decoding does not follow the rows a window drops yet), Gemma 2's
    // attention soft-cap or Gemma 3's local RoPE base (not in the decode forms' attention and
    // statistics yet). start() asks it of the capture; the commands ask it before the prefill.
    static void requireModelSupport(const ModelConfig& config);
    // The methods with a decode form (the method table's), for messages.
    static std::string supportedList();
    // The wrappers with a decode form around their --scorer's (adakv, chunkkv, perlayer,
    // criticalkv, criticaladakv).
    static bool wraps(const std::string& method);
    // Whether a wrapper with this --scorer has a decode form (the scorer's own rule on the rows).
    static bool scorerDecodes(const std::string& scorer);

    // Before the first step on a cache gathered from `selection` of `capture`: H2O's
    // accumulated attention of the kept positions (zero where the capture has none);
    // SnapKV's window, the capture's last `window` prompt queries; Expected Attention's
    // query statistics, the capture's (throws kvlens::Error when it has none); CriticalKV's
    // projected value norms of the kept positions, the capture's (Capture::keepScoresFor made
    // them), and `model`'s output projection for the rows decoded later (throws without either);
    // SimLayerKV's lazy layers.
    void start(const Capture& capture, const Selection& selection, const LlamaModel* model = nullptr);
    // The step's queries (after RoPE), kept for afterStep (H2O, TOVA, SnapKV) or added to
    // the statistics (Expected Attention).
    void onQueries(int64_t layer, const at::Tensor& q, int64_t firstPosition) override;
    // H2O: the attention each row of `layer`'s head `head` has accumulated (tests).
    const std::vector<double>& accumulated(int64_t layer, int64_t head) const { return scores_[layer][head]; }

    // Call after each decode step on `cache` (which must not borrow the capture's
    // buffers): compresses when the step is due. Returns whether it dropped any row.
    bool afterStep(CompressedCache& cache);

    int64_t budget() const { return budget_; }
    int64_t every() const { return every_; }

private:
    // The `budget` rows head `head` of `layer` keeps of `cache` (longer than the budget),
    // ascending.
    std::vector<int64_t> keptRows(const CompressedCache& cache, int64_t layer, int64_t head, int64_t budget) const;
    // The scorer's score of every row of head `head` of `layer` (fp32 [n]; NaN: always kept,
    // the sinks of cur and expected, SnapKV's window rows, and with `keepWindow` the last
    // `window` rows as a wrapper keeps them).
    std::vector<float> rowScores(const CompressedCache& cache, int64_t layer, int64_t head, bool keepWindow) const;

    // Keeps `rows` of head `head` of `layer`, and their H2O or TOVA scores and CriticalKV norms
    // with them.
    void keep(CompressedCache& cache, int64_t layer, int64_t head, const std::vector<int64_t>& rows);
    // H2O: adds this step's attention (from the queries onQueries kept) to every row;
    // TOVA: replaces each row's score by it.
    void accumulate(const CompressedCache& cache);
    bool observes() const { return scorer_ == MethodId::H2o || scorer_ == MethodId::Tova; }
    // The rows a wrapper's scorer keeps whole at most: its window (with lagkv the longer of it
    // and LagKV's longest tail, 2 lag - 1) and its sinks.
    int64_t fixedRows() const;
    bool votes() const { return scorer_ == MethodId::SnapKv; }
    bool critical() const { return method_ == MethodId::CriticalKv || method_ == MethodId::CriticalAdaKv; }
    // CriticalKV: the projected value norms of the rows decoded since the last compression.
    void extendNorms(const CompressedCache& cache);
    bool expects() const { return scorer_ == MethodId::Expected; }
    // The query heads reading `head` of `cache` (the same in every layer).
    static std::vector<int64_t> readersOf(const CompressedCache& cache, int64_t head);
    PressParams params_;
    MethodId method_ = MethodId::Full;
    MethodId scorer_ = MethodId::Full;  // the rule ranking the rows: the method's own, SnapKV's for pyramidkv, a wrapper's scorer
    int64_t budget_ = 0, every_ = 1, steps_ = 0;
    std::vector<at::Tensor> queries_;                     // H2O, TOVA: [layer] -> [H, D] fp32 of this step
    std::vector<std::vector<std::vector<double>>> scores_;  // H2O, TOVA: [layer][head][row]
    std::vector<at::Tensor> window_;                      // SnapKV: [layer] -> [H, <= window, D] fp32, the last queries
    // Expected Attention: the capture's statistics (for RoPE), and per layer the sum and the
    // sum of outer products of the pre-RoPE queries counted so far ([H, D], [H, D, D] fp64).
    // Each step makes new tensors, so a copy of this compressor keeps its own.
    std::optional<QueryStatistics> stats_;
    std::vector<at::Tensor> querySum_, queryOuter_;
    int64_t queryCount_ = 0;
    at::Tensor rotation_;  // RoPE averaged over the future positions: one per compression, every layer's
    // CriticalKV: the model (its W_o) and each row's projected value norm, [layer][head][row].
    const LlamaModel* model_ = nullptr;
    std::vector<std::vector<std::vector<double>>> norms_;
    std::vector<bool> lazy_;  // SimLayerKV: the layers kept at the budget
};

}  // namespace kvlens
