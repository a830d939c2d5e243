// Turns a model spec (GGUF path, Hugging Face folder or random preset) into a ready model and its
// tokenizer on the chosen device and dtype.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "engine/model/DType.h"
#include "engine/model/LlamaModel.h"
#include "engine/model/ModelSpec.h"
#include "engine/tokenizer/Tokenizer.h"

namespace kvlens {

struct LoadedModel {
    ModelSpec spec;
    std::unique_ptr<Tokenizer> tokenizer;
    std::unique_ptr<LlamaModel> model;
    std::optional<std::string> chatTemplate;  // the file's tokenizer.chat_template, when it has one
};

// Throws kvlens::Error naming the file, key or tensor when the model cannot be
// loaded, and before loading when its weights would not fit in free memory.
LoadedModel loadModel(const std::string& specText, c10::Device device, c10::ScalarType dtype,
                      const ProgressFn& progress = {});

// The tokenizer alone, without reading any weights.
std::unique_ptr<Tokenizer> loadTokenizer(const std::string& specText);

// The chat template a model file or folder carries (GGUF's tokenizer.chat_template,
// a folder's tokenizer_config.json chat_template), without reading any weights.
std::optional<std::string> loadChatTemplate(const std::string& specText);

// Bytes of memory currently available to this process (MemAvailable), or -1.
int64_t availableMemoryBytes();

}  // namespace kvlens
