// Deterministic sample records for the session store tests and the writer
// helper: the same seed always gives the same run, so a reader in another
// process can rebuild what a run must contain and compare it field by field.
#pragma once

#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "sessions/StoreRecords.h"

namespace kvlens::sessions::test {

struct SampleShape {
    int layers = 4;
    int heads = 4;
    int promptLength = 8192;
    int kept = 300;  // positions per head (head 1 of layer 0 is left empty)
};

inline ModelRecord sampleModel() {
    ModelRecord m;
    m.spec = "random:tinyllama-1.1b";
    m.isFile = false;
    m.architecture = "llama";
    m.name = "tinyllama-1.1b";
    m.layers = 22;
    m.heads = 32;
    m.kvHeads = 4;
    m.headDim = 64;
    m.embedDim = 2048;
    m.ffnDim = 5632;
    m.vocabSize = 32000;
    m.contextLength = 2048;
    m.ropeTheta = 10000.0;
    return m;
}

inline PromptRecord samplePrompt(int64_t sessionId, int64_t modelId, int tokens = 512) {
    PromptRecord p;
    p.sessionId = sessionId;
    p.modelId = modelId;
    p.addBos = true;
    std::mt19937 rng(7);
    for (int i = 0; i < tokens; ++i) {
        p.tokenIds.push_back(int32_t(rng() % 32000));
        p.text += char('a' + p.tokenIds.back() % 26);
    }
    p.text += " \xe2\x96\x81 unicode \xc3\xa9";
    return p;
}

inline RunRecord sampleRun(uint64_t seed, int64_t sessionId, int64_t promptId,
                           const SampleShape& shape = {}) {
    std::mt19937_64 rng(seed);
    auto uniform = [&] { return double(rng() >> 11) * 0x1.0p-53; };
    RunRecord r;
    r.sessionId = sessionId;
    r.promptId = promptId;
    r.createdMs = 1700000000000 + int64_t(seed);
    r.params.method = seed % 2 ? "snapkv" : "adakv";
    r.params.budget = 64 + int64_t(seed % 200);
    r.params.budgetRatio = seed % 3 ? 0.0 : 0.125;
    r.params.window = 8 + int64_t(seed % 24);
    r.params.kernel = 5;
    r.params.pooling = seed % 2 ? Pooling::Avg : Pooling::Max;
    r.params.beta = 20.0 + uniform();
    r.params.alpha = uniform();
    r.params.gqa = seed % 2 ? GqaMode::QueryHead : GqaMode::KvHead;
    r.params.schedule = seed % 2 ? PyramidSchedule::Factory : PyramidSchedule::Exact;
    r.params.sinks = 4;
    r.params.lag = 16 + int64_t(seed);
    r.params.chunk = 3 + int64_t(seed);
    r.params.future = 100 + int64_t(seed);
    r.params.seed = seed | (uint64_t(1) << 63);  // the top bit must survive int64 storage
    r.newTokens = 16;
    r.engineVersion = "0.1.0";
    r.device = "cpu";
    r.dtype = "bf16";
    r.threads = 2;
    r.prefillSeconds = 1.0 + uniform();
    r.status = "complete";
    r.fullText = "full continuation " + std::to_string(seed);
    r.text = "compressed continuation " + std::to_string(seed) + " \xe2\x80\x94 with UTF-8";

    Selection& s = r.selection;
    s.params = r.params;
    s.params.gqa = GqaMode::KvHead;  // a press may change it: stored on its own
    s.promptLength = shape.promptLength;
    s.queryHeads = shape.heads * 8;
    s.kvHeads = shape.heads;
    s.gqa = GqaMode::KvHead;
    for (int l = 0; l < shape.layers; ++l) {
        s.layerBudgets.push_back(r.params.budget + l);
        std::vector<std::vector<int32_t>> heads;
        for (int h = 0; h < shape.heads; ++h) {
            std::vector<int32_t> kept;
            if (!(l == 0 && h == 1)) {
                std::vector<char> chosen(size_t(shape.promptLength), 0);
                for (int k = 0; k < shape.kept; ++k) chosen[rng() % chosen.size()] = 1;
                for (int p = 0; p < shape.promptLength; ++p) {
                    if (chosen[size_t(p)]) kept.push_back(p);
                }
            }
            // The prompt's last position (the codec's extremes are CodecTest's: a stored
            // position outside the prompt is a damaged store).
            if (l == shape.layers - 1 && h == 0 && (kept.empty() || kept.back() != shape.promptLength - 1))
                kept.push_back(shape.promptLength - 1);
            heads.push_back(kept);
        }
        s.kept.push_back(heads);
    }

    RunMetrics& m = r.metrics;
    for (int i = 0; i < 16; ++i) {
        m.fullTokens.push_back(int32_t(rng() % 32000));
        m.tokens.push_back(i % 3 ? m.fullTokens.back() : int32_t(rng() % 32000));
        m.klPerStep.push_back(uniform() * 1e-3);
    }
    m.klPerStep[3] = 0.0;
    m.klPerStep[5] = -0.0;
    m.klPerStep[7] = std::numeric_limits<double>::denorm_min();
    m.agreedPrefix = int64_t(seed % 16);
    m.tokenAgreement = uniform();
    m.meanKl = uniform() * 1e-3;
    m.top1Agreement = uniform();
    m.fullBytes = int64_t(1) << 40;
    m.bytes = int64_t(rng() % (uint64_t(1) << 40));
    m.ratio = double(m.bytes) / double(m.fullBytes);
    for (int l = 0; l < shape.layers; ++l) {
        m.bytesPerLayer.push_back(int64_t(rng() % 1000000));
        std::vector<int64_t> perHead;
        for (int h = 0; h < shape.heads; ++h) perHead.push_back(int64_t(rng() % 100000));
        m.bytesPerHead.push_back(perHead);
    }
    m.selectSeconds = uniform();
    m.gatherSeconds = uniform();
    m.decodeSeconds = uniform() * 10;
    for (int l = 0; l < shape.layers; ++l) m.hitRatePerLayer.push_back(uniform());
    m.hitRate = seed % 4 == 3 ? std::numeric_limits<double>::quiet_NaN() : uniform();  // NaN: not measured
    m.hitK = 16;
    m.hitSteps = int64_t(seed % 64) + 1;

    for (int l = 0; l < shape.layers; ++l) {
        for (int h = -1; h < shape.heads; ++h) {
            r.layerStats.push_back({"entropy", l, h, uniform() * 8});
            r.layerStats.push_back({"sink_mass", l, h, uniform()});
        }
    }
    return r;
}

}  // namespace kvlens::sessions::test
