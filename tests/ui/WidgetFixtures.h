// Shared pieces of the widget tests: fresh store paths, screenshots saved for a person to
// look at, event-loop waits, and selections and runs built to order (a hand-made pattern
// for pixel checks, a SnapKV-like one for realistic screenshots).
#pragma once

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <QApplication>
#include <QColor>
#include <QDir>
#include <QElapsedTimer>
#include <QImage>
#include <QWidget>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "sessions/StoreRecords.h"

namespace kvlens::ui::test {

inline QString outputDir() {
    const QString dir = KVLENS_UI_TEST_DIR;
    QDir().mkpath(dir);
    return dir;
}

// Saves the widget as <output>/<name>.png and returns the picture.
inline QImage screenshot(QWidget& widget, const QString& name) {
    const QImage image = widget.grab().toImage();
    EXPECT_TRUE(image.save(outputDir() + "/" + name + ".png")) << name.toStdString();
    return image;
}

// A store path unique to the running test and process, with no store there yet.
inline std::string storePath(const std::string& name) {
    const QString dir = KVLENS_WIDGET_STORE_DIR;
    QDir().mkpath(dir);
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    const std::string test = std::string(info->test_suite_name()) + "." + info->name();
    const std::string path =
        dir.toStdString() + "/" + test + "." + std::to_string(::getpid()) + "." + name;
    for (const char* suffix : {"", "-wal", "-shm", "-journal"}) ::unlink((path + suffix).c_str());
    return path;
}

// Processes events until `done` holds or `limitMs` passes; returns whether it held.
inline bool waitFor(const std::function<bool()>& done, int limitMs = 5000) {
    QElapsedTimer clock;
    clock.start();
    while (!done()) {
        if (clock.elapsed() > limitMs) return false;
        QApplication::processEvents(QEventLoop::AllEvents, 20);
    }
    return true;
}

inline bool sameColor(QRgb pixel, const QColor& expected) {
    return QColor(pixel).rgb() == expected.rgb();
}

// A selection of `layers` layers, every head keeping positions keep(layer, head).
inline Selection makeSelection(int64_t layers, int64_t queryHeads, int64_t kvHeads,
                               int64_t promptLength, GqaMode gqa,
                               const std::function<std::vector<int32_t>(int, int)>& keep) {
    Selection s;
    s.promptLength = promptLength;
    s.queryHeads = queryHeads;
    s.kvHeads = kvHeads;
    s.gqa = gqa;
    s.params.gqa = gqa;
    for (int l = 0; l < layers; ++l) {
        std::vector<std::vector<int32_t>> heads;
        for (int h = 0; h < s.headsPerLayer(); ++h) heads.push_back(keep(l, h));
        s.layerBudgets.push_back(heads.empty() ? 0 : int64_t(heads[0].size()));
        s.kept.push_back(heads);
    }
    return s;
}

inline std::vector<int32_t> range(int32_t first, int32_t end) {
    std::vector<int32_t> out;
    for (int32_t p = first; p < end; ++p) out.push_back(p);
    return out;
}

// What a SnapKV-like press keeps: the sinks, the observation window, and clusters
// around a few "important" positions that drift a little from head to head.
inline std::vector<int32_t> snapLike(int64_t promptLength, int64_t budget, int64_t window,
                                     uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::set<int32_t> kept;
    for (int32_t p = 0; p < 4; ++p) kept.insert(p);
    for (int64_t p = promptLength - window; p < promptLength; ++p) kept.insert(int32_t(p));
    while (int64_t(kept.size()) < budget) {
        const int32_t centre = int32_t(rng() % uint64_t(promptLength - window));
        const int width = 1 + int(rng() % 9);
        for (int32_t p = std::max(0, centre - width / 2);
             p <= centre + width / 2 && int64_t(kept.size()) < budget; ++p)
            kept.insert(p);
    }
    return {kept.begin(), kept.end()};
}

inline sessions::ModelRecord storiesModel() {
    sessions::ModelRecord m;
    m.spec = "random:stories260k";
    m.isFile = false;
    m.architecture = "llama";
    m.name = "stories260K";
    m.layers = 5;
    m.heads = 8;
    m.kvHeads = 4;
    m.headDim = 8;
    m.embedDim = 64;
    m.ffnDim = 172;
    m.vocabSize = 512;
    m.contextLength = 512;
    m.ropeTheta = 10000.0;
    return m;
}

inline sessions::PromptRecord prompt(int64_t sessionId, int64_t modelId, int tokens) {
    sessions::PromptRecord p;
    p.sessionId = sessionId;
    p.modelId = modelId;
    for (int i = 0; i < tokens; ++i) p.tokenIds.push_back(int32_t((i * 37 + 11) % 512));
    p.text = "Once upon a time there was a little girl named Lily " + std::to_string(tokens);
    return p;
}

// A complete run of a SnapKV-like selection with plausible metrics; hitRate NaN: not measured.
inline sessions::RunRecord realisticRun(const std::string& method, int64_t budget, uint64_t seed,
                                        int64_t promptLength, double hitRate, int64_t layers = 5,
                                        int64_t queryHeads = 8, int64_t kvHeads = 4) {
    sessions::RunRecord r;
    r.params.method = method;
    r.params.budget = budget;
    r.params.window = 16;
    r.newTokens = 16;
    r.engineVersion = "0.1.0";
    r.device = "cpu";
    r.dtype = "f32";
    r.threads = 2;
    r.selection = makeSelection(
        layers, queryHeads, kvHeads, promptLength, GqaMode::KvHead, [&](int l, int h) {
            if (method == "full") return range(0, int32_t(promptLength));
            return snapLike(promptLength, budget, 16, seed * 1000 + uint64_t(l * 17 + h));
        });
    r.selection.params = r.params;
    RunMetrics& m = r.metrics;
    std::mt19937_64 rng(seed);
    const int64_t perEntry = 2 * 8 * 4;  // K and V, head dim 8, f32
    for (int64_t l = 0; l < layers; ++l) {
        m.bytesPerLayer.push_back(r.selection.entries(l) * perEntry);
        m.hitRatePerLayer.push_back(hitRate);
    }
    m.fullBytes = layers * kvHeads * promptLength * perEntry;
    m.bytes = 0;
    for (int64_t b : m.bytesPerLayer) m.bytes += b;
    m.ratio = double(m.bytes) / double(m.fullBytes);
    const int agreed = method == "full" ? 16 : int(3 + seed % 10);
    for (int i = 0; i < 16; ++i) {
        m.fullTokens.push_back(int32_t(rng() % 512));
        m.tokens.push_back(i < agreed || i % 3 == 0 ? m.fullTokens.back() : int32_t(rng() % 512));
        m.klPerStep.push_back(method == "full" ? 0.0 : 0.002 * double(1 + rng() % 50));
    }
    int equal = 0;
    for (int i = 0; i < 16; ++i) equal += m.tokens[size_t(i)] == m.fullTokens[size_t(i)];
    m.agreedPrefix = agreed;
    m.tokenAgreement = equal / 16.0;
    m.meanKl = 0.0;
    for (double k : m.klPerStep) m.meanKl += k / 16.0;
    m.top1Agreement = std::min(1.0, m.tokenAgreement + 0.0625);
    m.hitRate = hitRate;
    m.hitK = std::isnan(hitRate) ? 0 : 16;
    m.hitSteps = std::isnan(hitRate) ? 0 : 16;
    r.fullText = "full continuation";
    r.text = "compressed continuation";
    return r;
}

}  // namespace kvlens::ui::test
