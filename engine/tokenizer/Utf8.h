// UTF-8 helpers the tokenizers share: well-formedness (RFC 3629: no overlong
// forms, no surrogates, nothing above U+10FFFF), one code point's length and
// value, encoding a code point, and NFC.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace kvlens {

class Utf8 {
public:
    // Bytes of the well-formed character at text[at] (its value in `cp`), or 0
    // when the bytes there do not form one.
    static size_t decode(std::string_view text, size_t at, uint32_t& cp);
    // Offset of the first byte that does not start a well-formed character, or npos.
    static size_t firstInvalid(std::string_view text);
    static std::string encode(uint32_t cp);
    // Unicode normalization form C of well-formed `text` (utf8proc), as Hugging
    // Face's NFC normalizer applies it.
    static std::string nfc(std::string_view text);
};

}  // namespace kvlens
