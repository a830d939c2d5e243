// Needle-in-a-haystack samples with ground truth, generated from a seed for any
// tokenizer: RULER's variants (single, multi-key, multi-value, multi-query), a
// key-value retrieval task and variable tracking. A sample knows the token positions
// of what its answer needs (its needles), so a method's kept set can be scored
// against them, not only against the full cache.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/eval/TokenSpans.h"
#include "engine/tokenizer/Tokenizer.h"

namespace kvlens {

enum class NeedleKind {
    Single,            // one needle "One of the special magic numbers for K is: V."
    MultiKey,          // the asked needle among `distractors` needles of other keys
    MultiValue,        // `values` needles of the one asked key: every value is the answer
    MultiQuery,        // `queries` needles of different keys, all asked at once
    KeyValue,          // a list of "key": "value" pairs (random ids); one key is asked
    VariableTracking,  // "VAR X = 12345." then a chain "VAR Y = X." ...: which names hold it
};

// "single", "multikey", "multivalue", "multiquery", "kv", "vt"; throws on others.
NeedleKind needleKindNamed(const std::string& name);
const char* needleKindName(NeedleKind kind);

struct NeedleSpec {
    NeedleKind kind = NeedleKind::Single;
    int64_t tokens = 1024;   // the prompt's length in tokens (context and question), at most
    double depth = 50.0;     // where the (first) asked needle sits in the context, 0-100 %
    int distractors = 3;     // MultiKey: needles of other keys
    int values = 4;          // MultiValue: values of the asked key
    int queries = 2;         // MultiQuery: keys asked
    int hops = 4;            // VariableTracking: assignments in the chain after the first
    uint64_t seed = 1;
    std::string filler;      // haystack sentences (split at ". "); empty: the built-in text
    bool addBos = true;      // as the model will encode it
};

struct NeedleSample {
    std::string context;              // the haystack with the needles
    std::string question;             // after the context (its answer's lead-in last)
    std::vector<std::string> answers; // every expected value (all are needed)
    std::vector<ByteSpan> needles;    // in prompt(): the needles the answer needs
    std::vector<ByteSpan> distractors;  // in prompt(): needles it does not need
    std::vector<int32_t> tokens;      // prompt() encoded (BOS as the spec asks)
    std::vector<int64_t> needlePositions;  // tokens of the needles, ascending
    int64_t contextTokens = 0;        // tokens before the question (with BOS)
    std::string prompt() const { return context + question; }
};

// Throws an Error naming the field for a depth outside 0-100, counts below 1, or a
// length too short for the needles and the question ("... needs at least N tokens").
NeedleSample makeNeedleSample(const NeedleSpec& spec, const Tokenizer& tokenizer);

// Every word the tasks write themselves (templates, built-in filler, key names), for
// a vocabulary that should spell each as one token (TestbedVocabulary).
std::string needleTaskBuiltInText();
// The words keys are made of ("silent", "harbor": keys read "silent-harbor").
std::vector<std::string> needleKeyWords();

}  // namespace kvlens
