// The body of AttentionGroup.h, over a vector type L, included by each instruction
// set's translation unit inside its own anonymous namespace, after it defines L:
//   F, N; zero, set1, load(const float*), load(const uint16_t*) (bf16 widened), store,
//   add, sub, mul, fma(a, b, c) = a b + c, max, floor, hsum, pow2(n) = 2^n for integral n
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
        for (int64_t j = 1; j < S; ++j) mx = row[j] > mx ? row[j] : mx;
        const typename L::F m = L::set1(mx);
        typename L::F z = L::zero();
        int64_t j = 0;
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

// scores[g * S + j] = the fp32 dot of query row g with key row j, each key read once.
template <class L, typename K, int DK>
void groupScores(const float* qf, int G, const K* kr, int64_t ks1, int64_t S, float* scores) {
    constexpr int NV = DK / L::N;
    for (int64_t j = 0; j < S; ++j) {
        typename L::F k[NV];
        for (int v = 0; v < NV; ++v) k[v] = L::load(kr + j * ks1 + L::N * v);
        for (int g = 0; g < G; ++g) {
            typename L::F a = L::mul(L::load(qf + g * DK), k[0]);
            for (int v = 1; v < NV; ++v) a = L::fma(L::load(qf + g * DK + L::N * v), k[v], a);
            scores[g * S + j] = L::hsum(a);
        }
    }
}

template <class L, typename K, int DK>
void attendGroup(const float* qf, int G, const K* kr, int64_t ks1, const K* vr, int64_t vs1, int64_t S,
                 float* scores, float* out) {
    constexpr int NV = DK / L::N;
    groupScores<L, K, DK>(qf, G, kr, ks1, S, scores);
    float inv[64];
    softmaxRows<L>(scores, G, S, inv);
    // Each value row is read once for the whole group: the G rows' sums live in out
    // (L1), each summed in the same order as alone.
    for (int i = 0; i < G * DK; i += L::N) L::store(out + i, L::zero());
    for (int64_t j = 0; j < S; ++j) {
        typename L::F vj[NV];
        for (int v = 0; v < NV; ++v) vj[v] = L::load(vr + j * vs1 + L::N * v);
        for (int g = 0; g < G; ++g) {
            const typename L::F pj = L::set1(scores[g * S + j]);
            float* a = out + g * DK;
            for (int v = 0; v < NV; ++v) L::store(a + L::N * v, L::fma(pj, vj[v], L::load(a + L::N * v)));
        }
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
