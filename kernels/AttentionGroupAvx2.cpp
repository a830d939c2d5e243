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
    static float hmax(F a) {
        __m128 s = _mm_max_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
        s = _mm_max_ps(s, _mm_movehl_ps(s, s));
        s = _mm_max_ss(s, _mm_movehdup_ps(s));
        return _mm_cvtss_f32(s);
    }
    // hsum of 8 vectors: each level adds the halves hsum adds, two vectors' at once
    // (256 -> 128 bits, then lanes 2 and 1 apart); lane 4c + e ends up with vector
    // 2e + c's sum, put in order by one permute.
    static void hsumN(const F* a, float* out) {
        F r[4], w[2];
        #pragma GCC unroll 8
        for (int m = 0; m < 4; ++m)
            r[m] = _mm256_add_ps(_mm256_permute2f128_ps(a[2 * m], a[2 * m + 1], 0x20),
                                 _mm256_permute2f128_ps(a[2 * m], a[2 * m + 1], 0x31));
        #pragma GCC unroll 8
        for (int n = 0; n < 2; ++n)
            w[n] = _mm256_add_ps(_mm256_shuffle_ps(r[2 * n], r[2 * n + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                                 _mm256_shuffle_ps(r[2 * n], r[2 * n + 1], _MM_SHUFFLE(3, 2, 3, 2)));
        const F f = _mm256_add_ps(_mm256_shuffle_ps(w[0], w[1], _MM_SHUFFLE(2, 0, 2, 0)),
                                  _mm256_shuffle_ps(w[0], w[1], _MM_SHUFFLE(3, 1, 3, 1)));
        _mm256_storeu_ps(out, _mm256_permutevar8x32_ps(f, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
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
