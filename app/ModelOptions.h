// The flags every model-running command shares (--model, --dtype, --device,
// --threads, --sliding-window) and loading the model they name, with progress
// on stderr.
#pragma once

#include <functional>
#include <set>
#include <string>

#include "app/CommandLine.h"
#include "engine/compress/Capture.h"
#include "engine/model/ModelLoader.h"

namespace kvlens {

struct ModelOptions {
    std::string model;
    c10::Device device = c10::Device(c10::kCPU);
    c10::ScalarType dtype = c10::kFloat;
    int threads = 0;
    // --sliding-window apply (the model's window: applied by a full-cache generation,
    // refused past by the compression methods) or ignore (attend over the whole
    // sequence, as llama.cpp runs Mistral).
    bool ignoreSlidingWindow = false;

    static const std::set<std::string>& flags();
    // Applies --threads to LibTorch as a side effect.
    static ModelOptions fromCommandLine(const CommandLine& args);
    LoadedModel load() const;
};

// Tokenizes `prompt` and prefills it into a capture for the compression
// methods, with a progress bar on stderr. Checks first that `newTokens` more
// fit in the model's context, so a too-long request fails before the prefill.
// `fullQueryHeads`: (layer, query head) pairs whose queries the capture keeps
// for every prompt position (full attention maps). `parseSpecial`: control
// tokens' texts in the prompt are those tokens (--special, --chat).
std::shared_ptr<Capture> capturePrompt(LoadedModel& loaded, const std::string& prompt, bool addBos,
                                       int64_t newTokens,
                                       const std::vector<std::pair<int64_t, int64_t>>& fullQueryHeads = {},
                                       bool parseSpecial = false);
// The same for token ids already encoded. `progress`, when given, hears the prefill's
// progress instead of a bar of its own (a sweep's one bar over its samples).
std::shared_ptr<Capture> captureTokens(LoadedModel& loaded, const std::vector<int32_t>& ids, int64_t newTokens,
                                       const std::vector<std::pair<int64_t, int64_t>>& fullQueryHeads = {},
                                       const std::function<void(double, const std::string&)>& progress = {});

// Computes what `method` alone needs of `capture` before its first selection
// (H2O's accumulated attention, the non-causal attention of Compactor and its kin: a
// replay of the prompt), with a progress bar.
void prepareMethod(LoadedModel& loaded, const Capture& capture, const PressParams& params);

// The bytes of the file `flag` names; throws kvlens::Error "FLAG PATH: cannot read: ..."
// or "FLAG PATH: the WHAT is empty".
std::string readFlagFile(const CommandLine& args, const std::string& flag, const std::string& what);

// --prompt TEXT or --prompt-file PATH; throws kvlens::Error for a missing,
// unreadable or empty prompt, naming the flag.
std::string readPrompt(const CommandLine& args);

}  // namespace kvlens
