// GPT-2's byte-level alphabet: every byte 0..255 stands for one printable
// Unicode character (bytes that are printable Latin-1 stand for themselves,
// the others for U+0100 onwards, in order), so that byte-level BPE vocabularies
// spell any byte string as text: a space is 'Ġ' (U+0120), a newline 'Ċ'.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace kvlens {

class ByteLevel {
public:
    // The UTF-8 text of `bytes` in the alphabet.
    static std::string encode(std::string_view bytes);
    // The bytes a token's text stands for; false when a character of `text`
    // is not in the alphabet (a token added as plain text).
    static bool decode(std::string_view text, std::string& bytes);

private:
    static const std::array<std::string, 256>& table();
};

}  // namespace kvlens
