// The store's text for the enum knobs of a press (gqa, pooling, schedule).
// Kept here rather than calling engine/PressParams.cpp, which lives in the
// LibTorch engine library; the words are the CLI's, so the two read alike.
#pragma once

#include <string>

#include "engine/PressParams.h"

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

    // Every field of `params` as one JSON object (doubles to the last bit).
    static std::string toJson(const PressParams& params);
    // Throws kvlens::Error naming `what` on malformed JSON or a missing field.
    static PressParams fromJson(const std::string& json, const std::string& what);
};

}  // namespace kvlens::sessions
