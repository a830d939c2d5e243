// One colour per compression method in every chart, inspect's and the
// report's alike: the method's place in core's list of methods, as an index
// into CategoricalPalette::okabeIto().
#pragma once

#include <string>

namespace kvlens::viz {

class MethodColor {
public:
    // 0 for full, 1 for snapkv, ... ; a method not in the list gets the index past its end.
    static int of(const std::string& method);
};

}  // namespace kvlens::viz
