// The full KV cache: every layer's keys and values live in one block (per-layer
// buffers of a little over a huge page each would take two), and growing past the
// capacity keeps what was cached.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include "engine/model/KvCache.h"

namespace kvlens {
namespace {

TEST(KvCache, EveryLayerLivesInOneBlockAndGrowingKeepsTheEntries) {
    const int64_t layers = 3, heads = 2, D = 8;
    KvCache cache(layers, heads, D, 4, at::kFloat, at::kCPU);
    const int64_t stride = cache.keyBuffer(0).numel();
    for (int64_t l = 0; l < layers; ++l) {
        EXPECT_EQ(cache.keyBuffer(l).data_ptr<float>(), cache.keyBuffer(0).data_ptr<float>() + 2 * l * stride);
        EXPECT_EQ(cache.valueBuffer(l).data_ptr<float>(), cache.keyBuffer(l).data_ptr<float>() + stride);
        EXPECT_TRUE(cache.keyBuffer(l).is_contiguous());
    }
    std::vector<at::Tensor> ks, vs;
    for (int step = 0; step < 3; ++step) {  // 3 x 3 rows: past a capacity of 4, then of 8
        for (int64_t l = 0; l < layers; ++l) {
            const at::Tensor k = at::randn({heads, 3, D}), v = at::randn({heads, 3, D});
            cache.append(l, k, v);
            if (step == 0) {
                ks.push_back(k);
                vs.push_back(v);
            } else {
                ks[l] = at::cat({ks[l], k}, 1);
                vs[l] = at::cat({vs[l], v}, 1);
            }
        }
    }
    EXPECT_GE(cache.capacity(), 9);
    EXPECT_EQ(cache.length(), 9);
    for (int64_t l = 0; l < layers; ++l) {
        EXPECT_TRUE(at::equal(cache.keys(l), ks[l])) << "layer " << l;
        EXPECT_TRUE(at::equal(cache.values(l), vs[l])) << "layer " << l;
        EXPECT_EQ(cache.keyBuffer(l).data_ptr<float>(),
                  cache.keyBuffer(0).data_ptr<float>() + 2 * l * cache.keyBuffer(0).numel());
    }
    EXPECT_EQ(cache.bytes(), 2 * layers * heads * 9 * D * 4);
}

}  // namespace
}  // namespace kvlens
