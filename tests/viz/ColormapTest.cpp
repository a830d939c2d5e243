// Colormaps: matplotlib's endpoints, monotonic lightness, the diverging map's symmetry,
// and lookup semantics.
#include <gtest/gtest.h>

#include <cmath>

#include "core/Error.h"
#include "viz/Colormap.h"

using kvlens::viz::Colormap;
using kvlens::viz::Rgb;

namespace {

// matplotlib's float entries (matplotlib/_cm_listed.py), compared after scaling to 0..255.
void expectNear255(Rgb c, double r, double g, double b) {
    EXPECT_LE(std::fabs(c.r - r * 255), 0.5) << int(c.r) << " vs " << r;
    EXPECT_LE(std::fabs(c.g - g * 255), 0.5) << int(c.g) << " vs " << g;
    EXPECT_LE(std::fabs(c.b - b * 255), 0.5) << int(c.b) << " vs " << b;
}

void expectMonotonicLightness(const Colormap& m) {
    const auto& t = m.table();
    for (size_t i = 1; i < t.size(); ++i)
        EXPECT_GE(t[i].lightness(), t[i - 1].lightness() - 0.1) << m.name() << " at " << i;
    EXPECT_GT(t[255].lightness() - t[0].lightness(), 70.0) << m.name();
}

}  // namespace

TEST(Colormap, ViridisEndpointsAreMatplotlibs) {
    const auto& t = Colormap::viridis().table();
    expectNear255(t[0], 0.267004, 0.004874, 0.329415);
    expectNear255(t[255], 0.993248, 0.906157, 0.143936);
    expectNear255(t[128], 0.127568, 0.566949, 0.550556);
}

TEST(Colormap, MagmaEndpointsAreMatplotlibs) {
    const auto& t = Colormap::magma().table();
    expectNear255(t[0], 0.001462, 0.000466, 0.013866);
    expectNear255(t[255], 0.987053, 0.991438, 0.749504);
}

TEST(Colormap, SequentialMapsHaveMonotonicLightness) {
    expectMonotonicLightness(Colormap::viridis());
    expectMonotonicLightness(Colormap::magma());
}

TEST(Colormap, DivergingIsSymmetricInLightnessAndWhiteInTheMiddle) {
    const auto& t = Colormap::diverging().table();
    for (size_t i = 0; i < 256; ++i)
        EXPECT_NEAR(t[i].lightness(), t[255 - i].lightness(), 0.5) << i;
    for (size_t i = 1; i < 128; ++i) EXPECT_GT(t[i].lightness(), t[i - 1].lightness() - 0.1) << i;
    EXPECT_GT(t[127].lightness(), 95.0);
    EXPECT_LT(t[0].lightness(), 50.0);
    // Blue below the centre, orange-red above.
    EXPECT_GT(t[0].b, t[0].r + 100);
    EXPECT_GT(t[255].r, t[255].b + 100);
}

TEST(Colormap, MapClampsAndIndexesLikeMatplotlib) {
    const Colormap& m = Colormap::magma();
    EXPECT_EQ(m.map(0.0), m.table()[0]);
    EXPECT_EQ(m.map(-3.0), m.table()[0]);
    EXPECT_EQ(m.map(1.0), m.table()[255]);
    EXPECT_EQ(m.map(7.0), m.table()[255]);
    EXPECT_EQ(m.map(0.5), m.table()[128]);
    EXPECT_EQ(m.map(0.999), m.table()[255]);
    EXPECT_EQ(m.map(1.0 / 256.0 - 1e-9), m.table()[0]);
    EXPECT_EQ(m.map(1.0 / 256.0 + 1e-9), m.table()[1]);
}

TEST(Colormap, NanIsAGreyNoMapContains) {
    for (const Colormap* m : {&Colormap::viridis(), &Colormap::magma(), &Colormap::diverging()}) {
        EXPECT_EQ(m->map(std::nan("")), Colormap::nanColor());
        for (Rgb c : m->table()) EXPECT_NE(c, Colormap::nanColor()) << m->name();
    }
}

TEST(Colormap, ByName) {
    EXPECT_EQ(&Colormap::byName("viridis"), &Colormap::viridis());
    EXPECT_EQ(&Colormap::byName("magma"), &Colormap::magma());
    EXPECT_EQ(&Colormap::byName("diverging"), &Colormap::diverging());
    EXPECT_EQ(Colormap::byName("magma").name(), "magma");
    try {
        Colormap::byName("jet");
        FAIL() << "no error";
    } catch (const kvlens::Error& e) {
        EXPECT_NE(std::string(e.what()).find("jet"), std::string::npos);
    }
}

TEST(Rgb, HexLightnessBlend) {
    EXPECT_EQ((Rgb{0, 114, 178}).hex(), "#0072b2");
    EXPECT_NEAR((Rgb{255, 255, 255}).lightness(), 100.0, 0.01);
    EXPECT_NEAR((Rgb{0, 0, 0}).lightness(), 0.0, 0.01);
    EXPECT_NEAR((Rgb{119, 119, 119}).lightness(), 50.0, 0.5);
    EXPECT_EQ(Rgb::blend({0, 0, 0}, {200, 100, 50}, 0.5), (Rgb{100, 50, 25}));
}
