#include "engine/model/DType.h"

#include <ATen/Context.h>

#include "kernels/CpuFeatures.h"
#include "core/Error.h"

namespace kvlens {

DTypeChoice parseDType(const std::string& text) {
    if (text == "auto") return DTypeChoice::Auto;
    if (text == "f32" || text == "fp32" || text == "float32") return DTypeChoice::F32;
    if (text == "bf16" || text == "bfloat16") return DTypeChoice::BF16;
    if (text == "f16" || text == "fp16" || text == "float16") return DTypeChoice::F16;
    throw Error("--dtype '" + text + "' is not one of auto, f32, bf16, f16");
}

c10::ScalarType resolveDType(DTypeChoice choice, const c10::Device& device) {
    switch (choice) {
        case DTypeChoice::F32:
            return c10::kFloat;
        case DTypeChoice::BF16:
            return c10::kBFloat16;
        case DTypeChoice::F16:
            if (!device.is_cuda()) {
                throw Error("--dtype f16 needs --device cuda (CPU half matmuls are not available)");
            }
            return c10::kHalf;
        case DTypeChoice::Auto:
            break;
    }
    if (device.is_cuda()) return c10::kBFloat16;
    return CpuFeatures::detect().fastBf16() ? c10::kBFloat16 : c10::kFloat;
}

const char* dtypeName(c10::ScalarType type) {
    switch (type) {
        case c10::kFloat:
            return "f32";
        case c10::kBFloat16:
            return "bf16";
        case c10::kHalf:
            return "f16";
        default:
            return c10::toString(type);
    }
}

int64_t dtypeBytes(c10::ScalarType type) { return static_cast<int64_t>(c10::elementSize(type)); }

c10::Device parseDevice(const std::string& text) {
    if (text == "cpu") return c10::Device(c10::kCPU);
    if (text.rfind("cuda", 0) == 0) {
        if (!at::hasCUDA()) {
            throw Error("--device " + text +
                        ": this build's LibTorch has no CUDA (or no GPU is visible); use --device cpu");
        }
        try {
            return c10::Device(text);
        } catch (const std::exception&) {
            throw Error("--device '" + text + "' is not cpu, cuda or cuda:N");
        }
    }
    throw Error("--device '" + text + "' is not cpu, cuda or cuda:N");
}

}  // namespace kvlens
