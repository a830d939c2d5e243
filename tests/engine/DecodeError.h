// What DecodeCompressor's constructor says of bad settings, for the decode tests' one-line
// error checks: the message, or "" when the settings are accepted.
#pragma once

#include <cstdint>
#include <string>

#include "core/Error.h"
#include "core/PressParams.h"
#include "engine/compress/DecodeCompressor.h"

namespace kvlens::test {

inline std::string decodeError(const PressParams& p, int64_t every = 1) {
    try {
        DecodeCompressor rule(p, every);
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

}  // namespace kvlens::test
