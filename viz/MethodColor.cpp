// Method -> palette index, from PressParams::methodNames (never a copied list).
#include "viz/MethodColor.h"

#include <algorithm>

#include "core/PressParams.h"

namespace kvlens::viz {

int MethodColor::of(const std::string& method) {
    const auto& names = PressParams::methodNames();
    return int(std::find(names.begin(), names.end(), method) - names.begin());
}

}  // namespace kvlens::viz
