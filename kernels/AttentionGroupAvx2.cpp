// AttentionGroup's body for AVX2 with FMA: 8 lanes. Compiled for that set
// (kernels/CMakeLists.txt); called only where CpuFeatures has it.
#include "kernels/AttentionGroup.h"

#if defined(__x86_64__)
#include <immintrin.h>

namespace kvlens::kernels {
namespace {

struct L {
    using F = __m256;
    static constexpr int N = 8;
    static F zero() { return _mm256_setzero_ps(); }
    static F set1(float f) { return _mm256_set1_ps(f); }
    static F load(const float* p) { return _mm256_loadu_ps(p); }
    static F load(const uint16_t* p) {
        return _mm256_castsi256_ps(
            _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))), 16));
    }
    static void store(float* p, F a) { _mm256_storeu_ps(p, a); }
    static F add(F a, F b) { return _mm256_add_ps(a, b); }
    static F sub(F a, F b) { return _mm256_sub_ps(a, b); }
    static F mul(F a, F b) { return _mm256_mul_ps(a, b); }
    static F fma(F a, F b, F c) { return _mm256_fmadd_ps(a, b, c); }
    static F max(F a, F b) { return _mm256_max_ps(a, b); }
    static F floor(F a) { return _mm256_floor_ps(a); }
    static F pow2(F n) {
        return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23));
    }
    static float hsum(F a) {
        __m128 s = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
        s = _mm_add_ps(s, _mm_movehl_ps(s, s));
        s = _mm_add_ss(s, _mm_movehdup_ps(s));
        return _mm_cvtss_f32(s);
    }
};

#include "kernels/AttentionGroupBody.h"

constexpr AttentionGroupTable kTable = attentionTableFor<L>();

}  // namespace

const AttentionGroupTable* attentionGroupAvx2() { return &kTable; }

}  // namespace kvlens::kernels
#else
namespace kvlens::kernels {
const AttentionGroupTable* attentionGroupAvx2() { return nullptr; }
}  // namespace kvlens::kernels
#endif
