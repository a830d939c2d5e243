// The method table: every compression method's name (the only place one is spelled),
// the knobs it reads, what it needs from the capture, what it always keeps, its decode
// form, its paper and how it stands against kvpress's press. And the knob table: each
// knob's flag, JSON key, short form in describe() lines, default and help, written once.
// Everything else (validation, describe, the CLI, the GUI, decode) asks these tables.
#pragma once

#include <cstdint>
#include <string>
#include <optional>
#include <string_view>
#include <vector>

namespace kvlens {

struct PressParams;

// In table order (the order of `kvlens methods`, of --method lists and of the GUI's menu).
enum class MethodId {
    Full, SnapKv, PyramidKv, StreamingLlm, H2o, AdaKv, Random, Tova, Knorm, KeyDiff, LagKv, ChunkKv,
    Expected, Cur, Cake, SimLayerKv, PerLayer, Leverage, NonCausal, Compactor, CriticalKv, CriticalAdaKv,
    Kvzip, Finch, FinchKvpress, ChunkKvKvpress,
};

enum class MethodFamily {
    Baseline,        // keeps by position or by chance, or everything
    Scorer,          // ranks positions by a score of its own (and lends it to wrappers)
    Wrapper,         // ranks by another method's scores (--scorer), allocating them its own way
    LayerAllocator,  // shares the budget unevenly over the layers
    OwnPrefill,      // selects while prefilling again, not from the capture
};

// The knobs of PressParams (the budget, which every method reads, aside). The order is
// the order of describe() lines.
enum class Knob {
    Window, Scorer, Kernel, Pooling, Gqa, Beta, Schedule, Alpha, Sinks, Lag, Chunk, Future, Tau1, Tau2,
    Gamma, Lazy, LayerWeights, Sketch, AttnChunk, RepeatChunk, FinchChunk, Blend, Seed, Think, Convention,
    Count_
};

// What a method needs from the model beyond the capture's keys, values and window queries.
enum class Need {
    WindowVotes,    // the window queries' softmax over the prompt (SnapKV's votes)
    QueryStats,     // mean and covariance of the prompt's pre-RoPE queries
    PromptReplay,   // every prompt query again (H2O's accumulated attention, non-causal attention)
    PreRopeKeys,    // the keys turned back by their position's angle (needs the model's RoPE)
    WoNorms,        // every value through its head's slice of W_o (CriticalKV)
    Reconstruction, // the model reconstructing the prompt from its cache (KVzip)
    SecondPrefill,  // a second prefill that selects as it goes (Finch)
    Count_
};

// What a method keeps whole, beside what it ranks.
enum class Keep {
    Window,        // the observation window (--window)
    Sinks,         // the first --sinks positions
    LagTail,       // LagKV's last full partition and the remainder
    ScorerEnds,    // a wrapper: whatever its scorer keeps whole (sinks, LagKV's tail)
    Recent,        // the most recent B - sinks (StreamingLLM, SimLayerKV's lazy layers)
    Last,          // the prompt's last position (TOVAPress)
    Count_
};

enum class DecodeForm {
    None,       // compresses the prompt only
    Own,        // compresses while decoding by its own rule (--decode-every)
    ViaScorer,  // compresses while decoding by its scorer's rule, where the scorer has one
};

// How a method stands under --convention kvpress (kvpress's press code, kept position for
// kept position, up to exact ties).
enum class KvpressForm {
    Same,        // its paper form keeps kvpress's positions already (the convention changes
                 // only how a ratio budget rounds: int(T x (1 - r)))
    Convention,  // its press switches to kvpress's form (see kvpressDelta)
    None,        // not reproduced (no kvpress press, or kvpressDelta's difference is kept):
                 // --convention kvpress refuses it
    Twin,        // under --convention kvpress it runs as its kvpressTwin, kvpress's port of it
                 // (--method chunkkv as chunkkv-kvpress)
};

// What kvpress's scorer gives the positions it keeps whole (SnapKV's window, TOVA's last
// position, the sinks, LagKV's tail): a wrapper that rescales the scores (CriticalKV) lets them
// compete at that value.
enum class KvpressPad {
    AboveMax,  // the largest of the layer's other scores + 1
    One,       // 1 (LagKV, CUR)
};

// Whose conventions a run follows where the papers' code and kvpress's differ.
enum class Convention {
    Paper,    // the paper's (and its authors' code's) form: KV Lens's default
    Kvpress,  // kvpress's press code, position for position (methods whose kvpressForm is not None)
};

// A small set of enum values as bits.
template <typename E>
class EnumSet {
public:
    constexpr EnumSet() = default;
    constexpr EnumSet(std::initializer_list<E> items) {
        for (E e : items) bits_ |= bit(e);
    }
    constexpr bool has(E e) const { return (bits_ & bit(e)) != 0; }
    constexpr bool empty() const { return bits_ == 0; }
    constexpr EnumSet operator|(EnumSet o) const { return fromBits(bits_ | o.bits_); }
    constexpr EnumSet operator-(EnumSet o) const { return fromBits(bits_ & ~o.bits_); }
    EnumSet& operator|=(EnumSet o) { bits_ |= o.bits_; return *this; }
    EnumSet& add(E e) { bits_ |= bit(e); return *this; }
    constexpr bool operator==(EnumSet o) const { return bits_ == o.bits_; }
    constexpr bool operator!=(EnumSet o) const { return bits_ != o.bits_; }

private:
    static constexpr uint32_t bit(E e) { return uint32_t(1) << static_cast<unsigned>(e); }
    static constexpr EnumSet fromBits(uint32_t b) { EnumSet s; s.bits_ = b; return s; }
    uint32_t bits_ = 0;
};
using KnobSet = EnumSet<Knob>;
using NeedSet = EnumSet<Need>;
using KeepSet = EnumSet<Keep>;

struct MethodInfo {
    MethodId id;
    const char* name;     // --method, stored runs, JSON
    const char* display;  // tables, the GUI, reports
    MethodFamily family;
    KnobSet knobs;        // the knobs it reads as a method (a wrapper adds its scorer's)
    NeedSet needs;        // what it needs from the model beyond the capture
    KeepSet keeps;        // what it keeps whole beside what it ranks
    bool takesScorer;     // --scorer (a wrapper or CAKE)
    const char* defaultScorer;  // the scorer in effect without --scorer ("" unless takesScorer)
    bool usableAsScorer;  // a wrapper's --scorer may name it
    KnobSet scorerKnobs;  // the knobs a wrapper ranking by it reads
    KnobSet masksScorerKnobs;  // its scorer's knobs it ignores (ChunkKV pools nothing)
    bool crossHeadComparable;  // its scores share one scale across heads (AdaKV ranks them together)
    bool costlyFirstUse;  // its first use replays, projects, reconstructs or prefills the prompt
    DecodeForm decode;
    const char* paper;
    const char* kvpress;       // its kvpress press, "" when kvpress has none
    const char* kvpressDelta;  // how KV Lens's default (paper) form differs from kvpress's
    const char* noThink;       // why --think cannot prune its cache ("" when it can)
    const char* summary;       // one line: what it keeps
    // How its shown scores (Press::scores) order what it keeps, where not simply "within a
    // head, every kept position scores at least every dropped one"; "" where that holds.
    const char* rankRule;
    KvpressForm kvpressForm = KvpressForm::Same;
    // What it keeps whole under --convention kvpress, where that is not `keeps`.
    std::optional<KeepSet> kvpressKeeps = std::nullopt;
    // The method it runs as under --convention kvpress (kvpressForm Twin).
    std::optional<MethodId> kvpressTwin = std::nullopt;
    // Its knobs kvpress's form does not read (PyramidKV's --schedule: kvpress has its own).
    KnobSet kvpressUnread = {};
    // It compares its scorer's scores across KV heads (AdaKV ranks them together, ChunkKV
    // sums them), so a scorer that is not crossHeadComparable lets the heads' scales decide.
    bool comparesHeads = false;
    // A scorer: what kvpress's form of it scores the positions it keeps whole.
    KvpressPad kvpressPad = KvpressPad::AboveMax;
};

// How a knob's value is written: in a flag, a describe() line and JSON alike.
enum class KnobType {
    Int,    // a whole number in [min, max]
    Real,   // a finite number (validate() checks its range against the method)
    Seed,   // a whole number in [0, 2^64 - 1]
    Word,   // one of `words`
    Name,   // a method's name (--scorer), or "" for the method's own
    Reals,  // a comma-separated list of finite numbers (JSON: an array); "equal" or [] for none
};

struct KnobInfo {
    Knob knob;
    const char* flag;         // --window
    const char* json;         // "window" (JSON output, the store's params, the sweep file)
    const char* describeKey;  // "W" in describe() lines; "" for words (max, kv-head, exact)
    const char* defaultText;  // as the CLI's --help prints it
    const char* help;
    KnobType type;
    int64_t min = 0;          // Int: the range a flag, a describe() line or a stored run may give
    int64_t max = 0;
    const char* words = "";   // Word: its values, "|"-separated ("max|avg")
};

namespace methods {

// Every method, in MethodId order.
const std::vector<MethodInfo>& all();
const MethodInfo& info(MethodId id);
// nullptr for a name that is no method.
const MethodInfo* find(std::string_view name);
// Throws kvlens::Error "--method 'x' is not one of full, snapkv, ..." (`what` names the flag or field).
const MethodInfo& named(std::string_view name, const std::string& what = "--method");
// Every method's name, in table order.
const std::vector<std::string>& names();
// The names of the methods a wrapper may rank by.
const std::vector<std::string>& scorerNames();
// "a, b, c and d" (or `last` before the last): the names of the methods `pick` holds for.
template <typename Pred>
std::string listWhere(Pred pick, const char* last = " and ") {
    std::vector<const char*> chosen;
    for (const MethodInfo& m : all())
        if (pick(m)) chosen.push_back(m.name);
    std::string out;
    for (size_t i = 0; i < chosen.size(); ++i)
        out += std::string(i == 0 ? "" : i + 1 == chosen.size() ? last : ", ") + chosen[i];
    return out;
}

const std::vector<KnobInfo>& knobs();
const KnobInfo& knob(Knob k);

// The method in effect's knobs for these parameters: the method's own, its scorer's for a
// wrapper, and the window when ThinK is on (it scores channels by the window's queries).
KnobSet effectiveKnobs(const PressParams& p);
// The shortest text that reads back (strtod) as the same double.
std::string shortestText(double v);
// Sets knob `k` of `p` from its text (a flag's value, a describe() line's, a JSON value's);
// throws kvlens::Error "WHAT 'text' is not an integer in [1, 1048576]" (`what` names the flag
// or the stored field).
void setKnob(PressParams& p, Knob k, const std::string& text, const std::string& what);
// The knob a describe() line's "key=" names, or a bare word (max, kv-head, exact, kvpress)
// sets; nullptr for none.
const KnobInfo* knobByDescribeKey(std::string_view key);
const KnobInfo* knobByWord(std::string_view word);
// A knob's value as describe() lines and reports print it: "20", "exact", "0.2", "auto" (a
// blend below 0), "equal" (no layer weights), "" for no --scorer.
std::string knobValue(const PressParams& p, Knob k);
// "beta 20, exact, alpha 0.2": the knobs of `set` that the method in effect reads, leaving out
// those without a value.
std::string knobsText(const PressParams& p, KnobSet set);
// Whether --convention kvpress can run these parameters: the method's kvpress form, and its
// scorer's, are not None.
bool kvpressReproduced(const PressParams& p);
// The method that runs for `method` under `convention`: its kvpressTwin's name under kvpress
// where it has one (chunkkv -> chunkkv-kvpress, finch -> finch-kvpress), else `method` itself
// (a name that is no method included).
std::string underConvention(const std::string& method, Convention convention);
// What the method keeps whole under a convention.
KeepSet keepsUnder(const MethodInfo& m, Convention c);
// The method's needs and its scorer's.
NeedSet effectiveNeeds(const PressParams& p);
// One line when the method compares its scorer's scores across heads and that scorer's
// scores share no scale across heads ("adakv compares knorm's scores across KV heads, ..."),
// "" otherwise (and for a name that is no method).
std::string crossHeadNote(const PressParams& p);

const char* familyName(MethodFamily f);
const char* needName(Need n);
const char* keepName(Keep k);
const char* decodeFormName(DecodeForm d);
const char* kvpressFormName(KvpressForm f);

// The methods that read a knob, as docs/methods.md and the GUI's tooltips say it: "snapkv,
// pyramidkv, ... and chunkkv-kvpress (and a wrapper ranking by one of them)".
std::string knobReaders(const KnobInfo& k);
// What a knob's value may be: "an integer in [1, 1048576]", "max or avg", ...
std::string knobValuesText(const KnobInfo& k);
// `kvlens methods`: the table as aligned text, JSON, or Markdown (docs/methods.md).
std::string tableText();
std::string tableJson();
std::string tableMarkdown();

}  // namespace methods
}  // namespace kvlens
