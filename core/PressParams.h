// The knobs of a KV-cache compression method ("press"): budget, window,
// pooling, GQA mode, PyramidKV schedule, AdaKV safeguard, seed.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/Methods.h"

namespace kvlens {

enum class GqaMode {
    KvHead,     // one selection per KV head, votes averaged over its query heads
    QueryHead,  // one selection per query head (the original SnapKV code's layout)
};
enum class Pooling { Max, Avg };
enum class PyramidSchedule {
    Exact,    // linear fall whose layer budgets sum to exactly L x (B - W)
    Factory,  // the reference implementation's integer schedule (overshoots slightly)
};

const char* gqaModeName(GqaMode mode);
const char* poolingName(Pooling pooling);
const char* scheduleName(PyramidSchedule schedule);
const char* conventionName(Convention convention);

struct PressParams {
    // A name from the method table (core/Methods).
    std::string method = "snapkv";
    // AdaKV, ChunkKV (both forms), CAKE, per-layer, CriticalKV, CriticalAdaKV: the method whose scores they
    // rank by ("" = their own: SnapKV's votes for all but CAKE, CAKE's eviction indicator for CAKE).
    std::string scorer;
    // Per-layer: each layer's relative share of L x (B - W - sinks) (empty: equal shares).
    std::vector<double> layerWeights;
    int64_t budget = 0;             // KV entries per head, window included; 0: use budgetRatio
    double budgetRatio = 0.0;       // of the prompt length, when budget is 0
    int64_t window = 32;
    int64_t kernel = 7;
    Pooling pooling = Pooling::Max;
    double beta = 20.0;
    double alpha = 0.2;
    GqaMode gqa = GqaMode::KvHead;
    PyramidSchedule schedule = PyramidSchedule::Exact;
    int64_t sinks = 4;              // StreamingLLM, LagKV, Expected Attention, CUR: first positions always kept
    uint64_t seed = 0;
    int64_t lag = 128;              // LagKV: partition size (each scored against the next)
    int64_t chunk = 10;             // ChunkKV: positions per chunk
    int64_t future = 512;           // Expected Attention: future query positions its RoPE averages over
    double tau1 = 1.0;              // CAKE: layer preference = entropy^(1/tau1) x variance^(1/tau2)
    double tau2 = 1.0;
    double gamma = 200.0;           // CAKE: eviction indicator = mean + gamma x variance over the window
    double lazy = 0.9;              // SimLayerKV: a layer is lazy when its last query gives the
                                    // sinks and the recent positions more than this share
    int64_t sketch = 48;            // LeverageScore, Compactor: columns of the Gaussian sketch of the keys
    int64_t attnChunk = 256;        // Non-causal attention, Compactor: positions per attention chunk
    double blend = -1.0;            // Compactor: weight of the leverage scores beside the non-causal
                                    // attention's; < 0: the compression ratio 1 - B/T (kvpress's default)
    int64_t repeatChunk = 2048;     // KVzip: context positions repeated per reconstruction pass
    int64_t finchChunk = 512;       // Finch: context positions prefilled per step (then evicted to its share)
    // paper (the default) or kvpress: keep exactly what kvpress's press keeps (core/Methods says
    // which methods can; a ratio budget is then int(T x ratio), as kvpress's int(T x (1 - r))).
    Convention convention = Convention::Paper;
    double think = 0.0;             // ThinK, over any method: share of each kept key's channels pruned
                                    // (zeroed), by the window queries' and the kept keys' channel energy
    static constexpr int64_t kMaxQuerySinks = 64;  // the capture keeps this many first queries

    // Entries per head for a prompt of `promptLength` tokens (ratio rounded, at least 1; under
    // --convention kvpress the ratio truncates, as kvpress's int(T x (1 - r))).
    int64_t resolveBudget(int64_t promptLength) const;

    // Throws kvlens::Error naming the flag: unknown method, an even or
    // non-positive kernel, alpha outside [0, 1], beta < 1, and, unless the
    // budget holds the whole prompt (then everything is kept, whatever the
    // window): window >= prompt or above `maxWindow`, budget <= window (for
    // window-based methods) or <= sinks, a LagKV budget that cannot hold its sinks and
    // tail, a ChunkKV budget without room for one chunk beside the window. A ratio budget's message names the
    // ratio, the prompt length and what it rounded to.
    void validate(int64_t promptLength, int64_t maxWindow) const;
    // The checks that hold for any prompt (method, budget sign and ratio range,
    // kernel, beta, alpha, sinks, window >= 1), made before a model loads: the
    // window and budget against each other wait for the prompt, since a budget
    // that holds the whole prompt keeps everything whatever the window.
    void validateSettings() const { validate(0, 0); }

    // One line for tables: "snapkv B=128 W=32 k=7 max kv-head".
    std::string describe() const;
    // The parameters a describe() line was written from (as stored with niah runs);
    // what the line leaves out keeps its default. Throws kvlens::Error naming `what`
    // and the word it cannot read.
    static PressParams fromDescription(const std::string& line, const std::string& what = "params");

    static const std::vector<std::string>& methodNames();
    // The method's line in the method table (core/Methods); nullptr for an unknown name.
    const MethodInfo* info() const;
    // Whether the method is FullKV (keeps everything: the reference of every comparison).
    bool isFull() const { return info() != nullptr && info()->id == MethodId::Full; }
    // Whether the method in effect reads `knob` (its own, its scorer's, the window under ThinK).
    bool reads(Knob knob) const;
    // Whether the method itself (not its scorer) keeps `keep` whole.
    bool keepsOwn(Keep keep) const;
    // Methods that keep the observation window (and so need budget > window).
    bool usesWindow() const;
    // Methods that always keep the first `sinks` positions (a wrapper too when its
    // scorer keeps sinks).
    bool usesSinks() const;
    // The scorers the methods that take --scorer rank by.
    static const std::vector<std::string>& scorerNames();
    // Whether the method takes --scorer (adakv, chunkkv, chunkkv-kvpress, cake, perlayer, criticalkv,
    // criticaladakv).
    bool takesScorer() const;
    // Whether the method or its scorer ranks by `name` (e.g. "noncausal": the method
    // itself, Compactor, or a wrapper whose scorer is one of them).
    bool ranksBy(const std::string& name) const;
    // Compactor's weight of the leverage scores for a prompt of `promptLength`: --blend,
    // or by default the share of the prompt dropped, 1 - B/T.
    double blendFor(int64_t promptLength) const;
    // The positions LeverageScore, non-causal attention and Compactor rank, [first, second):
    // the whole prompt, or for Compactor (as method or scorer) what lies between its
    // sinks and its window, which it always keeps.
    std::pair<int64_t, int64_t> rankedSpan(int64_t promptLength) const;
    // The scorer in effect for a method that takes one: `scorer`, or the method's own
    // ("snapkv" for AdaKV and ChunkKV, "cake" for CAKE); "" for the other methods.
    std::string scorerInEffect() const;
    // LagKV on a prompt of `promptLength`: after the sinks, partitions of `lag` positions;
    // the last full one and the remainder form a tail that is always kept, from here on.
    // The partitions from `sinks` to it are scored, each against the next.
    int64_t lagTailStart(int64_t promptLength) const;
    // The last positions a wrapper keeps whole beside what it ranks: its window, or with
    // --scorer lagkv the longer of the window and LagKV's tail (from lagTailStart).
    int64_t keptTail(int64_t promptLength) const;
    // The first of the prompt's last positions the method keeps whole: its observation window
    // (with --scorer lagkv the longer of it and LagKV's tail), LagKV's tail for lagkv; the
    // prompt length when it keeps none. Whether that end is LagKV's tail, and what to call it
    // ("observation window", "LagKV's tail").
    int64_t keptEndStart(int64_t promptLength) const;
    bool keptEndIsLagTail(int64_t promptLength) const;
    std::string keptEndName(int64_t promptLength) const;
};

// Parsers of the words above; each throws kvlens::Error naming `what` (the CLI
// flag by default, or a stored field) and the value.
GqaMode parseGqaMode(const std::string& text, const std::string& what = "--gqa");
Pooling parsePooling(const std::string& text, const std::string& what = "--pool");
PyramidSchedule parseSchedule(const std::string& text, const std::string& what = "--schedule");
Convention parseConvention(const std::string& text, const std::string& what = "--convention");

}  // namespace kvlens
