// Colormap lookup over the generated tables.
#include "viz/Colormap.h"

#include <cmath>

#include "core/Error.h"
#include "viz/ColormapTables.h"

namespace kvlens::viz {

const Colormap& Colormap::viridis() {
    static const Colormap map("viridis", &tables::kViridis);
    return map;
}

const Colormap& Colormap::magma() {
    static const Colormap map("magma", &tables::kMagma);
    return map;
}

const Colormap& Colormap::diverging() {
    static const Colormap map("diverging", &tables::kDiverging);
    return map;
}

const Colormap& Colormap::byName(const std::string& name) {
    if (name == "viridis") return viridis();
    if (name == "magma") return magma();
    if (name == "diverging") return diverging();
    throw Error("colormap '" + name + "': unknown (expected viridis, magma or diverging)");
}

Rgb Colormap::map(double t) const {
    if (std::isnan(t)) return nanColor();
    if (t <= 0.0) return (*table_)[0];
    if (t >= 1.0) return (*table_)[255];
    auto i = static_cast<size_t>(t * 256.0);
    return (*table_)[i > 255 ? 255 : i];
}

}  // namespace kvlens::viz
