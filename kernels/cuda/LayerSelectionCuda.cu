// CUDA body of kernels::layerSelection. Four steps per layer, none of which
// writes the W x T probabilities of the window queries to global memory:
//  1. per (KV head, 32-key tile, group query): the tile's softmax max and sum
//     of exponentials (logits recomputed in registers from keys and queries);
//  2. per (KV head, group query): the tiles combined into the row's max and 1/sum;
//  3. per (KV head, prefix key): the logits again, each query's probability
//     summed over the window, per query head or as the group's mean -> votes;
//  4. pooling along positions -> scores; then, for a selection, a radix select
//     of the k-th largest score per head and an ordered compaction of the kept
//     positions (ties at the cut go to the lower position, as on the CPU).
// Every sum runs in a fixed order, so results do not vary from run to run.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cfloat>
#include <cmath>
#include <cub/block/block_scan.cuh>

#include "kernels/cuda/LayerSelectionCuda.h"

namespace kvlens::kernels::cuda {
namespace {

constexpr int kKeyThreads = 256;  // one thread per key
constexpr int kQueryTile = 16;    // queries staged in shared memory at a time
constexpr int kChunk = 32;        // head-dimension slice held in registers
constexpr int kStatThreads = 256;
constexpr int kTopThreads = 1024;

__device__ __forceinline__ float toFloat(float v) { return v; }
__device__ __forceinline__ float toFloat(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float toFloat(__half v) { return __half2float(v); }

struct VoteArgs {
    const float* queries;  // [H, W, D]
    const void* keys;
    int64_t keyHeadStride, keyRowStride, T, n;
    int G, W, D, Dp;  // Dp: D rounded up to kChunk
    float scale;
    bool perQueryHead;
};

size_t alignUp(size_t bytes) { return (bytes + 255) / 256 * 256; }

__host__ __device__ int64_t warpTiles(int64_t T) { return (T + 31) / 32; }

// Stages group queries q0 .. q0 + kQueryTile - 1 of KV head c (query q is
// window row q % W of query head c * G + q / W) into Qs [kQueryTile][Dp],
// zero beyond the group and beyond D.
__device__ void stageQueries(const VoteArgs& a, int c, int q0, float* Qs) {
    const int GW = a.G * a.W;
    for (int idx = threadIdx.x; idx < kQueryTile * a.Dp; idx += blockDim.x) {
        const int qq = idx / a.Dp, d = idx % a.Dp, q = q0 + qq;
        float v = 0.0f;
        if (q < GW && d < a.D) {
            const int h = c * a.G + q / a.W, i = q % a.W;
            v = a.queries[(int64_t(h) * a.W + i) * a.D + d];
        }
        Qs[idx] = v;
    }
}

// acc[qq] = Qs[qq] . key row, in fp32.
template <typename T>
__device__ void tileDots(const float* Qs, int Dp, int D, const T* krow, float (&acc)[kQueryTile]) {
#pragma unroll
    for (int qq = 0; qq < kQueryTile; ++qq) acc[qq] = 0.0f;
    for (int d0 = 0; d0 < Dp; d0 += kChunk) {
        float kr[kChunk];
#pragma unroll
        for (int d = 0; d < kChunk; ++d) kr[d] = d0 + d < D ? toFloat(krow[d0 + d]) : 0.0f;
#pragma unroll
        for (int qq = 0; qq < kQueryTile; ++qq) {
            const float* qr = Qs + qq * Dp + d0;
            float s = acc[qq];
#pragma unroll
            for (int d = 0; d < kChunk; ++d) s = fmaf(qr[d], kr[d], s);
            acc[qq] = s;
        }
    }
}

// Step 1: partial[c][tile][q] = (max, sum of exp(logit - max)) over the 32 keys
// of a warp tile that query q sees (key j <= T - W + q % W).
template <typename T>
__global__ void voteStatsKernel(VoteArgs a, float2* partial) {
    extern __shared__ float Qs[];
    const int c = blockIdx.y, GW = a.G * a.W;
    const int64_t j = int64_t(blockIdx.x) * kKeyThreads + threadIdx.x;
    const bool valid = j < a.T;
    const T* krow =
        static_cast<const T*>(a.keys) + c * a.keyHeadStride + (valid ? j : 0) * a.keyRowStride;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int64_t tiles = warpTiles(a.T), tile = int64_t(blockIdx.x) * (kKeyThreads / 32) + warp;
    for (int q0 = 0; q0 < GW; q0 += kQueryTile) {
        __syncthreads();
        stageQueries(a, c, q0, Qs);
        __syncthreads();
        float acc[kQueryTile];
        tileDots(Qs, a.Dp, a.D, krow, acc);
#pragma unroll
        for (int qq = 0; qq < kQueryTile; ++qq) {
            const int q = q0 + qq;
            if (q >= GW) break;  // uniform across the block
            const int64_t lastVisible = a.T - a.W + q % a.W;
            const float l = valid && j <= lastVisible ? acc[qq] * a.scale : -INFINITY;
            float m = l;
            for (int off = 16; off > 0; off >>= 1)
                m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, off));
            float e = m == -INFINITY ? 0.0f : expf(l - m);
            for (int off = 16; off > 0; off >>= 1) e += __shfl_xor_sync(0xffffffffu, e, off);
            if (lane == 0 && tile < tiles)
                partial[(int64_t(c) * tiles + tile) * GW + q] = make_float2(m, e);
        }
    }
}

__device__ __forceinline__ void combine(float& m, float& s, float m2, float s2) {
    if (m2 == -INFINITY) return;
    if (m == -INFINITY) {
        m = m2;
        s = s2;
        return;
    }
    const float M = fmaxf(m, m2);
    s = s * expf(m - M) + s2 * expf(m2 - M);
    m = M;
}

// Step 2: stats[c][q] = (row max, 1 / row sum), a fixed-order tree over the tiles.
__global__ void reduceStatsKernel(const float2* partial, int64_t tiles, int GW, float2* stats) {
    __shared__ float sm[kStatThreads], ss[kStatThreads];
    const int c = blockIdx.y, q = blockIdx.x;
    float m = -INFINITY, s = 0.0f;
    for (int64_t t = threadIdx.x; t < tiles; t += kStatThreads) {
        const float2 p = partial[(int64_t(c) * tiles + t) * GW + q];
        combine(m, s, p.x, p.y);
    }
    sm[threadIdx.x] = m;
    ss[threadIdx.x] = s;
    __syncthreads();
    for (int stride = kStatThreads / 2; stride > 0; stride >>= 1) {
        if (threadIdx.x < stride) {
            float mm = sm[threadIdx.x], s2 = ss[threadIdx.x];
            combine(mm, s2, sm[threadIdx.x + stride], ss[threadIdx.x + stride]);
            sm[threadIdx.x] = mm;
            ss[threadIdx.x] = s2;
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) stats[int64_t(c) * GW + q] = make_float2(sm[0], 1.0f / ss[0]);
}

// Step 3: votes of prefix key j (seen by every window query): per query head
// the sum over its W queries, or the group's mean of those sums.
template <typename T>
__global__ void votesKernel(VoteArgs a, const float2* stats, float* votes) {
    extern __shared__ float Qs[];
    const int c = blockIdx.y, GW = a.G * a.W;
    const int64_t j = int64_t(blockIdx.x) * kKeyThreads + threadIdx.x;
    const bool valid = j < a.n;
    const T* krow =
        static_cast<const T*>(a.keys) + c * a.keyHeadStride + (valid ? j : 0) * a.keyRowStride;
    float headSum = 0.0f, groupSum = 0.0f;
    for (int q0 = 0; q0 < GW; q0 += kQueryTile) {
        __syncthreads();
        stageQueries(a, c, q0, Qs);
        __syncthreads();
        float acc[kQueryTile];
        tileDots(Qs, a.Dp, a.D, krow, acc);
#pragma unroll
        for (int qq = 0; qq < kQueryTile; ++qq) {
            const int q = q0 + qq;
            if (q >= GW) break;
            const float2 st = stats[int64_t(c) * GW + q];
            headSum += expf(acc[qq] * a.scale - st.x) * st.y;
            if (q % a.W == a.W - 1) {
                const int g = q / a.W;
                if (a.perQueryHead) {
                    if (valid) votes[int64_t(c * a.G + g) * a.n + j] = headSum;
                } else {
                    groupSum += headSum;
                }
                headSum = 0.0f;
            }
        }
    }
    if (!a.perQueryHead && valid) votes[int64_t(c) * a.n + j] = groupSum / float(a.G);
}

// Step 4: pool1d along positions, stride 1, padding kernel / 2.
__global__ void poolKernel(const float* votes, int64_t total, int64_t n, int kernel, bool maxPool,
                           float* out) {
    const int64_t idx = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (idx >= total) return;
    const int64_t row = idx / n, j = idx % n, pad = kernel / 2;
    const float* v = votes + row * n;
    const int64_t lo = j - pad < 0 ? 0 : j - pad, hi = j + pad > n - 1 ? n - 1 : j + pad;
    if (maxPool) {
        float m = -INFINITY;
        for (int64_t t = lo; t <= hi; ++t) m = fmaxf(m, v[t]);
        out[idx] = m;
    } else {
        double sum = 0.0;
        for (int64_t t = lo; t <= hi; ++t) sum += v[t];
        out[idx] = float(sum / double(kernel));
    }
}

// A key whose unsigned order is the float order; NaN ranks as -inf and -0 as
// +0, as the CPU's comparison does.
__device__ __forceinline__ uint32_t orderKey(float f) {
    if (isnan(f)) f = -INFINITY;
    if (f == 0.0f) f = 0.0f;
    const uint32_t u = __float_as_uint(f);
    return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

// One block per row: the k-th largest key by radix select (8 bits a round),
// then kept positions in index order: every key above it and the first
// `remaining` equal to it; then the window positions n .. n + window - 1.
__global__ void topPositionsKernel(const float* scores, int64_t n, int64_t k, int window,
                                   int32_t* kept) {
    using Scan = cub::BlockScan<int, kTopThreads>;
    __shared__ typename Scan::TempStorage scanStorage;
    __shared__ unsigned int hist[256];
    __shared__ uint32_t sharedDigit;
    __shared__ unsigned long long sharedRemaining;
    const float* s = scores + int64_t(blockIdx.x) * n;
    const int64_t take = k < n ? k : n;
    int32_t* out = kept + int64_t(blockIdx.x) * (take + window);
    const bool partial = take > 0 && take < n;
    uint32_t prefix = 0, mask = 0;
    unsigned long long remaining = take;
    if (partial) {
        for (int shift = 24; shift >= 0; shift -= 8) {
            for (int i = threadIdx.x; i < 256; i += kTopThreads) hist[i] = 0;
            __syncthreads();
            for (int64_t j = threadIdx.x; j < n; j += kTopThreads) {
                const uint32_t u = orderKey(s[j]);
                if ((u & mask) == prefix) atomicAdd(&hist[(u >> shift) & 255u], 1u);
            }
            __syncthreads();
            if (threadIdx.x == 0) {
                unsigned long long above = 0;
                for (int d = 255; d >= 0; --d) {
                    if (above + hist[d] >= remaining) {
                        sharedDigit = uint32_t(d);
                        sharedRemaining = remaining - above;
                        break;
                    }
                    above += hist[d];
                }
            }
            __syncthreads();
            prefix |= sharedDigit << shift;
            mask |= 255u << shift;
            remaining = sharedRemaining;
            __syncthreads();
        }
    }
    // prefix is now the k-th largest key; `remaining` of the keys equal to it are kept.
    int64_t written = 0, equalSeen = 0;
    for (int64_t base = 0; base < n; base += kTopThreads) {
        const int64_t j = base + threadIdx.x;
        const bool valid = j < n;
        const uint32_t u = valid ? orderKey(s[j]) : 0u;
        const int isEqual = partial && valid && u == prefix ? 1 : 0;
        int equalRank = 0, equalCount = 0;
        Scan(scanStorage).ExclusiveSum(isEqual, equalRank, equalCount);
        __syncthreads();
        int keep = 0;
        if (valid) {
            if (take == n) {
                keep = 1;
            } else if (partial) {
                keep = u > prefix ||
                       (isEqual && (unsigned long long)(equalSeen + equalRank) < remaining);
            }
        }
        int slot = 0, keptCount = 0;
        Scan(scanStorage).ExclusiveSum(keep, slot, keptCount);
        __syncthreads();
        if (keep) out[written + slot] = int32_t(j);
        written += keptCount;
        equalSeen += equalCount;
    }
    for (int w = threadIdx.x; w < window; w += kTopThreads) out[take + w] = int32_t(n + w);
}

template <typename T>
void launchVotes(const VoteArgs& a, int kvHeads, float2* partial, float2* stats, float* votes,
                 cudaStream_t stream) {
    const size_t shared = size_t(kQueryTile) * a.Dp * sizeof(float);
    const int GW = a.G * a.W;
    const dim3 statsGrid(unsigned((a.T + kKeyThreads - 1) / kKeyThreads), unsigned(kvHeads));
    voteStatsKernel<T><<<statsGrid, kKeyThreads, shared, stream>>>(a, partial);
    reduceStatsKernel<<<dim3(unsigned(GW), unsigned(kvHeads)), kStatThreads, 0, stream>>>(
        partial, warpTiles(a.T), GW, stats);
    const dim3 votesGrid(unsigned((a.n + kKeyThreads - 1) / kKeyThreads), unsigned(kvHeads));
    votesKernel<T><<<votesGrid, kKeyThreads, shared, stream>>>(a, stats, votes);
}

struct Workspace {
    float2* partial;
    float2* stats;
    float* votes;
};

Workspace carve(const VoteProblem& p, void* base) {
    const int GW = (p.queryHeads / p.kvHeads) * p.window;
    char* at = static_cast<char*>(base);
    Workspace w;
    w.partial = reinterpret_cast<float2*>(at);
    at += alignUp(sizeof(float2) * size_t(p.kvHeads) * size_t(warpTiles(p.promptLength)) *
                  size_t(GW));
    w.stats = reinterpret_cast<float2*>(at);
    at += alignUp(sizeof(float2) * size_t(p.kvHeads) * size_t(GW));
    w.votes = reinterpret_cast<float*>(at);
    return w;
}

}  // namespace

size_t layerScoresWorkspaceBytes(const VoteProblem& p) {
    const size_t GW = size_t(p.queryHeads / p.kvHeads) * size_t(p.window);
    return alignUp(sizeof(float2) * size_t(p.kvHeads) * size_t(warpTiles(p.promptLength)) * GW) +
           alignUp(sizeof(float2) * size_t(p.kvHeads) * GW) +
           alignUp(sizeof(float) * size_t(p.heads()) * size_t(p.prefix()));
}

const char* launchLayerScores(const VoteProblem& p, float* scores, void* workspace, void* stream) {
    if (p.headDim < 1 || p.headDim > kMaxVoteHeadDim || p.window < 1 || p.prefix() < 1 ||
        p.kvHeads < 1 || p.queryHeads % p.kvHeads != 0) {
        return "layer selection: unsupported shape";
    }
    const cudaStream_t s = static_cast<cudaStream_t>(stream);
    VoteArgs a;
    a.queries = p.queries;
    a.keys = p.keys;
    a.keyHeadStride = p.keyHeadStride;
    a.keyRowStride = p.keyRowStride;
    a.T = p.promptLength;
    a.n = p.prefix();
    a.G = p.queryHeads / p.kvHeads;
    a.W = p.window;
    a.D = p.headDim;
    a.Dp = (p.headDim + kChunk - 1) / kChunk * kChunk;
    a.scale = 1.0f / sqrtf(float(p.headDim));
    a.perQueryHead = p.perQueryHead;
    const Workspace w = carve(p, workspace);
    switch (p.keyType) {
        case ElementType::F32:
            launchVotes<float>(a, p.kvHeads, w.partial, w.stats, w.votes, s);
            break;
        case ElementType::BF16:
            launchVotes<__nv_bfloat16>(a, p.kvHeads, w.partial, w.stats, w.votes, s);
            break;
        case ElementType::F16:
            launchVotes<__half>(a, p.kvHeads, w.partial, w.stats, w.votes, s);
            break;
    }
    const int64_t total = int64_t(p.heads()) * a.n;
    poolKernel<<<unsigned((total + 255) / 256), 256, 0, s>>>(w.votes, total, a.n, p.kernel,
                                                             p.maxPool, scores);
    const cudaError_t err = cudaGetLastError();
    return err == cudaSuccess ? nullptr : cudaGetErrorString(err);
}

const char* launchTopPositions(const float* scores, int rows, int64_t n, int64_t k, int window,
                               int32_t* kept, void* stream) {
    if (rows < 1 || n < 0 || k < 0 || window < 0) return "top positions: unsupported shape";
    topPositionsKernel<<<unsigned(rows), kTopThreads, 0, static_cast<cudaStream_t>(stream)>>>(
        scores, n, k, window, kept);
    const cudaError_t err = cudaGetLastError();
    return err == cudaSuccess ? nullptr : cudaGetErrorString(err);
}

}  // namespace kvlens::kernels::cuda
