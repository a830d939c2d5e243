// Panning the GUI's attention heatmap (ui::AttentionView, 1200 x 900) over an 8192-token
// map: frames per second, each frame drawn and finished (pan, event loop, glFinish), with
// rasterisation and texture upload included; the floors (an unchanged frame, an empty
// canvas); and viz::HeatmapRaster on the same region for comparison. Needs an X display:
//   B=build/tests/ui/kvlens_attention_pan_bench
//   QT_QPA_PLATFORM=xcb xvfb-run -a -s "-screen 0 1600x1200x24" $B
// The map is SYNTHETIC (not a model's attention): a causal pattern shaped like a real head's,
// with attention sinks on the first keys, a local band that decays over ~8 keys behind the
// query, a few random spikes per row and a heavy-tailed noise floor, each row summing to 1.
// The work per frame does not depend on the values, only on the map's size and tiles.
#include <benchmark/benchmark.h>

#include <QApplication>
#include <QOpenGLContext>
#include <QOpenGLFunctions>
#include <QTest>
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "ui/AttentionView.h"
#include "viz/Colormap.h"
#include "viz/HeatmapRaster.h"
#include "viz/Image.h"
#include "viz/Scale.h"
#include "viz/TilePyramid.h"

namespace kvlens {
namespace {

constexpr int64_t kTokens = 8192;
constexpr int kViewWidth = 1200;
constexpr int kViewHeight = 900;
constexpr double kPanPixels = 7;
constexpr int kFrames = 240;

class XorShift {
public:
    explicit XorShift(uint64_t seed) : s_(seed) {}
    double uniform() {  // [0, 1)
        s_ ^= s_ << 13;
        s_ ^= s_ >> 7;
        s_ ^= s_ << 17;
        return static_cast<double>(s_ >> 11) * (1.0 / 9007199254740992.0);
    }

private:
    uint64_t s_;
};

// The synthetic map described above, reduced with level-0 tiles of baseTile cells.
std::shared_ptr<const viz::TilePyramid> syntheticPyramid(int64_t baseTile) {
    auto pyramid = std::make_shared<viz::TilePyramid>(kTokens, kTokens, baseTile);
    constexpr int64_t kBlock = 64;
    std::vector<float> block(static_cast<size_t>(kBlock * kTokens));
    std::vector<double> w(static_cast<size_t>(kTokens));
    XorShift rng(12345);
    for (int64_t row0 = 0; row0 < kTokens; row0 += kBlock) {
        for (int64_t i = 0; i < kBlock; ++i) {
            const int64_t q = row0 + i;
            std::fill(w.begin(), w.end(), 0.0);
            for (int64_t k = 0; k <= q; ++k) {
                const double u = rng.uniform();
                w[k] = 0.02 * u * u * u * u;  // noise floor, mostly tiny
            }
            w[0] += 8.0;  // sinks
            if (q >= 1) w[1] += 2.0;
            for (int64_t k = 2; k <= std::min<int64_t>(q, 3); ++k) w[k] += 0.5;
            for (int64_t d = 0; d <= std::min<int64_t>(q, 63); ++d)  // local band
                w[q - d] += 3.0 * std::exp(-static_cast<double>(d) / 8.0);
            for (int s = 0; s < 6; ++s)  // spikes
                w[static_cast<size_t>(rng.uniform() * static_cast<double>(q + 1))] +=
                    2.0 * rng.uniform();
            double sum = 0;
            for (int64_t k = 0; k <= q; ++k) sum += w[k];
            float* out = block.data() + i * kTokens;
            for (int64_t k = 0; k < kTokens; ++k)
                out[k] = k <= q ? static_cast<float>(w[k] / sum) : 0.0f;
        }
        pyramid->addRows(row0, kBlock, block.data());
    }
    pyramid->finish();
    return pyramid;
}

const std::shared_ptr<const viz::TilePyramid>& pyramidFor(int64_t baseTile) {
    static std::map<int64_t, std::shared_ptr<const viz::TilePyramid>> built;
    auto& p = built[baseTile];
    if (!p) p = syntheticPyramid(baseTile);
    return p;
}

// One view for the whole run (made in main): showing a window is not what is measured.
ui::AttentionView* gView = nullptr;

ui::AttentionView& view() { return *gView; }

// viz::HeatmapRaster::render over the same region the view shows (996 x 780 px): what the
// view would cost per frame had it reused the figure rasteriser.
void BM_HeatmapRasterRender8k(benchmark::State& state) {
    const double cpp = static_cast<double>(state.range(0));
    const auto& pyramid = *pyramidFor(state.range(1));
    const int w = 996, h = 780;
    viz::Image image(w, h);
    const double hi = pyramid.levels().back().max.front();
    const viz::Scale scale = viz::Scale::log(hi * 1e-4, hi, hi * 1e-4);
    const viz::CellRegion region{3000, 3000 + static_cast<int64_t>(h * cpp), 2000,
                                 2000 + static_cast<int64_t>(w * cpp)};
    for (auto _ : state) {
        viz::HeatmapRaster::render(pyramid, region, viz::Reduction::Max, viz::Colormap::magma(),
                                   scale, image, {0, 0, w, h});
        benchmark::DoNotOptimize(image.bytes().data());
    }
}
BENCHMARK(BM_HeatmapRasterRender8k)
    ->ArgNames({"cells_per_px", "tile"})
    ->Args({4, 4})
    ->Args({1, 4})
    ->Unit(benchmark::kMillisecond);

// Draws the frame the canvas asked for (update(), as on a drag in the GUI) and finishes it:
// the event loop runs paintGL (raster, upload, ImGui) and composes the window, then glFinish
// waits for llvmpipe. Not repaint(): with the update already pending, the window would be
// composed and swapped twice per frame (measured: 60 ms instead of 25 ms a frame).
void finishFrame(ui::ImGuiCanvas& canvas) {
    QCoreApplication::processEvents();
    canvas.makeCurrent();
    canvas.context()->functions()->glFinish();
    canvas.doneCurrent();
}

void countFrames(benchmark::State& state, const ui::ImGuiCanvas& canvas, uint64_t framesBefore) {
    const auto n = static_cast<double>(state.iterations());
    state.counters["fps"] = benchmark::Counter(n, benchmark::Counter::kIsRate);
    // 1: every iteration drew exactly one frame.
    state.counters["paints"] = static_cast<double>(canvas.frameCount() - framesBefore) / n;
}

// Args: cells per pixel, level-0 tile side. Pans 7 px per frame on both axes, bouncing at
// the view's limits, and finishes every frame before the next.
void BM_PanAttention8k(benchmark::State& state) {
    const double cpp = static_cast<double>(state.range(0));
    const int64_t baseTile = state.range(1);
    ui::AttentionView& v = view();
    v.setMap(pyramidFor(baseTile), 3, 5, QStringLiteral("synthetic"));
    v.setView(2000, 3000, cpp);
    finishFrame(v);
    double dx = kPanPixels, dy = kPanPixels;
    double rasterMs = 0, uploadMs = 0;
    const uint64_t buildsBefore = v.rasterBuilds();
    const uint64_t framesBefore = v.frameCount();
    for (auto _ : state) {
        const double col0 = v.viewCol0(), row0 = v.viewRow0();
        v.panBy(-dx, -dy);  // the picture moves left and up: the view to larger positions
        if (v.viewCol0() == col0) dx = -dx;
        if (v.viewRow0() == row0) dy = -dy;
        finishFrame(v);
        rasterMs += v.lastRasterMs();
        uploadMs += v.lastUploadMs();
    }
    countFrames(state, v, framesBefore);
    const auto n = static_cast<double>(state.iterations());
    state.counters["raster_ms"] = rasterMs / n;
    state.counters["upload_ms"] = uploadMs / n;
    state.counters["rebuilt"] = static_cast<double>(v.rasterBuilds() - buildsBefore) / n;
    state.SetLabel("8192 x 8192, " + std::to_string(static_cast<int>(v.mapRect().width())) + " x " +
                   std::to_string(static_cast<int>(v.mapRect().height())) + " px map");
}
BENCHMARK(BM_PanAttention8k)
    ->ArgNames({"cells_per_px", "tile"})
    ->Args({4, 4})
    ->Args({1, 4})
    ->Args({4, 8})
    ->Args({1, 8})
    ->Iterations(kFrames)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// Showing another head's map: setMap computes the colour index of every tile once.
void BM_SetMap8k(benchmark::State& state) {
    ui::AttentionView& v = view();
    const auto& pyramid = pyramidFor(state.range(0));
    for (auto _ : state) v.setMap(pyramid, 3, 5, QStringLiteral("synthetic"));
    finishFrame(v);
}
BENCHMARK(BM_SetMap8k)
    ->ArgName("tile")
    ->Arg(4)
    ->Arg(8)
    ->Iterations(5)
    ->Unit(benchmark::kMillisecond);

// A frame whose view did not change: no raster, no upload; ImGui, the GL draw of the
// texture, the window's composition and swap remain.
void BM_RepaintUnchanged8k(benchmark::State& state) {
    ui::AttentionView& v = view();
    v.setMap(pyramidFor(4), 3, 5, QStringLiteral("synthetic"));
    v.setView(2000, 3000, 4.0);
    finishFrame(v);
    const uint64_t framesBefore = v.frameCount();
    for (auto _ : state) {
        v.requestRedraw();
        finishFrame(v);
    }
    countFrames(state, v, framesBefore);
}
BENCHMARK(BM_RepaintUnchanged8k)->Iterations(kFrames)->UseRealTime()->Unit(benchmark::kMillisecond);

// The floor: an ImGuiCanvas of the same size that draws nothing.
void BM_RepaintEmptyCanvas(benchmark::State& state) {
    ui::ImGuiCanvas canvas;
    canvas.resize(kViewWidth, kViewHeight);
    canvas.show();
    if (!QTest::qWaitForWindowExposed(&canvas)) state.SkipWithError("no window");
    finishFrame(canvas);
    const uint64_t framesBefore = canvas.frameCount();
    for (auto _ : state) {
        canvas.requestRedraw();
        finishFrame(canvas);
    }
    countFrames(state, canvas, framesBefore);
}
BENCHMARK(BM_RepaintEmptyCanvas)->Iterations(kFrames)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace kvlens

int main(int argc, char** argv) {
    QApplication app(argc, argv);  // takes Qt's own options (-platform ...) off argv
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    auto view = std::make_unique<kvlens::ui::AttentionView>();
    view->resize(kvlens::kViewWidth, kvlens::kViewHeight);
    view->show();
    if (!QTest::qWaitForWindowExposed(view.get())) return 1;
    kvlens::gView = view.get();
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
