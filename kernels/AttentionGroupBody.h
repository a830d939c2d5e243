// The body of AttentionGroup.h, over a vector type L, included by each instruction
// set's translation unit inside its own anonymous namespace, after it defines L:
//   F, N; zero, set1, load(const float*), load(const uint16_t*) (bf16 widened), store,
//   add, sub, mul, fma(a, b, c) = a b + c, max, floor, hsum, pow2(n) = 2^n for integral n,
//   hsumN(a, out): out[i] = hsum(a[i]) for N vectors at once (bit for bit: the same
//   tree of additions, N sums sharing its shuffles), hmax
// No standard library here: what these units emit must not be shared with code
// compiled for another instruction set.

// exp(x) for x <= 0 (scores less their maximum), as Cephes' expf: x = n ln2 + r with
// |r| <= ln2 / 2, a degree-6 polynomial for e^r (relative error ~1e-7), times 2^n;
// below -87.3 the result is the smallest normal float's neighbourhood, never a NaN.
template <class L>
typename L::F expNegative(typename L::F x) {
    x = L::max(x, L::set1(-87.3f));
    const typename L::F n = L::floor(L::fma(x, L::set1(1.44269504088896341f), L::set1(0.5f)));
    x = L::fma(n, L::set1(-0.693359375f), x);
    x = L::fma(n, L::set1(2.12194440e-4f), x);
    typename L::F p = L::set1(1.9875691500e-4f);
    p = L::fma(p, x, L::set1(1.3981999507e-3f));
    p = L::fma(p, x, L::set1(8.3334519073e-3f));
    p = L::fma(p, x, L::set1(4.1665795894e-2f));
    p = L::fma(p, x, L::set1(1.6666665459e-1f));
    p = L::fma(p, x, L::set1(5.0000001201e-1f));
    p = L::fma(p, L::mul(x, x), L::add(x, L::set1(1.0f)));
    return L::mul(p, L::pow2(n));
}

// Each of G rows of S scores turned into exp(score - max) in place, with 1 / sum in
// inv; the last S % N scores go through a padded lane set.
template <class L>
void softmaxRows(float* scores, int G, int64_t S, float* inv) {
    for (int g = 0; g < G; ++g) {
        float* row = scores + g * S;
        float mx = row[0];
        int64_t j = 0;
        if (S >= L::N) {
            typename L::F mv = L::load(row);
            for (j = L::N; j + L::N <= S; j += L::N) mv = L::max(mv, L::load(row + j));
            mx = L::hmax(mv);
        }
        for (; j < S; ++j) mx = row[j] > mx ? row[j] : mx;
        const typename L::F m = L::set1(mx);
        typename L::F z = L::zero();
        j = 0;
        for (; j + L::N <= S; j += L::N) {
            const typename L::F e = expNegative<L>(L::sub(L::load(row + j), m));
            L::store(row + j, e);
            z = L::add(z, e);
        }
        float sum = L::hsum(z);
        if (j < S) {
            alignas(64) float tail[L::N];
            for (int i = 0; i < L::N; ++i) tail[i] = j + i < S ? row[j + i] : mx;
            L::store(tail, expNegative<L>(L::sub(L::load(tail), m)));
            for (int i = 0; j + i < S; ++i) sum += (row[j + i] = tail[i]);
        }
        inv[g] = 1.0f / sum;
    }
}

// Rows [j, j + n) of a key or value cache as fp32 rows `*stride` apart: fp32 rows in
// place, bf16 rows widened into buf (n rows of DK).
template <class L, int DK>
const float* fp32Rows(const float* r, int64_t s1, int64_t j, int, float*, int64_t* stride) {
    *stride = s1;
    return r + j * s1;
}
template <class L, int DK>
const float* fp32Rows(const uint16_t* r, int64_t s1, int64_t j, int n, float* buf, int64_t* stride) {
    for (int i = 0; i < n; ++i)
        #pragma GCC unroll 16
        for (int v = 0; v < DK; v += L::N) L::store(buf + i * DK + v, L::load(r + (j + i) * s1 + v));
    *stride = DK;
    return buf;
}

// scores[g * S + j] = the fp32 dot of query row g with key row j: D / N lanes of
// products summed per key, then one horizontal sum. Keys go by blocks of N, widened
// once for the group, their N horizontal sums sharing one tree of shuffles (hsumN);
// each score is the same sum of the same products whatever G, S or the block.
template <class L, typename K, int DK>
void groupScores(const float* qf, int G, const K* kr, int64_t ks1, int64_t S, float* scores) {
    constexpr int NV = DK / L::N;
    alignas(64) float kbuf[L::N * DK];
    int64_t j = 0;
    for (; j + L::N <= S; j += L::N) {
        int64_t st = 0;
        const float* kf = fp32Rows<L, DK>(kr, ks1, j, L::N, kbuf, &st);
        for (int g = 0; g < G; ++g) {
            typename L::F q[NV];
            #pragma GCC unroll 16
            for (int v = 0; v < NV; ++v) q[v] = L::load(qf + g * DK + L::N * v);
            typename L::F a[L::N];
            #pragma GCC unroll 16
            for (int i = 0; i < L::N; ++i) {
                a[i] = L::mul(q[0], L::load(kf + i * st));
                #pragma GCC unroll 16
                for (int v = 1; v < NV; ++v) a[i] = L::fma(q[v], L::load(kf + i * st + L::N * v), a[i]);
            }
            L::hsumN(a, scores + g * S + j);
        }
    }
    for (; j < S; ++j) {
        typename L::F k[NV];
        for (int v = 0; v < NV; ++v) k[v] = L::load(kr + j * ks1 + L::N * v);
        for (int g = 0; g < G; ++g) {
            typename L::F a = L::mul(L::load(qf + g * DK), k[0]);
            for (int v = 1; v < NV; ++v) a = L::fma(L::load(qf + g * DK + L::N * v), k[v], a);
            scores[g * S + j] = L::hsum(a);
        }
    }
}

// out[r] += the weighted value rows [0, n) (st apart) of query rows r < Rows, in
// order: each output lane an fp32 chain of fused multiply-adds over the keys, the same
// whatever G. The accumulators live in registers across the rows, VC vectors of a row
// at a time.
template <class L, int DK, int Rows, int VC>
inline void weighValues(const float* p, int64_t pS, const float* vf, int64_t st, int n, float* out) {
    constexpr int NV = DK / L::N;
    for (int v0 = 0; v0 < NV; v0 += VC) {
        typename L::F a[Rows][VC];
        #pragma GCC unroll 16
        for (int r = 0; r < Rows; ++r)
            #pragma GCC unroll 16
            for (int v = 0; v < VC; ++v) a[r][v] = L::load(out + r * DK + L::N * (v0 + v));
        for (int i = 0; i < n; ++i) {
            #pragma GCC unroll 16
            for (int r = 0; r < Rows; ++r) {
                const typename L::F pj = L::set1(p[r * pS + i]);
                #pragma GCC unroll 16
                for (int v = 0; v < VC; ++v) a[r][v] = L::fma(pj, L::load(vf + i * st + L::N * (v0 + v)), a[r][v]);
            }
        }
        #pragma GCC unroll 16
        for (int r = 0; r < Rows; ++r)
            #pragma GCC unroll 16
            for (int v = 0; v < VC; ++v) L::store(out + r * DK + L::N * (v0 + v), a[r][v]);
    }
}

template <class L, typename K, int DK>
void attendGroup(const float* qf, int G, const K* kr, int64_t ks1, const K* vr, int64_t vs1, int64_t S,
                 float* scores, float* out) {
    constexpr int NV = DK / L::N;
    groupScores<L, K, DK>(qf, G, kr, ks1, S, scores);
    float inv[64];
    softmaxRows<L>(scores, G, S, inv);
    // Values by blocks of 16 KB (in L1), each widened once for the group; a row's
    // sums stay in registers across a block (two rows at a time where their
    // accumulators fit, so the chains overlap).
    constexpr int kBlock = 4096 / DK;
    constexpr int kRegs = L::N == 16 ? 32 : 16;  // vector registers of the set
    constexpr int VC = NV <= kRegs / 2 ? NV : kRegs / 2;
    constexpr int kPair = 2 * VC <= kRegs / 2 ? 2 : 1;
    alignas(64) float vbuf[kBlock * DK];
    for (int i = 0; i < G * DK; i += L::N) L::store(out + i, L::zero());
    for (int64_t j = 0; j < S; j += kBlock) {
        const int n = S - j < kBlock ? static_cast<int>(S - j) : kBlock;
        int64_t st = 0;
        const float* vf = fp32Rows<L, DK>(vr, vs1, j, n, vbuf, &st);
        int g = 0;
        for (; g + kPair <= G; g += kPair) weighValues<L, DK, kPair, VC>(scores + g * S + j, S, vf, st, n, out + g * DK);
        for (; g < G; ++g) weighValues<L, DK, 1, VC>(scores + g * S + j, S, vf, st, n, out + g * DK);
    }
    for (int g = 0; g < G; ++g) {
        const typename L::F s = L::set1(inv[g]);
        float* a = out + g * DK;
        for (int v = 0; v < NV; ++v) L::store(a + L::N * v, L::mul(L::load(a + L::N * v), s));
    }
}

template <class L>
constexpr AttentionGroupTable attentionTableFor() {
    return AttentionGroupTable{&attendGroup<L, float, 64>,     &attendGroup<L, float, 128>,
                               &attendGroup<L, uint16_t, 64>,  &attendGroup<L, uint16_t, 128>,
                               &groupScores<L, float, 64>,     &groupScores<L, float, 128>,
                               &groupScores<L, uint16_t, 64>,  &groupScores<L, uint16_t, 128>};
}
