// The store's text for the enum knobs of a press (gqa, pooling, schedule).
// The words are core's (gqaModeName, ...), the CLI's; the parsers here name the
// stored field that holds a bad word rather than a flag.
#pragma once

#include <string>

#include "core/PressParams.h"

namespace kvlens::sessions {

class ParamText {
public:
    static std::string of(GqaMode mode);
    static std::string of(Pooling pooling);
    static std::string of(PyramidSchedule schedule);
    // Each throws kvlens::Error naming `what` for a word it does not know.
    static GqaMode gqa(const std::string& text, const std::string& what);
    static Pooling pooling(const std::string& text, const std::string& what);
    static PyramidSchedule schedule(const std::string& text, const std::string& what);
    static Convention convention(const std::string& text, const std::string& what);

    // Every field of `params` as one JSON object (methods::paramsJson; doubles to the last bit).
    static std::string toJson(const PressParams& params);
    // What toJson wrote, or an older store's selection parameters (NaN as null, an automatic
    // blend as -1). Throws kvlens::Error naming `what` and the field on malformed JSON, an
    // unknown method or knob, a value of the wrong type or range.
    static PressParams fromJson(const std::string& json, const std::string& what);
};

}  // namespace kvlens::sessions
