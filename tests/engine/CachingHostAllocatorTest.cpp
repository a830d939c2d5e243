// LibTorch's CPU tensors of 1 MB and more come from whole mappings that are kept
// when freed and served again, within a bound; smaller ones are left alone.
#include <gtest/gtest.h>

#include <c10/core/CPUAllocator.h>

#include <vector>

#include "engine/model/CachingHostAllocator.h"

namespace kvlens {
namespace {

TEST(CachingHostAllocator, ReusesLargeBlocksWithinItsBound) {
    CachingHostAllocator& a = CachingHostAllocator::install();
    EXPECT_EQ(c10::GetCPUAllocator(), &a);
    EXPECT_EQ(&CachingHostAllocator::install(), &a);  // once
    a.release();

    void* first = nullptr;
    {
        at::Tensor t = at::empty({3 << 20}, at::kByte);  // 3 MB
        first = t.data_ptr();
        t.fill_(7);
    }
    EXPECT_EQ(a.cachedBytes(), size_t(4) << 20);  // whole 2 MB pages
    const int64_t reused = a.reuses();
    {
        at::Tensor again = at::empty({(3 << 20) + 100}, at::kByte);  // same rounded size
        EXPECT_EQ(again.data_ptr(), first);
        EXPECT_EQ(a.reuses(), reused + 1);
        EXPECT_EQ(a.cachedBytes(), 0u);
        at::Tensor bigger = at::empty({8 << 20}, at::kByte);  // twice as large: a new mapping
        EXPECT_NE(bigger.data_ptr(), first);
        EXPECT_EQ(a.reuses(), reused + 1);
    }
    EXPECT_EQ(a.cachedBytes(), size_t(12) << 20);
    {
        at::Tensor small = at::empty({1000}, at::kFloat);  // 4 KB: the default allocator
        EXPECT_EQ(a.cachedBytes(), size_t(12) << 20);
        EXPECT_EQ(a.reuses(), reused + 1);
    }
    // A request a little larger than every idle block grows one (its pages kept).
    a.release();
    {
        at::Tensor t = at::empty({6 << 20}, at::kByte);
        t.fill_(3);
    }
    {
        const int64_t grown = a.grows();
        at::Tensor larger = at::empty({7 << 20}, at::kByte);
        EXPECT_EQ(a.grows(), grown + 1);
        EXPECT_EQ(a.cachedBytes(), 0u);
        larger.fill_(5);
        EXPECT_EQ(larger[(7 << 20) - 1].item<uint8_t>(), 5);
    }
    EXPECT_EQ(a.cachedBytes(), size_t(8) << 20);
    // Freed blocks beyond the bound are unmapped, not kept.
    {
        std::vector<at::Tensor> many;
        for (int i = 0; i < 9; ++i) many.push_back(at::empty({64 << 20}, at::kByte));
    }
    EXPECT_LE(a.cachedBytes(), CachingHostAllocator::kDefaultCacheBytes);
    EXPECT_GE(a.cachedBytes(), CachingHostAllocator::kDefaultCacheBytes - (size_t(64) << 20));
    // Reused memory holds what tensor ops write, like any other.
    at::Tensor x = at::arange(0, 1 << 20, at::kFloat), y = x * 2;
    EXPECT_EQ(y[12345].item<float>(), 24690.0f);
    a.release();
    EXPECT_EQ(a.cachedBytes(), 0u);
}

}  // namespace
}  // namespace kvlens
