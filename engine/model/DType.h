// `--dtype auto|f32|bf16|f16`: the compute precision of weights, activations
// and the KV cache. Softmax and reductions always run in fp32.
#pragma once

#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

#include <string>

namespace kvlens {

enum class DTypeChoice { Auto, F32, BF16, F16 };

// Throws kvlens::Error naming the flag and the value.
DTypeChoice parseDType(const std::string& text);

// Auto: bf16 on CUDA and on CPUs with AVX512-BF16/AMX, else f32. F16 on a CPU
// is refused (LibTorch 1.13 has no CPU half matmul).
c10::ScalarType resolveDType(DTypeChoice choice, const c10::Device& device);

const char* dtypeName(c10::ScalarType type);
int64_t dtypeBytes(c10::ScalarType type);

// `--device cpu|cuda|cuda:N`; throws kvlens::Error when CUDA is asked for and
// this LibTorch has none.
c10::Device parseDevice(const std::string& text);

}  // namespace kvlens
