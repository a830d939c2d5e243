// AttentionGroup's body for AVX-512 (F, BW, DQ, VL): 16 lanes. Compiled for that set
// (kernels/CMakeLists.txt); called only where CpuFeatures has it.
#include "kernels/AttentionGroup.h"

#if defined(__x86_64__)
// GCC 12's AVX-512 headers trip these on their own _mm512_undefined_* placeholders
// (GCC bug 105593), at every inlined intrinsic of this file.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

namespace kvlens::kernels {
namespace {

struct L {
    using F = __m512;
    static constexpr int N = 16;
    static F zero() { return _mm512_setzero_ps(); }
    static F set1(float f) { return _mm512_set1_ps(f); }
    static F load(const float* p) { return _mm512_loadu_ps(p); }
    static F load(const uint16_t* p) {
        return _mm512_castsi512_ps(
            _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))), 16));
    }
    static void store(float* p, F a) { _mm512_storeu_ps(p, a); }
    static F add(F a, F b) { return _mm512_add_ps(a, b); }
    static F sub(F a, F b) { return _mm512_sub_ps(a, b); }
    static F mul(F a, F b) { return _mm512_mul_ps(a, b); }
    static F fma(F a, F b, F c) { return _mm512_fmadd_ps(a, b, c); }
    static F max(F a, F b) { return _mm512_max_ps(a, b); }
    static F floor(F a) { return _mm512_roundscale_ps(a, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC); }
    static F pow2(F n) {
        return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23));
    }
    static float hsum(F a) { return _mm512_reduce_add_ps(a); }
    static float hmax(F a) { return _mm512_reduce_max_ps(a); }
    // hsum of 16 vectors: each level adds the halves hsum adds, two vectors' at once
    // (512 -> 256 -> 128 bits, then lanes 2 and 1 apart); lane 4c + e ends up with
    // vector 4e + c's sum, put in order by one permute.
    static void hsumN(const F* a, float* out) {
        F r[8], w[4], z[2];
        #pragma GCC unroll 8
        for (int m = 0; m < 8; ++m)
            r[m] = _mm512_add_ps(_mm512_shuffle_f32x4(a[2 * m], a[2 * m + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                                 _mm512_shuffle_f32x4(a[2 * m], a[2 * m + 1], _MM_SHUFFLE(3, 2, 3, 2)));
        #pragma GCC unroll 8
        for (int n = 0; n < 4; ++n)
            w[n] = _mm512_add_ps(_mm512_shuffle_f32x4(r[2 * n], r[2 * n + 1], _MM_SHUFFLE(2, 0, 2, 0)),
                                 _mm512_shuffle_f32x4(r[2 * n], r[2 * n + 1], _MM_SHUFFLE(3, 1, 3, 1)));
        #pragma GCC unroll 8
        for (int p = 0; p < 2; ++p)
            z[p] = _mm512_add_ps(_mm512_shuffle_ps(w[2 * p], w[2 * p + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                                 _mm512_shuffle_ps(w[2 * p], w[2 * p + 1], _MM_SHUFFLE(3, 2, 3, 2)));
        const F f = _mm512_add_ps(_mm512_shuffle_ps(z[0], z[1], _MM_SHUFFLE(2, 0, 2, 0)),
                                  _mm512_shuffle_ps(z[0], z[1], _MM_SHUFFLE(3, 1, 3, 1)));
        const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
        _mm512_storeu_ps(out, _mm512_permutexvar_ps(order, f));
    }
};

#include "kernels/AttentionGroupBody.h"

constexpr AttentionGroupTable kTable = attentionTableFor<L>();

}  // namespace

const AttentionGroupTable* attentionGroupAvx512() { return &kTable; }

}  // namespace kvlens::kernels
#else
namespace kvlens::kernels {
const AttentionGroupTable* attentionGroupAvx512() { return nullptr; }
}  // namespace kvlens::kernels
#endif
