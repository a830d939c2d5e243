// The task name a needle sweep stores with each run (NiahRunRecord::task) and how a
// run's sample is made again from it: the kind ("single", ...), then
// "+filler:<16 hex digits of the filler text's FNV-1a hash>" when the sweep read a
// --filler file, and "+no-bos" when it ran without BOS. The name is part of the run's
// key, so a resumed sweep with another filler or BOS runs its samples anew; with the
// seed rule below, the GUI regenerates the very prompt a stored run measured.
#pragma once

#include <cstdint>
#include <string>

#include "engine/eval/NeedleTask.h"

namespace kvlens {

struct NeedleTaskName {
    NeedleKind kind = NeedleKind::Single;
    std::string fillerHash;  // empty: the built-in filler
    bool noBos = false;

    // The name of a sweep's task (`filler` empty: the built-in text).
    static NeedleTaskName of(NeedleKind kind, const std::string& filler, bool noBos);
    // Throws kvlens::Error naming the stored task for anything str() does not write.
    static NeedleTaskName parse(const std::string& name);
    static std::string fillerHashOf(const std::string& text);
    std::string str() const;

    // The spec of sample `sample` of a sweep with seed `taskSeed` (each sample's seed
    // is taskSeed + sample x 1000003). `filler` must be the sweep's (its hash is
    // checked: a mismatch throws naming both hashes); `vocabularyAddsBos` is the
    // tokenizer's default.
    NeedleSpec sampleSpec(uint64_t taskSeed, int64_t length, double depth, int64_t sample,
                          const std::string& filler, bool vocabularyAddsBos) const;
};

}  // namespace kvlens
