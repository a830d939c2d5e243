// A session store for the report tests, made with SessionStore directly (no model):
// one model, one prompt, and runs of several methods and budgets with selections,
// metrics (awkward values, a hit rate measured or not), per-layer statistics and
// continuations holding markup, control characters and broken UTF-8.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "sessions/SessionStore.h"
#include "sessions/StoreRecords.h"

namespace kvlens::test {

struct ReportSample {
    static constexpr int kLayers = 3;
    static constexpr int kKvHeads = 2;
    static constexpr int kQueryHeads = 4;
    static constexpr int kPromptLength = 300;
    static constexpr int kNewTokens = 8;
};

inline sessions::ModelRecord reportModel() {
    sessions::ModelRecord m;
    m.spec = "random:tiny:layers=3";
    m.isFile = false;
    m.architecture = "llama";
    m.name = "tiny";
    m.layers = ReportSample::kLayers;
    m.heads = ReportSample::kQueryHeads;
    m.kvHeads = ReportSample::kKvHeads;
    m.headDim = 16;
    m.embedDim = 64;
    m.ffnDim = 128;
    m.vocabSize = 256;
    m.contextLength = 2048;
    m.ropeTheta = 10000.0;
    return m;
}

// A run of `method` at `budget` (0: full) with metrics derived from `seed`.
inline sessions::RunRecord reportRun(int64_t sessionId, int64_t promptId, const std::string& method, int64_t budget,
                                     uint64_t seed, double hitRate) {
    std::mt19937_64 rng(seed);
    auto uniform = [&] { return double(rng() >> 11) * 0x1.0p-53; };
    const int T = ReportSample::kPromptLength;
    sessions::RunRecord r;
    r.sessionId = sessionId;
    r.promptId = promptId;
    r.params.method = method;
    r.params.budget = budget;
    r.params.window = 16;
    r.params.seed = 7;
    r.newTokens = ReportSample::kNewTokens;
    r.engineVersion = "0.1.0";
    r.device = "cpu";
    r.dtype = "f32";
    r.threads = 2;
    r.prefillSeconds = 0.5;
    r.fullText = "Once upon a time <b>Lily</b> & Tom went to the park. \xc3\xa9t\xc3\xa9";
    r.text = method == "full" ? r.fullText
                              : "Once upon a time <b>Lily</b> & Tom " + method + " \x01 broken \xff\xfe utf-8 \xe2\x82";
    Selection& s = r.selection;
    s.params = r.params;
    s.promptLength = T;
    s.queryHeads = ReportSample::kQueryHeads;
    s.kvHeads = ReportSample::kKvHeads;
    s.gqa = GqaMode::KvHead;
    for (int l = 0; l < ReportSample::kLayers; ++l) {
        const int64_t layerBudget = method == "full" ? T : budget + (method == "pyramidkv" ? 8 - 8 * l : 0);
        s.layerBudgets.push_back(layerBudget);
        std::vector<std::vector<int32_t>> heads;
        for (int h = 0; h < ReportSample::kKvHeads; ++h) {
            std::vector<int32_t> kept;
            if (method == "full") {
                for (int p = 0; p < T; ++p) kept.push_back(p);
            } else {
                std::vector<int32_t> all;
                for (int p = 0; p < T - 16; ++p) all.push_back(p);
                std::shuffle(all.begin(), all.end(), rng);
                kept.assign(all.begin(), all.begin() + (layerBudget - 16));
                for (int p = T - 16; p < T; ++p) kept.push_back(p);
                std::sort(kept.begin(), kept.end());
            }
            heads.push_back(kept);
        }
        s.kept.push_back(heads);
    }
    RunMetrics& m = r.metrics;
    for (int i = 0; i < ReportSample::kNewTokens; ++i) {
        m.fullTokens.push_back(int32_t(rng() % 256));
        m.tokens.push_back(method == "full" || i < 3 ? m.fullTokens.back() : int32_t(rng() % 256));
        m.klPerStep.push_back(method == "full" ? 0.0 : uniform() * 0.1);
    }
    m.agreedPrefix = method == "full" ? ReportSample::kNewTokens : 3;
    m.tokenAgreement = method == "full" ? 1.0 : 3.0 / 8.0 + uniform() / 3.0;
    m.meanKl = method == "full" ? 0.0 : uniform() * 0.1;
    m.top1Agreement = method == "full" ? 1.0 : uniform();
    m.fullBytes = int64_t(ReportSample::kLayers) * ReportSample::kKvHeads * T * 2 * 16 * 4;
    m.bytes = method == "full" ? m.fullBytes : m.fullBytes / T * budget;
    m.ratio = double(m.bytes) / double(m.fullBytes);
    // The buffers with room for the decode steps; the full run as one stored before schema 7.
    m.allocatedBytes = method == "full" ? 0 : m.bytes + m.fullBytes / T * ReportSample::kNewTokens;
    if (method == "streamingllm") {  // decoded with its rolling form, compressed every 4 steps
        m.decodeEvery = 4;
        for (int i = 0; i + 1 < ReportSample::kNewTokens; ++i) m.cacheEntries.push_back(budget + i % 4);
    }
    m.hitRate = hitRate;
    if (!std::isnan(hitRate)) {
        for (int l = 0; l < ReportSample::kLayers; ++l) m.hitRatePerLayer.push_back(hitRate + 0.01 * (l - 1));
        m.hitK = 16;
        m.hitSteps = 8;
    }
    for (int l = 0; l < ReportSample::kLayers; ++l) {
        r.layerStats.push_back({"effective_positions", l, -1, 40.0 + 10 * l});
        r.layerStats.push_back({"positions_90pct", l, -1, 80.0 + 20 * l});
        r.layerStats.push_back({"sink_mass", l, -1, 0.3 - 0.05 * l});
        r.layerStats.push_back({"local_mass", l, -1, 0.4 + 0.05 * l});
    }
    return r;
}

// Session `name` in `store`: full, snapkv 32 and 64, h2o 32 and 64 (no hit rate),
// streamingllm 48 and a failed adakv run. Returns the ids of the complete runs.
inline std::vector<int64_t> makeReportSession(sessions::SessionStore& store, const std::string& name) {
    const auto session = store.createSession(name, "notes with <markup> & \"quotes\"");
    const int64_t modelId = store.saveModel(reportModel());
    sessions::PromptRecord p;
    p.sessionId = session.id;
    p.modelId = modelId;
    for (int i = 0; i < ReportSample::kPromptLength; ++i) {
        p.tokenIds.push_back(int32_t(i % 256));
        p.text += i % 7 ? char('a' + i % 26) : ' ';
    }
    p.text += " <tail> & \xe2\x96\x81";
    const int64_t promptId = store.savePrompt(p);
    const double nan = std::numeric_limits<double>::quiet_NaN();
    std::vector<int64_t> ids;
    ids.push_back(store.saveRun(reportRun(session.id, promptId, "full", 0, 1, 1.0)));
    ids.push_back(store.saveRun(reportRun(session.id, promptId, "snapkv", 32, 2, 0.61)));
    ids.push_back(store.saveRun(reportRun(session.id, promptId, "snapkv", 64, 3, 0.83)));
    ids.push_back(store.saveRun(reportRun(session.id, promptId, "h2o", 32, 4, nan)));
    ids.push_back(store.saveRun(reportRun(session.id, promptId, "h2o", 64, 5, nan)));
    ids.push_back(store.saveRun(reportRun(session.id, promptId, "streamingllm", 48, 6, 0.5)));
    sessions::RunRecord failed = reportRun(session.id, promptId, "adakv", 32, 7, nan);
    failed.status = "failed";
    failed.error = "out of memory";
    store.saveRun(failed);
    return ids;
}

}  // namespace kvlens::test
