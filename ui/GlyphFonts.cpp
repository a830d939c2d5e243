#include "ui/GlyphFonts.h"

#include <fontconfig/fontconfig.h>

#include <mutex>

namespace kvlens::ui {

namespace {

struct Candidate {
    std::string file;
    int index = 0;
    FcCharSet* charset = nullptr;  // a reference of our own (FcCharSetCopy)
};

// fontconfig's sans-serif fallback list, read once per process: outline fonts only.
const std::vector<Candidate>& candidates() {
    static std::vector<Candidate> list;
    static std::once_flag once;
    std::call_once(once, [] {
        if (!FcInit()) return;
        FcPattern* pattern = FcNameParse(reinterpret_cast<const FcChar8*>("sans-serif"));
        if (pattern == nullptr) return;
        FcConfigSubstitute(nullptr, pattern, FcMatchPattern);
        FcDefaultSubstitute(pattern);
        FcResult result = FcResultNoMatch;
        FcFontSet* set = FcFontSort(nullptr, pattern, FcFalse, nullptr, &result);
        FcPatternDestroy(pattern);
        if (set == nullptr) return;
        for (int i = 0; i < set->nfont; ++i) {
            FcPattern* font = set->fonts[i];
            FcChar8* file = nullptr;
            FcChar8* format = nullptr;
            FcCharSet* charset = nullptr;
            FcBool scalable = FcFalse, color = FcFalse;
            int index = 0;
            if (FcPatternGetString(font, FC_FILE, 0, &file) != FcResultMatch) continue;
            if (FcPatternGetCharSet(font, FC_CHARSET, 0, &charset) != FcResultMatch) continue;
            if (FcPatternGetBool(font, FC_SCALABLE, 0, &scalable) == FcResultMatch && !scalable) continue;
            if (FcPatternGetBool(font, FC_COLOR, 0, &color) == FcResultMatch && color) continue;
            // stb_truetype reads TrueType outlines and CFF, not Type 1 or bitmap formats.
            if (FcPatternGetString(font, FC_FONTFORMAT, 0, &format) == FcResultMatch) {
                const std::string f = reinterpret_cast<const char*>(format);
                if (f != "TrueType" && f != "CFF") continue;
            }
            FcPatternGetInteger(font, FC_INDEX, 0, &index);
            list.push_back({reinterpret_cast<const char*>(file), index, FcCharSetCopy(charset)});
        }
        FcFontSetDestroy(set);
    });
    return list;
}

}  // namespace

std::vector<GlyphFonts::Face> GlyphFonts::covering(const std::vector<char32_t>& codepoints) {
    std::vector<Face> faces;
    std::vector<char32_t> left = codepoints;
    for (const Candidate& c : candidates()) {
        if (left.empty()) break;
        Face face{c.file, c.index, {}};
        std::vector<char32_t> still;
        for (char32_t cp : left) {
            (FcCharSetHasChar(c.charset, static_cast<FcChar32>(cp)) ? face.codepoints : still).push_back(cp);
        }
        if (!face.codepoints.empty()) faces.push_back(std::move(face));
        left = std::move(still);
    }
    return faces;
}

}  // namespace kvlens::ui
