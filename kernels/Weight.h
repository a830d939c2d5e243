// A projection's or embedding's weight [rows, cols]: a dense tensor on the model's
// device (random models, CUDA, fp32 files), or the file's own blocks read in place
// (QuantMatrix, CPU models of F16, BF16 and quantised files).
#pragma once

#include <ATen/ATen.h>

#include <memory>

#include "kernels/QuantMatrix.h"

namespace kvlens::kernels {

class Weight {
public:
    Weight() = default;
    Weight(at::Tensor dense) : dense_(std::move(dense)) {}  // NOLINT: a tensor is a weight
    explicit Weight(std::shared_ptr<const QuantMatrix> quant) : quant_(std::move(quant)) {}

    bool defined() const { return dense_.defined() || quant_ != nullptr; }
    bool quantised() const { return quant_ != nullptr; }
    const at::Tensor& dense() const { return dense_; }
    const QuantMatrix& quant() const { return *quant_; }

    int64_t rows() const { return quant_ ? quant_->rows() : dense_.size(0); }
    int64_t cols() const { return quant_ ? quant_->cols() : dense_.size(1); }
    int64_t numel() const { return defined() ? rows() * cols() : 0; }
    // Bytes held: the blocks read in place, or the dense tensor's storage.
    int64_t bytes() const {
        if (quant_) return quant_->bytes();
        return dense_.defined() ? dense_.numel() * dense_.element_size() : 0;
    }

private:
    at::Tensor dense_;
    std::shared_ptr<const QuantMatrix> quant_;
};

}  // namespace kvlens::kernels
