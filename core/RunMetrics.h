// What one compression run costs against FullKV on the same prompt: output
// agreement, next-token distribution drift, and KV memory.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

namespace kvlens {

struct RunMetrics {
    // Greedy continuations of n tokens (EOS does not stop them, so every run is n long).
    std::vector<int32_t> fullTokens;
    std::vector<int32_t> tokens;
    int64_t agreedPrefix = 0;     // tokens equal before the first divergence
    double tokenAgreement = 0.0;  // fraction of the n positions with equal tokens
    // Teacher-forced along the full-cache continuation: at each of the n decode
    // steps both caches have seen the same tokens.
    std::vector<double> klPerStep;  // KL(full || compressed), nats
    double meanKl = 0.0;
    double top1Agreement = 0.0;  // fraction of steps whose argmax agrees
    // KV bytes right after the gather (prompt entries only).
    int64_t fullBytes = 0;
    int64_t bytes = 0;
    std::vector<int64_t> bytesPerLayer;
    std::vector<std::vector<int64_t>> bytesPerHead;  // [layer][selection head]
    double ratio = 0.0;  // bytes / fullBytes
    // What the compressed cache's buffers really took right after the gather: the kept
    // entries plus the room for the decode steps (and ThinK's zeroed channels, which the
    // bytes above leave out); 0: not recorded (runs stored before schema 7).
    int64_t allocatedBytes = 0;
    // The SnapKV paper's hit rate (engine/analysis/HitRate.h): the share of each
    // query head's top-hitK attended prompt positions, over the hitSteps steps of
    // the full-cache decode, that the selection kept. NaN: not measured.
    double hitRate = std::numeric_limits<double>::quiet_NaN();  // mean over layers
    std::vector<double> hitRatePerLayer;
    int64_t hitK = 0, hitSteps = 0;
    double selectSeconds = 0.0, gatherSeconds = 0.0, decodeSeconds = 0.0;
    // With compression during decoding (DecodeCompressor): the decode steps between two
    // compressions (0: the cache was compressed once, after the prompt), and the entries per
    // head of the greedy run's cache (all its entries over layers x cache heads, rounded up: AdaKV's
    // heads and PyramidKV's layers hold different counts) after each answer token it was fed
    // (the first n - 1; the last is read by nothing; empty without). Both kept since store schema 7.
    int64_t decodeEvery = 0;
    std::vector<int64_t> cacheEntries;
};

}  // namespace kvlens
