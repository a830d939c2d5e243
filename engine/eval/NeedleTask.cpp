#include "engine/eval/NeedleTask.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <random>

#include "core/Error.h"

namespace kvlens {
namespace {

// Plain sentences with no numbers or names in them, so nothing in the haystack looks
// like an answer (the default filler; --filler FILE replaces it).
const char* const kFiller[] = {
    "The river bends twice before it reaches the town, and the old bridge carries most of the traffic",
    "Every morning the market opens a little after the bakery has sold its first loaves",
    "Nobody remembers who planted the row of trees along the north road, but everyone knows them",
    "In winter the lake freezes at the edges first and the ice creeps toward the middle over many weeks",
    "The library keeps its maps in a cool room at the back where the light is kept low",
    "A good walking path follows the ridge, with views of the valley on both sides",
    "Most of the houses near the square were built from the grey stone of the nearby hills",
    "When the wind comes from the sea the whole harbour smells of salt and tar",
    "The school bell rings at the same moment each day, whatever the clocks in the houses say",
    "Farmers bring their carts down from the hills before dawn to reach the market in time",
    "Along the canal the towpath is lined with benches where people sit and watch the boats",
    "The museum has a quiet hall of old clocks that are wound by hand every week",
    "After the rain the gardens are full of snails that come out to cross the paths",
    "The mill by the weir has not turned for years, though its wheel is still in place",
    "On market days the streets fill with stalls selling cloth, pots, fruit and bread",
    "The lighthouse keeper writes down the weather in a heavy book kept by the stairs",
    "Children learn to swim in the shallow bay where the water stays warm in summer",
    "The station clock is said to be the most accurate in the county, and people set their watches by it",
    "A narrow lane climbs from the church to the top of the hill, past a row of small cottages",
    "In the autumn the orchards are heavy with apples and the air smells sweet for weeks",
    "The ferry crosses the estuary in the time it takes to drink a cup of tea",
    "Old letters found in the attic describe a long journey over the mountains on foot",
    "The town council meets in a hall whose windows look out over the river and the fields",
    "Travellers often stop at the inn by the crossroads to rest their horses and themselves",
};

const char* const kAdjectives[] = {"silent", "amber", "crooked", "gentle", "hollow", "lucky", "molten", "narrow",
                                   "polar", "quiet", "rapid", "scarlet", "tidal", "velvet", "wooden", "zealous",
                                   "brisk", "dusty", "frozen", "golden", "humble", "ivory", "jolly", "keen"};
const char* const kNouns[] = {"harbor", "lantern", "meadow", "falcon", "compass", "glacier", "orchard", "pebble",
                              "quarry", "raven", "saddle", "thistle", "violin", "walnut", "anchor", "beacon",
                              "canyon", "dynamo", "ember", "fjord", "garnet", "hermit", "island", "jasper"};

struct Rng {
    std::mt19937_64 g;  // the same numbers on every platform (std:: distributions are not)
    uint64_t below(uint64_t n) { return g() % n; }
};

std::string pick(Rng& r, const char* const* words, size_t n) { return words[r.below(n)]; }

std::vector<std::string> fillerSentences(const std::string& text) {
    std::vector<std::string> out;
    if (text.empty()) {
        for (const char* s : kFiller) out.push_back(std::string(s) + ".");
        return out;
    }
    std::string cur;
    for (size_t i = 0; i < text.size(); ++i) {
        const char c = text[i] == '\n' || text[i] == '\r' || text[i] == '\t' ? ' ' : text[i];
        if (c == ' ' && (cur.empty() || cur.back() == ' ')) continue;
        cur += c;
        if ((c == '.' || c == '!' || c == '?') && (i + 1 == text.size() || text[i + 1] == ' ' || text[i + 1] == '\n')) {
            out.push_back(cur);
            cur.clear();
        }
    }
    while (!cur.empty() && cur.back() == ' ') cur.pop_back();
    if (!cur.empty()) out.push_back(cur + ".");
    if (out.empty()) throw Error("needle task: the filler text has no sentences");
    return out;
}

struct Needle {
    std::string text;
    size_t slot;   // the filler sentence it goes before (0..F)
    bool asked;    // the answer needs it
};

// One layout of the sample: F filler sentences with the needles at their slots
// (given as fractions of F), the question after.
struct Layout {
    std::vector<std::string> filler;  // cycled from a seeded start
    size_t start = 0;
    std::vector<std::pair<std::string, double>> needles;  // text, where (0..1)
    std::vector<bool> asked;
    std::string head, separator = " ", tail, question;

    NeedleSample build(size_t F) const {
        std::vector<Needle> placed;
        for (size_t i = 0; i < needles.size(); ++i) {
            const size_t slot = static_cast<size_t>(std::llround(needles[i].second * double(F)));
            placed.push_back({needles[i].first, std::min(slot, F), asked[i]});
        }
        std::stable_sort(placed.begin(), placed.end(), [](const Needle& a, const Needle& b) { return a.slot < b.slot; });
        NeedleSample s;
        s.context = head;
        bool first = true;
        auto add = [&](const std::string& piece, std::vector<ByteSpan>* spans) {
            if (!first) s.context += separator;
            first = false;
            const size_t b = s.context.size();
            s.context += piece;
            if (spans) spans->push_back({b, s.context.size()});
        };
        size_t next = 0;
        for (size_t i = 0; i <= F; ++i) {
            for (; next < placed.size() && placed[next].slot == i; ++next)
                add(placed[next].text, placed[next].asked ? &s.needles : &s.distractors);
            if (i < F) add(filler[(start + i) % filler.size()], nullptr);
        }
        s.context += tail;
        s.question = question;
        return s;
    }
};

std::string magicNumber(Rng& r) { return std::to_string(1000000 + r.below(9000000)); }

std::string hexId(Rng& r) {
    static const char* hex = "0123456789abcdef";
    std::string s;
    for (int i = 0; i < 16; ++i) {
        if (i == 8 || i == 12) s += '-';
        s += hex[r.below(16)];
    }
    return s;
}

std::string varName(Rng& r) {
    std::string s;
    for (int i = 0; i < 5; ++i) s += static_cast<char>('A' + r.below(26));
    return s;
}

std::string keyName(Rng& r, std::vector<std::string>& used) {
    for (;;) {
        const std::string k = pick(r, kAdjectives, std::size(kAdjectives)) + "-" + pick(r, kNouns, std::size(kNouns));
        if (std::find(used.begin(), used.end(), k) == used.end()) {
            used.push_back(k);
            return k;
        }
    }
}

std::string listed(const std::vector<std::string>& keys) {
    std::string s;
    for (size_t i = 0; i < keys.size(); ++i) s += (i == 0 ? "" : i + 1 == keys.size() ? " and " : ", ") + keys[i];
    return s;
}

void requireAtLeastOne(int n, const char* what) {
    if (n < 1) throw Error(std::string("needle task: ") + what + " must be at least 1, not " + std::to_string(n));
}

// The templates' words (below), for a vocabulary built from the tasks' text.
const char* const kTemplateWords =
    "One of the special magic numbers for is: What is the special magic number for mentioned in the provided "
    "text? The special magic number for mentioned in the provided text is What are all the special magic numbers "
    "for and are Extract the value corresponding to the specified key in the JSON object below. Key: The value "
    "associated with the specified key is: VAR Find all variables that are assigned the value in the text above. "
    "Answer: the variables assigned the value are:";

}  // namespace

std::vector<std::string> needleKeyWords() {
    std::vector<std::string> out(std::begin(kAdjectives), std::end(kAdjectives));
    out.insert(out.end(), std::begin(kNouns), std::end(kNouns));
    return out;
}

std::string needleTaskBuiltInText() {
    std::string text = kTemplateWords;
    for (const char* s : kFiller) text += std::string(" ") + s + ".";
    for (const char* w : kAdjectives) text += std::string(" ") + w;
    for (const char* w : kNouns) text += std::string(" ") + w;
    return text;
}

NeedleKind needleKindNamed(const std::string& name) {
    if (name == "single") return NeedleKind::Single;
    if (name == "multikey") return NeedleKind::MultiKey;
    if (name == "multivalue") return NeedleKind::MultiValue;
    if (name == "multiquery") return NeedleKind::MultiQuery;
    if (name == "kv") return NeedleKind::KeyValue;
    if (name == "vt") return NeedleKind::VariableTracking;
    throw Error("unknown needle task '" + name + "' (single, multikey, multivalue, multiquery, kv, vt)");
}

const char* needleKindName(NeedleKind kind) {
    switch (kind) {
        case NeedleKind::Single: return "single";
        case NeedleKind::MultiKey: return "multikey";
        case NeedleKind::MultiValue: return "multivalue";
        case NeedleKind::MultiQuery: return "multiquery";
        case NeedleKind::KeyValue: return "kv";
        case NeedleKind::VariableTracking: return "vt";
    }
    return "?";
}

NeedleSample makeNeedleSample(const NeedleSpec& spec, const Tokenizer& tokenizer) {
    if (!(spec.depth >= 0.0 && spec.depth <= 100.0))
        throw Error("needle task: depth " + std::to_string(spec.depth) + " is outside 0-100");
    if (spec.tokens < 1) throw Error("needle task: a length of " + std::to_string(spec.tokens) + " tokens");
    Rng r{std::mt19937_64(spec.seed)};
    Layout lay;
    const double at = spec.depth / 100.0;
    std::vector<std::string> answers, used;
    auto randomSpot = [&] { return double(r.below(1001)) / 1000.0; };
    switch (spec.kind) {
        case NeedleKind::Single:
        case NeedleKind::MultiKey:
        case NeedleKind::MultiValue:
        case NeedleKind::MultiQuery: {
            lay.filler = fillerSentences(spec.filler);
            const bool many = spec.kind == NeedleKind::MultiValue || spec.kind == NeedleKind::MultiQuery;
            if (spec.kind == NeedleKind::MultiKey) requireAtLeastOne(spec.distractors, "distractors");
            if (spec.kind == NeedleKind::MultiValue) requireAtLeastOne(spec.values, "values");
            if (spec.kind == NeedleKind::MultiQuery) requireAtLeastOne(spec.queries, "queries");
            const int askedKeys = spec.kind == NeedleKind::MultiQuery ? spec.queries : 1;
            const int perKey = spec.kind == NeedleKind::MultiValue ? spec.values : 1;
            std::vector<std::string> keys;
            for (int k = 0; k < askedKeys; ++k) keys.push_back(keyName(r, used));
            for (int k = 0; k < askedKeys; ++k) {
                for (int v = 0; v < perKey; ++v) {
                    const std::string value = magicNumber(r);
                    answers.push_back(value);
                    lay.needles.push_back({"One of the special magic numbers for " + keys[k] + " is: " + value + ".",
                                           k == 0 && v == 0 ? at : randomSpot()});
                    lay.asked.push_back(true);
                }
            }
            if (spec.kind == NeedleKind::MultiKey) {
                for (int d = 0; d < spec.distractors; ++d) {
                    lay.needles.push_back({"One of the special magic numbers for " + keyName(r, used) +
                                               " is: " + magicNumber(r) + ".",
                                           randomSpot()});
                    lay.asked.push_back(false);
                }
            }
            const std::string k = listed(keys);
            lay.question = many ? "\nWhat are all the special magic numbers for " + k +
                                      " mentioned in the provided text? The special magic numbers for " + k +
                                      " mentioned in the provided text are"
                                : "\nWhat is the special magic number for " + k +
                                      " mentioned in the provided text? The special magic number for " + k +
                                      " mentioned in the provided text is";
            break;
        }
        case NeedleKind::KeyValue: {
            // Filler: pairs of random ids (as long as the asked one), in a JSON object.
            for (int i = 0; i < 64; ++i) lay.filler.push_back("\"" + hexId(r) + "\": \"" + hexId(r) + "\"");
            const std::string key = hexId(r), value = hexId(r);
            answers.push_back(value);
            lay.needles.push_back({"\"" + key + "\": \"" + value + "\"", at});
            lay.asked.push_back(true);
            lay.head = "Extract the value corresponding to the specified key in the JSON object below.\n{";
            lay.separator = ",\n";
            lay.tail = "}";
            lay.question = "\nKey: \"" + key + "\"\nThe value associated with the specified key is: \"";
            break;
        }
        case NeedleKind::VariableTracking: {
            requireAtLeastOne(spec.hops, "hops");
            lay.filler = fillerSentences(spec.filler);
            const std::string value = std::to_string(10000 + r.below(90000));
            auto chain = [&](const std::string& v, double first, bool asked) {
                std::vector<double> spots{first};
                for (int h = 0; h < spec.hops; ++h) spots.push_back(first + (1.0 - first) * randomSpot());
                std::sort(spots.begin() + 1, spots.end());
                std::string prev = varName(r);
                lay.needles.push_back({"VAR " + prev + " = " + v + ".", spots[0]});
                lay.asked.push_back(asked);
                if (asked) answers.push_back(prev);
                for (int h = 0; h < spec.hops; ++h) {
                    const std::string name = varName(r);
                    lay.needles.push_back({"VAR " + name + " = " + prev + ".", spots[h + 1]});
                    lay.asked.push_back(asked);
                    if (asked) answers.push_back(name);
                    prev = name;
                }
            };
            chain(value, at, true);
            std::string other = std::to_string(10000 + r.below(90000));
            while (other == value) other = std::to_string(10000 + r.below(90000));
            chain(other, randomSpot(), false);  // a distractor chain
            lay.question = "\nFind all variables that are assigned the value " + value +
                           " in the text above. Answer: the variables assigned the value " + value + " are:";
            break;
        }
    }
    lay.start = r.below(lay.filler.size());

    auto encoded = [&](size_t F) { return tokenizer.encode(lay.build(F).prompt(), spec.addBos); };
    const int64_t bare = static_cast<int64_t>(encoded(0).size());
    if (bare > spec.tokens) {
        throw Error("needle task: " + std::to_string(spec.tokens) + " tokens cannot hold the needles and the question (" +
                    std::string(needleKindName(spec.kind)) + " needs at least " + std::to_string(bare) + ")");
    }
    // The most filler that fits: tokens grow with F (a sentence adds at least one).
    size_t lo = 0, hi = 1;
    while (static_cast<int64_t>(encoded(hi).size()) <= spec.tokens) {
        lo = hi;
        hi *= 2;
    }
    while (hi - lo > 1) {
        const size_t mid = (lo + hi) / 2;
        (static_cast<int64_t>(encoded(mid).size()) <= spec.tokens ? lo : hi) = mid;
    }
    NeedleSample s = lay.build(lo);
    s.answers = answers;
    s.tokens = tokenizer.encode(s.prompt(), spec.addBos);
    s.needlePositions = tokensCovering(tokenizer, s.tokens, s.prompt(), s.needles);
    const std::vector<int64_t> inContext = tokensCovering(tokenizer, s.tokens, s.prompt(), {{0, s.context.size()}});
    s.contextTokens = inContext.empty() ? 0 : inContext.back() + 1;
    return s;
}

}  // namespace kvlens
