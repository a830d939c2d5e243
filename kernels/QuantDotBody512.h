// The integer row dot products of QuantDotBody.h in 512-bit registers, for the two
// AVX-512 units (QuantDotAvx512.cpp, QuantDotAvx512Vnni.cpp; AVX-512 F, BW, DQ, VL).
// Decode of quantised rows is bound by instructions, not by memory, on the machines
// measured (docs/performance.md): one 512-bit instruction does the work of two 256-bit
// ones on cores with full-width units and costs no more front-end slots on cores that
// split it in two. Included after QuantDotBody.h inside the unit's anonymous namespace,
// with V (QuantDotBody.h's) also taking 512-bit operands:
//   dot(u, s)                      __m512i of 16 int32: each the sum of 4 products of
//                                  unsigned bytes u and signed bytes s
//   scaledAdd(acc, u, s, scales16) acc plus the pairs of products of u and s times
//                                  16-bit scales, as 16 int32
// Same sums as the 256-bit kernels, in another order (QuantMatrixTest bounds both).

inline __m512i load512(const void* p) { return _mm512_loadu_si512(p); }
// Two 256-bit halves, lo in the low one.
inline __m512i join256(__m256i lo, __m256i hi) { return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1); }
// A float per 256-bit half: a in the low 8 lanes, b in the high 8.
inline __m512 halves(float a, float b) {
    return _mm512_insertf32x8(_mm512_set1_ps(a), _mm256_set1_ps(b), 1);
}
// A shuffle putting 16-bit lane p[L] of each 128-bit lane's source into every 16-bit
// lane of 128-bit lane L.
inline __m512i lanePick16x4(int p0, int p1, int p2, int p3) {
    auto pick = [](int p) { return _mm_set1_epi16(static_cast<short>((2 * p) | ((2 * p + 1) << 8))); };
    return join256(_mm256_set_m128i(pick(p1), pick(p0)), _mm256_set_m128i(pick(p3), pick(p2)));
}
// 16-bit lanes shifted right by a in the low half, by b in the high half.
inline __m512i shiftCounts(int a, int b) { return join256(_mm256_set1_epi16(static_cast<short>(a)), _mm256_set1_epi16(static_cast<short>(b))); }

// x negated where w is negative, for |w| . x (AVX-512 has no vpsignb; where w is 0,
// |w| is 0 and x may stay).
inline __m512i signOf(__m512i x, __m512i w) {
    return _mm512_mask_sub_epi8(x, _mm512_movepi8_mask(w), _mm512_setzero_si512(), x);
}

// Q8_0: two blocks a register (x's 64 bytes are contiguous; the weights' two 32 are
// 34 bytes apart).
template <class V>
inline __m512 q8_0Pair(const uint8_t* blk, const QuantX& xq, int64_t b, __m512 acc) {
    const __m512i w = join256(load256(blk + 2), load256(blk + 36));
    const __m512i s = V::dot(_mm512_abs_epi8(w), signOf(load512(xq.q + 32 * b), w));
    return _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), halves(halfToFloat(blk) * xq.d[b], halfToFloat(blk + 34) * xq.d[b + 1]),
                           acc);
}

template <class V>
float dotQ8_0x512(const uint8_t* row, const QuantX& xq, int64_t n) {
    __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
    const int64_t blocks = n / 32;
    int64_t b = 0;
    for (; b + 3 < blocks; b += 4) {
        const uint8_t* blk = row + 34 * b;
        prefetch<kQ8Ahead, kQ8Hint>(blk, 136);
        acc0 = q8_0Pair<V>(blk, xq, b, acc0);
        acc1 = q8_0Pair<V>(blk + 68, xq, b + 2, acc1);
    }
    __m256 tail = _mm256_setzero_ps();
    for (; b < blocks; ++b) tail = q8_0Block<V>(row + 34 * b, xq, b, tail);
    return _mm512_reduce_add_ps(_mm512_add_ps(acc0, acc1)) + hsum8(tail);
}

// Q4_0: four blocks (72 bytes) from two 64-byte loads, at the first block and 8 bytes
// on. Every field of a block starts at an even offset, so word permutes (vpermw,
// AVX-512 BW) gather them: each pair's nibbles as [low of b, high of b, low of b+1,
// high of b+1] against x's 64 bytes (unsigned nibbles as in QuantDotBody.h's dotQ4_0),
// and the four fp16 scales into one vector, converted together.
constexpr int16_t kQ4_0Pick01[32] = {1, 2, 3, 4, 5, 6, 7, 8, 1, 2, 3, 4, 5, 6, 7, 8,  // block 0: bytes 2-17
                                     10, 11, 12, 13, 14, 15, 16, 17, 10, 11, 12, 13, 14, 15, 16, 17};  // 1: 20-35
constexpr int16_t kQ4_0Pick23[32] = {15, 16, 17, 18, 19, 20, 21, 22, 15, 16, 17, 18, 19, 20, 21, 22,  // 2: 38-53, less 8
                                     24, 25, 26, 27, 28, 29, 30, 31, 24, 25, 26, 27, 28, 29, 30, 31};  // 3: 56-71, less 8
constexpr int16_t kQ4_0PickScales[32] = {0, 9, 18, 27};  // bytes 0, 18, 36, 54

template <class V>
float dotQ4_0x512(const uint8_t* row, const QuantX& xq, int64_t n) {
    __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
    __m256 tail = _mm256_setzero_ps();
    __m128 offset = _mm_setzero_ps();
    const __m512i pick01 = load512(kQ4_0Pick01), pick23 = load512(kQ4_0Pick23), pickScales = load512(kQ4_0PickScales);
    const __m512i shifts = _mm512_broadcast_i64x4(_mm256_set_m128i(_mm_set1_epi16(4), _mm_setzero_si128()));
    const __m512i m4 = _mm512_set1_epi8(0x0F);
    // Lanes 0-7 from scale 0 and 8-15 from scale 1; from 2 and 3.
    const __m512i d01 = _mm512_set_epi32(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0);
    const __m512i d23 = _mm512_add_epi32(d01, _mm512_set1_epi32(2));
    const int64_t blocks = n / 32;
    int64_t b = 0;
    for (; b + 3 < blocks; b += 4) {
        const uint8_t* blk = row + 18 * b;
        prefetch<kQ4Ahead, kQ4Hint>(blk, 72);
        const __m512i lo = load512(blk), hi = load512(blk + 8);
        const __m128 w4 = _mm_cvtph_ps(_mm512_castsi512_si128(_mm512_permutexvar_epi16(pickScales, lo)));
        offset = _mm_fmadd_ps(w4, _mm_loadu_ps(xq.off32 + b), offset);
        const __m512 d4x = _mm512_castps128_ps512(_mm_mul_ps(w4, _mm_loadu_ps(xq.d + b)));
        const __m512i q01 = _mm512_and_si512(_mm512_srlv_epi16(_mm512_permutexvar_epi16(pick01, lo), shifts), m4);
        const __m512i q23 = _mm512_and_si512(_mm512_srlv_epi16(_mm512_permutexvar_epi16(pick23, hi), shifts), m4);
        const int8_t* x = xq.q + 32 * b;
        acc0 = _mm512_fmadd_ps(_mm512_cvtepi32_ps(V::dot(q01, load512(x))), _mm512_permutexvar_ps(d01, d4x), acc0);
        acc1 = _mm512_fmadd_ps(_mm512_cvtepi32_ps(V::dot(q23, load512(x + 64))), _mm512_permutexvar_ps(d23, d4x), acc1);
    }
    // One horizontal sum a row, the offsets taken off in the low lanes first: a row of
    // 2048 is only 16 steps, and the three separate sums (main, tail, offset) were about
    // a tenth of the kernel's samples.
    const float sum = _mm512_reduce_add_ps(_mm512_sub_ps(_mm512_add_ps(acc0, acc1), _mm512_zextps128_ps512(offset)));
    if (b == blocks) return sum;
    float tailOffset = 0.0f;
    for (; b < blocks; ++b) tailOffset += q4_0Block<V>(row + 18 * b, xq, b, tail);
    return sum + hsum8(tail) - tailOffset;
}

// Q4_K and Q5_K: a register holds a 64-weight chunk, its low nibbles (sub-block 2c)
// in the low half and its high nibbles (2c + 1) in the high half, as x's 64 bytes lie.
template <class V, bool FifthBit>
float dotQ4_5_Kx512(const uint8_t* row, const QuantX& xq, int64_t n) {
    constexpr int64_t kBytes = FifthBit ? 176 : 144;
    const __m512i m4 = _mm512_set1_epi8(0x0F), one = _mm512_set1_epi8(1);
    __m512 acc = _mm512_setzero_ps();
    __m256 accMins = _mm256_setzero_ps();
    for (int64_t b = 0; b < n / 256; ++b) {
        const uint8_t* blk = row + kBytes * b;
        prefetch<kKAhead, kKHint>(blk, static_cast<int>(kBytes));
        __m128 dd;
        const __m128i scm = scalesMinsK4(blk, xq.dK[b], &dd);
        const __m512i scales = _mm512_broadcast_i32x4(_mm_cvtepu8_epi16(scm));
        const __m256i mins = minsTimesSums(scm, xq.qKsum16 + 16 * b);
        accMins = _mm256_fmadd_ps(cvt(mins), _mm256_broadcastss_ps(_mm_movehdup_ps(dd)), accMins);
        const __m512i hb = FifthBit ? _mm512_broadcast_i64x4(load256(blk + 16)) : _mm512_setzero_si512();
        const uint8_t* q = blk + (FifthBit ? 48 : 16);
        const int8_t* y = xq.qK + 256 * b;
        __m512i sum0 = _mm512_setzero_si512(), sum1 = _mm512_setzero_si512();
        #pragma GCC unroll 4
        for (int c = 0; c < 4; ++c) {
            __m512i w = _mm512_and_si512(_mm512_srlv_epi16(_mm512_broadcast_i64x4(load256(q + 32 * c)), shiftCounts(0, 4)), m4);
            if (FifthBit)  // bit 2c of qh is the fifth bit of sub-block 2c, bit 2c + 1 of 2c + 1
                w = _mm512_or_si512(w, _mm512_slli_epi16(_mm512_and_si512(_mm512_srlv_epi16(hb, shiftCounts(2 * c, 2 * c + 1)), one), 4));
            const __m512i sc = _mm512_shuffle_epi8(scales, lanePick16x4(2 * c, 2 * c, 2 * c + 1, 2 * c + 1));
            if (c % 2 == 0) {
                sum0 = V::scaledAdd(sum0, w, load512(y + 64 * c), sc);
            } else {
                sum1 = V::scaledAdd(sum1, w, load512(y + 64 * c), sc);
            }
        }
        acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_add_epi32(sum0, sum1)), _mm512_broadcastss_ps(dd), acc);
    }
    return _mm512_reduce_add_ps(acc) - hsum8(accMins);
}

// Q6_K: a register holds two 32-weight chunks of a half (k and k + 1: x's 64 bytes),
// each 128-bit lane one scale's 16 weights.
template <class V>
float dotQ6_Kx512(const uint8_t* row, const QuantX& xq, int64_t n) {
    const __m512i m4 = _mm512_set1_epi8(0x0F), m3 = _mm512_set1_epi8(3);
    __m512 acc = _mm512_setzero_ps();
    __m256 accOffset = _mm256_setzero_ps();
    for (int64_t b = 0; b < n / 256; ++b) {
        const uint8_t* blk = row + 210 * b;
        prefetch<kKAhead, kKHint>(blk, 210);
        const float d = halfToFloat(blk + 208) * xq.dK[b];
        const __m128i sc8 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 192));
        const __m256i offset = scalesTimesSums6(sc8, xq.qKsum16 + 16 * b);
        accOffset = _mm256_fmadd_ps(cvt(offset), _mm256_set1_ps(32.0f * d), accOffset);
        const __m256i sc16 = _mm256_cvtepi8_epi16(sc8);
        __m512i sum0 = _mm512_setzero_si512(), sum1 = _mm512_setzero_si512();
        #pragma GCC unroll 2
        for (int h = 0; h < 2; ++h) {
            const __m512i AB = load512(blk + 64 * h);  // chunks 0 and 1 in the low nibbles, 2 and 3 in the high
            const __m512i H = _mm512_broadcast_i64x4(load256(blk + 128 + 32 * h));
            const __m512i sc = _mm512_broadcast_i32x4(h == 0 ? _mm256_castsi256_si128(sc16) : _mm256_extracti128_si256(sc16, 1));
            const int8_t* y = xq.qK + 256 * b + 128 * h;
            const __m512i q01 = _mm512_or_si512(_mm512_and_si512(AB, m4),
                                                _mm512_slli_epi16(_mm512_and_si512(_mm512_srlv_epi16(H, shiftCounts(0, 2)), m3), 4));
            const __m512i q23 = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(AB, 4), m4),
                                                _mm512_slli_epi16(_mm512_and_si512(_mm512_srlv_epi16(H, shiftCounts(4, 6)), m3), 4));
            sum0 = V::scaledAdd(sum0, q01, load512(y), _mm512_shuffle_epi8(sc, lanePick16x4(0, 1, 2, 3)));
            sum1 = V::scaledAdd(sum1, q23, load512(y + 64), _mm512_shuffle_epi8(sc, lanePick16x4(4, 5, 6, 7)));
        }
        acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_add_epi32(sum0, sum1)), _mm512_set1_ps(d), acc);
    }
    return _mm512_reduce_add_ps(acc) - hsum8(accOffset);
}

template <class V>
constexpr QuantDotTable tableFor512(const char* isa) {
    return QuantDotTable{isa,
                         &dotHalf<V, false>,
                         &dotHalf<V, true>,
                         &dotQ8_0x512<V>,
                         &dotQ4_0x512<V>,
                         &dotQ4_5_Kx512<V, false>,
                         &dotQ4_5_Kx512<V, true>,
                         &dotQ6_Kx512<V>,
                         &dotF32<V>,
                         &quantizeBlocks};
}
