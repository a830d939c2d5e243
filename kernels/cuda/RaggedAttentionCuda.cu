// CUDA body of kernels::raggedAttention: one new query per head against a
// compressed cache whose heads have different lengths, without padding them.
// Split-K ("flash decoding"): each block takes one query head and one chunk of
// its cache head's keys (blocks past a short head's end leave at once), keeps
// the chunk's softmax max, sum and weighted values in fp32; a second kernel
// combines the chunks of each head. The cache heads' pointers and lengths
// travel as a kernel parameter, so a decode step copies nothing to the device.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>

#include "kernels/cuda/RaggedAttentionCuda.h"

namespace kvlens::kernels::cuda {
namespace {

constexpr int kChunk = 128;    // keys per block
constexpr int kThreads = 128;  // 4 warps
constexpr int kWarps = kThreads / 32;
static_assert(kChunk == kThreads, "the chunk's softmax gives each thread one key");

__device__ __forceinline__ float toFloat(float v) { return v; }
__device__ __forceinline__ float toFloat(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float toFloat(__half v) { return __half2float(v); }
template <typename T>
__device__ T fromFloat(float v);
template <>
__device__ __forceinline__ float fromFloat<float>(float v) {
    return v;
}
template <>
__device__ __forceinline__ __nv_bfloat16 fromFloat<__nv_bfloat16>(float v) {
    return __float2bfloat16_rn(v);
}
template <>
__device__ __forceinline__ __half fromFloat<__half>(float v) {
    return __float2half_rn(v);
}

struct RaggedTable {
    RaggedCacheHead heads[kMaxRaggedCacheHeads];
    uint8_t headOf[kMaxRaggedQueryHeads];
};

struct RaggedArgs {
    const void* query;
    int64_t queryHeadStride;
    void* out;
    int D, maxSplits;
    float scale;
};

// Block-wide reduction in a fixed order (warps by shuffle, then warp 0).
template <bool kMax>
__device__ float blockReduce(float v, float* scratch) {
    for (int off = 16; off > 0; off >>= 1) {
        const float o = __shfl_xor_sync(0xffffffffu, v, off);
        v = kMax ? fmaxf(v, o) : v + o;
    }
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    __syncthreads();
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    float r = scratch[0];
    for (int w = 1; w < kWarps; ++w) r = kMax ? fmaxf(r, scratch[w]) : r + scratch[w];
    return r;
}

template <typename T>
__global__ void partialKernel(RaggedArgs a, RaggedTable table, float* work) {
    __shared__ float qs[kMaxRaggedHeadDim];
    __shared__ float p[kChunk];
    __shared__ float scratch[kWarps];
    const int h = blockIdx.y, split = blockIdx.x;
    const RaggedCacheHead& c = table.heads[table.headOf[h]];
    const int64_t start = int64_t(split) * kChunk;
    if (start >= c.length) return;  // uniform: the whole block leaves
    const int count = int(c.length - start < kChunk ? c.length - start : kChunk);
    const T* q = static_cast<const T*>(a.query) + h * a.queryHeadStride;
    for (int d = threadIdx.x; d < a.D; d += kThreads) qs[d] = toFloat(q[d]) * a.scale;
    __syncthreads();
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const T* keys = static_cast<const T*>(c.keys);
    for (int i = warp; i < count; i += kWarps) {
        const T* k = keys + (start + i) * c.keyRowStride;
        float dot = 0.0f;
        for (int d = lane; d < a.D; d += 32) dot = fmaf(qs[d], toFloat(k[d]), dot);
        for (int off = 16; off > 0; off >>= 1) dot += __shfl_xor_sync(0xffffffffu, dot, off);
        if (lane == 0) p[i] = dot;
    }
    __syncthreads();
    const float m = blockReduce<true>(threadIdx.x < count ? p[threadIdx.x] : -INFINITY, scratch);
    float e = 0.0f;
    if (threadIdx.x < count) {
        e = expf(p[threadIdx.x] - m);
        p[threadIdx.x] = e;
    }
    const float s = blockReduce<false>(e, scratch);  // its first barrier publishes p
    float* out = work + (int64_t(h) * a.maxSplits + split) * (a.D + 2);
    const T* values = static_cast<const T*>(c.values);
    for (int d = threadIdx.x; d < a.D; d += kThreads) {
        float acc = 0.0f;
        const T* v = values + start * c.valueRowStride + d;
        for (int i = 0; i < count; ++i) acc = fmaf(p[i], toFloat(v[i * c.valueRowStride]), acc);
        out[2 + d] = acc;
    }
    if (threadIdx.x == 0) {
        out[0] = m;
        out[1] = s;
    }
}

template <typename T>
__global__ void combineKernel(RaggedArgs a, RaggedTable table, const float* work) {
    const int h = blockIdx.x;
    const int64_t length = table.heads[table.headOf[h]].length;
    const int splits = int((length + kChunk - 1) / kChunk);
    const float* base = work + int64_t(h) * a.maxSplits * (a.D + 2);
    float M = -INFINITY;
    for (int s = 0; s < splits; ++s) M = fmaxf(M, base[int64_t(s) * (a.D + 2)]);
    float den = 0.0f;
    for (int s = 0; s < splits; ++s) {
        const float* part = base + int64_t(s) * (a.D + 2);
        den += part[1] * expf(part[0] - M);
    }
    T* out = static_cast<T*>(a.out) + int64_t(h) * a.D;
    for (int d = threadIdx.x; d < a.D; d += blockDim.x) {
        float num = 0.0f;
        for (int s = 0; s < splits; ++s) {
            const float* part = base + int64_t(s) * (a.D + 2);
            num += part[2 + d] * expf(part[0] - M);
        }
        out[d] = fromFloat<T>(splits > 0 ? num / den : 0.0f);
    }
}

int maxSplits(const RaggedProblem& p) {
    int64_t longest = 1;
    for (int h = 0; h < p.queryHeads; ++h) {
        const int64_t n = p.heads[p.headOf[h]].length;
        longest = n > longest ? n : longest;
    }
    return int((longest + kChunk - 1) / kChunk);
}

template <typename T>
void launch(const RaggedProblem& p, float* work, cudaStream_t stream) {
    RaggedArgs a;
    a.query = p.query;
    a.queryHeadStride = p.queryHeadStride;
    a.out = p.out;
    a.D = p.headDim;
    a.maxSplits = maxSplits(p);
    a.scale = 1.0f / sqrtf(float(p.headDim));
    RaggedTable table;
    for (int c = 0; c < kMaxRaggedCacheHeads; ++c) table.heads[c] = p.heads[c];
    for (int h = 0; h < kMaxRaggedQueryHeads; ++h) table.headOf[h] = p.headOf[h];
    partialKernel<T><<<dim3(unsigned(a.maxSplits), unsigned(p.queryHeads)), kThreads, 0, stream>>>(
        a, table, work);
    combineKernel<T><<<unsigned(p.queryHeads), kThreads, 0, stream>>>(a, table, work);
}

}  // namespace

size_t raggedAttentionWorkspaceBytes(const RaggedProblem& p) {
    return sizeof(float) * size_t(p.queryHeads) * size_t(maxSplits(p)) * size_t(p.headDim + 2);
}

const char* launchRaggedAttention(const RaggedProblem& p, void* workspace, void* stream) {
    if (p.queryHeads < 1 || p.queryHeads > kMaxRaggedQueryHeads || p.cacheHeads < 1 ||
        p.cacheHeads > kMaxRaggedCacheHeads || p.headDim < 1 || p.headDim > kMaxRaggedHeadDim) {
        return "ragged attention: unsupported shape";
    }
    for (int h = 0; h < p.queryHeads; ++h) {
        if (p.headOf[h] >= p.cacheHeads)
            return "ragged attention: a query head reads no cache head";
    }
    const cudaStream_t s = static_cast<cudaStream_t>(stream);
    float* work = static_cast<float*>(workspace);
    switch (p.type) {
        case ElementType::F32:
            launch<float>(p, work, s);
            break;
        case ElementType::BF16:
            launch<__nv_bfloat16>(p, work, s);
            break;
        case ElementType::F16:
            launch<__half>(p, work, s);
            break;
    }
    const cudaError_t err = cudaGetLastError();
    return err == cudaSuccess ? nullptr : cudaGetErrorString(err);
}

}  // namespace kvlens::kernels::cuda
