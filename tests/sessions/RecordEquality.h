// Field-by-field comparison of store records for the tests; doubles compare
// by their bits (NaN read back from SQL NULL is the canonical quiet NaN).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>

#include "sessions/StoreRecords.h"

namespace kvlens::sessions::test {

inline bool sameBits(double a, double b) {
    if (std::isnan(a) && std::isnan(b)) return true;
    return std::memcmp(&a, &b, sizeof a) == 0;
}

inline bool sameBits(const std::vector<double>& a, const std::vector<double>& b) {
    return a.size() == b.size() &&
           (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0);
}

inline void expectSameParams(const PressParams& a, const PressParams& b, const std::string& where) {
    EXPECT_EQ(a.method, b.method) << where;
    EXPECT_EQ(a.budget, b.budget) << where;
    EXPECT_TRUE(sameBits(a.budgetRatio, b.budgetRatio)) << where;
    EXPECT_EQ(a.window, b.window) << where;
    EXPECT_EQ(a.kernel, b.kernel) << where;
    EXPECT_EQ(a.pooling, b.pooling) << where;
    EXPECT_TRUE(sameBits(a.beta, b.beta)) << where;
    EXPECT_TRUE(sameBits(a.alpha, b.alpha)) << where;
    EXPECT_EQ(a.gqa, b.gqa) << where;
    EXPECT_EQ(a.schedule, b.schedule) << where;
    EXPECT_EQ(a.sinks, b.sinks) << where;
    EXPECT_EQ(a.lag, b.lag) << where;
    EXPECT_EQ(a.chunk, b.chunk) << where;
    EXPECT_EQ(a.future, b.future) << where;
    EXPECT_EQ(a.seed, b.seed) << where;
    EXPECT_EQ(a.convention, b.convention) << where;
    // Every knob of the knob table, doubles to the last bit (the JSON holds their shortest exact text).
    for (const KnobInfo& k : methods::knobs())
        EXPECT_EQ(methods::knobValue(a, k.knob), methods::knobValue(b, k.knob)) << where << ": " << k.flag;
}

// Every field of two runs; ids only when `compareIds`.
inline void expectSameRun(const RunRecord& a, const RunRecord& b, bool compareIds = true) {
    if (compareIds) {
        EXPECT_EQ(a.id, b.id);
        EXPECT_EQ(a.sessionId, b.sessionId);
        EXPECT_EQ(a.promptId, b.promptId);
    }
    EXPECT_EQ(a.createdMs, b.createdMs);
    expectSameParams(a.params, b.params, "run params");
    EXPECT_EQ(a.newTokens, b.newTokens);
    EXPECT_EQ(a.engineVersion, b.engineVersion);
    EXPECT_EQ(a.device, b.device);
    EXPECT_EQ(a.dtype, b.dtype);
    EXPECT_EQ(a.threads, b.threads);
    EXPECT_TRUE(sameBits(a.prefillSeconds, b.prefillSeconds));
    EXPECT_EQ(a.status, b.status);
    EXPECT_EQ(a.error, b.error);
    EXPECT_EQ(a.fullText, b.fullText);
    EXPECT_EQ(a.text, b.text);

    const Selection &s = a.selection, &t = b.selection;
    expectSameParams(s.params, t.params, "selection params");
    EXPECT_EQ(s.promptLength, t.promptLength);
    EXPECT_EQ(s.queryHeads, t.queryHeads);
    EXPECT_EQ(s.kvHeads, t.kvHeads);
    EXPECT_EQ(s.gqa, t.gqa);
    EXPECT_EQ(s.layerBudgets, t.layerBudgets);
    EXPECT_TRUE(s.kept == t.kept) << "kept positions differ";

    const RunMetrics &m = a.metrics, &n = b.metrics;
    EXPECT_EQ(m.fullTokens, n.fullTokens);
    EXPECT_EQ(m.tokens, n.tokens);
    EXPECT_EQ(m.agreedPrefix, n.agreedPrefix);
    EXPECT_TRUE(sameBits(m.tokenAgreement, n.tokenAgreement));
    EXPECT_TRUE(sameBits(m.klPerStep, n.klPerStep));
    EXPECT_TRUE(sameBits(m.meanKl, n.meanKl));
    EXPECT_TRUE(sameBits(m.top1Agreement, n.top1Agreement));
    EXPECT_EQ(m.fullBytes, n.fullBytes);
    EXPECT_EQ(m.bytes, n.bytes);
    EXPECT_EQ(m.bytesPerLayer, n.bytesPerLayer);
    EXPECT_EQ(m.bytesPerHead, n.bytesPerHead);
    EXPECT_TRUE(sameBits(m.ratio, n.ratio));
    EXPECT_TRUE(sameBits(m.selectSeconds, n.selectSeconds));
    EXPECT_TRUE(sameBits(m.gatherSeconds, n.gatherSeconds));
    EXPECT_TRUE(sameBits(m.decodeSeconds, n.decodeSeconds));
    EXPECT_TRUE(sameBits(m.hitRate, n.hitRate));
    EXPECT_TRUE(sameBits(m.hitRatePerLayer, n.hitRatePerLayer));
    EXPECT_EQ(m.hitK, n.hitK);
    EXPECT_EQ(m.hitSteps, n.hitSteps);

    ASSERT_EQ(a.layerStats.size(), b.layerStats.size());
    for (size_t i = 0; i < a.layerStats.size(); ++i) {
        EXPECT_EQ(a.layerStats[i].name, b.layerStats[i].name) << i;
        EXPECT_EQ(a.layerStats[i].layer, b.layerStats[i].layer) << i;
        EXPECT_EQ(a.layerStats[i].head, b.layerStats[i].head) << i;
        EXPECT_TRUE(sameBits(a.layerStats[i].value, b.layerStats[i].value)) << i;
    }
}

}  // namespace kvlens::sessions::test
