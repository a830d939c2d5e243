// The prompt's queries before RoPE, summarised per layer and query head for Expected
// Attention: their sum and sum of outer products over every position (fp64), and the
// queries of the first kMaxQuerySinks positions (fp32), so the mean and covariance of the
// positions after any number of sinks up to that can be had without another prefill.
#pragma once

#include <ATen/ATen.h>

#include <utility>
#include <vector>

namespace kvlens {

class QueryStatistics {
public:
    // `invFreq`: fp32 [ropeDim / 2], RoPE's radians per position of each pair; `halves`:
    // pairs (i, i + ropeDim/2) rather than (2i, 2i + 1).
    QueryStatistics(int64_t layers, int64_t promptLength, const at::Tensor& invFreq,
                    int64_t ropeDim, bool halves);

    // Queries after RoPE, q [n, H, D] at positions firstPosition ..: rotated back by
    // their position's angle, then added. Positions at or past the prompt's end are ignored.
    void add(int64_t layer, const at::Tensor& q, int64_t firstPosition);

    // x [n, heads, D] after RoPE (queries or keys) at positions firstPosition ..,
    // rotated back by each position's angle: fp32, the pre-RoPE vectors (YaRN's
    // magnitude, where the model has one, stays in them). LeverageScore's keys.
    at::Tensor rotatedBack(const at::Tensor& x, int64_t firstPosition) const;

    // Mean [H, D] and covariance [H, D, D] (divided by the count, as Expected Attention's
    // code does) of the pre-RoPE queries at positions sinks .. T-1, fp64 on the CPU.
    // YaRN's magnitude stays in them, as it does in the future queries they stand for.
    std::pair<at::Tensor, at::Tensor> meanAndCovariance(int64_t layer, int64_t sinks) const;

    // The mean of RoPE's rotation matrices over positions from .. from+count-1, [D, D]
    // fp64 (identity on dimensions past ropeDim): y = R x rotates a pre-RoPE x.
    at::Tensor averageRotation(int64_t from, int64_t count) const;

    int64_t promptLength() const { return promptLength_; }
    // The model's RoPE as the statistics turn by it (kernels::ropeShift takes the same).
    const at::Tensor& inverseFrequencies() const { return invFreq_; }
    int64_t ropeDim() const { return ropeDim_; }
    bool halves() const { return halves_; }
    int64_t bytes() const;

private:
    int64_t promptLength_, ropeDim_;
    bool halves_;
    at::Tensor invFreq_;             // on the queries' device
    std::vector<at::Tensor> sum_;    // [H, D] fp64
    std::vector<at::Tensor> outer_;  // [H, D, D] fp64
    std::vector<at::Tensor> first_;  // [H, min(T, kMaxQuerySinks), D] fp32
};

}  // namespace kvlens
