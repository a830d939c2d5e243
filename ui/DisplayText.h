// How the GUI panels write numbers, sizes, times and run names, so that a value
// reads the same in the sessions table, the comparison, the outputs and the memory view.
#pragma once

#include <QString>
#include <cstdint>
#include <string>

#include "core/PressParams.h"

namespace kvlens::ui {

class DisplayText {
public:
    // Decimal units as the CLI prints them: "512 B", "23.1 KB", "184.5 MB", "1.2 GB".
    static QString bytes(int64_t bytes);
    // A fraction as a percentage, "12.5%"; NaN: "n/a".
    static QString percent(double fraction, int decimals = 1);
    // A real with `digits` significant digits ("0.0123"); NaN: "n/a".
    static QString real(double value, int digits = 3);
    // A difference with its sign ("+2.5%", "-0.0042"); NaN on either side: "n/a".
    static QString percentDelta(double fraction, int decimals = 1);
    static QString realDelta(double value, int digits = 3);
    // Unix milliseconds as local "yyyy-MM-dd HH:mm".
    static QString time(int64_t unixMs);
    // The method and its budget, "snapkv B=64" or "pyramidkv B=12.5%" ("full" alone).
    // PressParams::describe() lives in the LibTorch engine library, which the GUI's
    // panels do not link; the store's full parameters go to tooltips instead.
    static QString method(const PressParams& params);
    // A token's display piece as the outputs show it: a SentencePiece byte token of a
    // control character reads as its symbol, a newline's followed by a line break
    // ("<0x0A>" -> "\u21b5\n", "<0x09>" -> "\u21e5"), one of printable ASCII as the
    // character; anything else unchanged.
    static QString piece(const std::string& piece);
    // Entries per head the run was given: the budget, or the ratio of the prompt.
    static int64_t budgetEntries(const PressParams& params, int64_t promptTokens);
};

}  // namespace kvlens::ui
