// The built-in categorical palettes.
#include "viz/CategoricalPalette.h"

namespace kvlens::viz {

const CategoricalPalette& CategoricalPalette::okabeIto() {
    static const CategoricalPalette palette({
        {"blue", {0x00, 0x72, 0xB2}},
        {"vermillion", {0xD5, 0x5E, 0x00}},
        {"bluish green", {0x00, 0x9E, 0x73}},
        {"reddish purple", {0xCC, 0x79, 0xA7}},
        {"orange", {0xE6, 0x9F, 0x00}},
        {"sky blue", {0x56, 0xB4, 0xE9}},
        {"black", {0x00, 0x00, 0x00}},
        {"yellow", {0xF0, 0xE4, 0x42}},
    });
    return palette;
}

CategoricalPalette CategoricalPalette::selection(const std::string& endName) {
    return CategoricalPalette({
        {"not kept", {0xE4, 0xE4, 0xE4}},
        {"kept", {0x00, 0x72, 0xB2}},
        {endName, {0xE6, 0x9F, 0x00}},
    });
}

}  // namespace kvlens::viz
