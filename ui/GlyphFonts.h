// Which installed font files draw a set of Unicode code points, found through
// fontconfig: the scalable fonts in fontconfig's order of preference for sans-serif
// text, each taken for the code points that no font before it has. Colour (bitmap
// emoji) fonts are skipped, since the ImGui atlas rasterises outlines only.
// scripts/setup installs DejaVu (Latin, Greek, Cyrillic, Armenian, Georgian, Hebrew,
// Arabic, ...), WenQuanYi Micro Hei (CJK, Hangul, kana) and Symbola (symbols).
#pragma once

#include <string>
#include <vector>

namespace kvlens::ui {

class GlyphFonts {
public:
    struct Face {
        std::string file;
        int index = 0;                     // the face inside a collection (.ttc)
        std::vector<char32_t> codepoints;  // of those asked, the ones this face draws
    };

    // In order of preference; code points no installed font has are in none.
    static std::vector<Face> covering(const std::vector<char32_t>& codepoints);
};

}  // namespace kvlens::ui
