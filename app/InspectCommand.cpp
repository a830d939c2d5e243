// kvlens inspect: one prefill, then the pictures of what a method keeps and
// why: the attention funnel, the kept positions, full attention maps of chosen
// heads, hit rates and overlaps of every method at the same budget, and the KV
// memory per layer, written as SVG/PNG with a CSV beside each chart.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <sstream>
#include <system_error>

#include "app/ChatOptions.h"
#include "app/CommandLine.h"
#include "app/Commands.h"
#include "app/InspectData.h"
#include "app/InspectFigures.h"
#include "app/ModelOptions.h"
#include "app/PressOptions.h"
#include "app/ProgressBar.h"
#include "core/Error.h"
#include "core/SelectionOverlap.h"
#include "engine/analysis/AttentionMap.h"
#include "engine/analysis/AttentionStats.h"
#include "engine/analysis/HitRate.h"
#include "engine/compress/Capture.h"
#include "engine/compress/presses/Press.h"

namespace kvlens {
namespace {

// "0:0,11:3" -> {(0, 0), (11, 3)}.
std::vector<std::pair<int64_t, int64_t>> parseHeads(const std::string& text) {
    std::vector<std::pair<int64_t, int64_t>> heads;
    std::stringstream in(text);
    std::string item;
    if (!text.empty() && text.back() == ',') throw Error("--heads '" + text + "' has an empty item");
    while (std::getline(in, item, ',')) {
        if (item.empty()) throw Error("--heads '" + text + "' has an empty item");
        const size_t colon = item.find(':');
        size_t usedLayer = 0, usedHead = 0;
        long long layer = -1, head = -1;
        try {
            if (colon == std::string::npos) throw std::invalid_argument("no colon");
            const std::string l = item.substr(0, colon), h = item.substr(colon + 1);
            layer = std::stoll(l, &usedLayer);
            head = std::stoll(h, &usedHead);
            if (usedLayer != l.size() || usedHead != h.size() || layer < 0 || head < 0) throw std::invalid_argument("");
        } catch (const std::exception&) {
            throw Error("--heads: '" + item + "' is not LAYER:HEAD (e.g. --heads 0:0,11:3)");
        }
        heads.push_back({layer, head});
    }
    if (heads.empty()) throw Error("--heads is empty (give LAYER:HEAD pairs, e.g. 0:0,11:3)");
    std::sort(heads.begin(), heads.end());
    heads.erase(std::unique(heads.begin(), heads.end()), heads.end());
    return heads;
}

void makeOutputDir(const std::string& dir) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec || !std::filesystem::is_directory(dir)) {
        throw Error("--out " + dir + ": cannot create the folder" + (ec ? ": " + ec.message() : ""));
    }
    // Fail now, not after a prefill of minutes, when the folder is not writable.
    const std::string probe = (std::filesystem::path(dir) / ".kvlens-write-test").string();
    std::FILE* f = std::fopen(probe.c_str(), "wb");
    if (!f) throw Error("--out " + dir + ": the folder is not writable");
    std::fclose(f);
    std::filesystem::remove(probe, ec);
}

}  // namespace

int runInspect(const std::vector<std::string>& argv) {
    std::set<std::string> valueFlags = ModelOptions::flags();
    valueFlags.insert(PressOptions::flags().begin(), PressOptions::flags().end());
    valueFlags.insert({"--prompt", "--prompt-file", "-n", "--out", "--heads", "--hit-k", "--system"});
    CommandLine args("inspect", argv, valueFlags, {"--no-bos", "--special", "--chat", "--help"});
    if (args.has("--help")) {
        std::fputs(
            "usage: kvlens inspect [--model M] (--prompt TEXT | --prompt-file F) --method M --budget B\n"
            "       --out DIR [--heads L:H,...] [-n N] [--hit-k K] [method flags as for run]\n"
            "       [--special] [--chat [--system T]]\n"
            "  writes into DIR: funnel.svg, selection_L<l>.png for each layer and selection_overview.png,\n"
            "  attention_L<l>_H<h>.png for each --heads pair (default: head 0 of the first, middle and\n"
            "  last layers), hitrate.svg (every method at the budget, over N decode steps (default 16)\n"
            "  and each query head's top K prompt positions (default 16)), overlap.svg, memory.svg,\n"
            "  and a CSV beside each chart\n",
            stdout);
        return 0;
    }
    if (!args.has("--out")) throw Error("--out DIR is required (the folder for the pictures)");
    // Even for full: the other methods are compared at this budget.
    PressParams params = PressOptions::fromCommandLine(args);  // a bad flag is named before a missing budget
    if (!PressOptions::hasBudget(args)) {
        throw Error("--budget is required (entries per head, e.g. 128, or a share, e.g. 25%, or --compression-ratio "
                    "r; every method is compared at it)");
    }
    params.validateSettings();
    const int64_t n = args.getInt("-n", 16, 1, 1 << 20);
    const int64_t hitK = args.getInt("--hit-k", 16, 1, std::numeric_limits<int32_t>::max());
    std::vector<std::pair<int64_t, int64_t>> heads;
    if (args.has("--heads")) heads = parseHeads(args.get("--heads"));
    const std::string dir = args.get("--out");
    makeOutputDir(dir);
    const ModelOptions modelOptions = ModelOptions::fromCommandLine(args);
    const ChatPrompt chat = ChatOptions::apply(args, modelOptions.model, readPrompt(args));
    const std::string& prompt = chat.text;  // what is tokenized
    LoadedModel loaded = modelOptions.load();
    const ModelConfig& config = loaded.model->config();
    if (heads.empty()) {
        for (int64_t l : {int64_t(0), config.nLayers / 2, config.nLayers - 1}) {
            if (heads.empty() || heads.back().first != l) heads.push_back({l, 0});
        }
    }
    // Settings that depend on the prompt's length fail before its prefill.
    const std::vector<int32_t> ids = loaded.tokenizer->encode(
        prompt, !args.has("--no-bos") && loaded.tokenizer->addBosByDefault(), chat.parseSpecial);
    const int64_t promptTokens = static_cast<int64_t>(ids.size());
    if (hitK > promptTokens) {
        throw Error("--hit-k " + std::to_string(hitK) + " must be between 1 and the prompt's " +
                    std::to_string(promptTokens) + " tokens");
    }
    params.validate(promptTokens, Capture::windowCapacityFor(promptTokens));
    auto capture = captureTokens(loaded, ids, n, heads);

    InspectData data;
    data.model = modelOptions.model;
    data.methodLabel = params.describe();
    data.promptLength = capture->promptLength();
    data.layers = capture->layers();
    data.queryHeads = capture->queryHeads();
    data.kvHeads = capture->kvHeads();
    data.headDim = capture->headDim();
    data.elementBytes = capture->keys(0).element_size();
    for (int64_t l = 0; l < capture->layers(); ++l) data.fullBytesPerLayer.push_back(capture->fullCacheBytes(l));
    data.hitSteps = n;
    data.hitK = hitK;
    {
        ProgressBar bar("attention statistics");
        data.stats = AttentionStats::fromCapture(*capture, [&](double f, const std::string& w) { bar.update(f, w); });
        bar.finish();
    }

    // The chosen method, then every other one at the same budget where its
    // settings allow (a budget at or below the window skips the window methods).
    std::vector<PressParams> runs = {params};
    for (const std::string& method : PressParams::methodNames()) {
        if (method == params.method || methods::named(method).id == MethodId::Full) continue;
        PressParams p = params;
        p.method = method;
        if (!p.takesScorer()) p.scorer.clear();
        if (!p.reads(Knob::LayerWeights)) p.layerWeights.clear();
        try {
            p.validate(capture->promptLength(), capture->windowCapacity());
            Press::requireModelSupport(*capture, p);  // a sliding window, Gemma's soft-cap or local RoPE
        } catch (const Error& e) {
            std::fprintf(stderr, "kvlens: note: %s left out of the comparisons: %s\n", method.c_str(), e.what());
            continue;
        }
        runs.push_back(p);
    }
    std::unique_ptr<HitRate> hitRate;
    {
        ProgressBar bar("hit rate: " + std::to_string(n) + " decode steps");
        hitRate = std::make_unique<HitRate>(*loaded.model, capture, n, hitK,
                                            [&](double f, const std::string& w) { bar.update(f, w); });
        bar.finish();
    }
    for (const PressParams& p : runs) {
        InspectData::MethodResult r;
        r.params = p;
        prepareMethod(loaded, *capture, p);
        r.selection = Press::create(p.method)->select(*capture, p);
        r.hitRate = hitRate->of(r.selection, params.window);  // one window for every method
        r.overlap = SelectionOverlap::jaccardPerLayer(data.methods.empty() ? r.selection : data.chosen().selection,
                                                      r.selection);
        data.methods.push_back(std::move(r));
    }

    for (const auto& [layer, head] : heads) {
        const int64_t T = capture->promptLength();
        InspectData::Map map{layer, head, viz::TilePyramid(T, T, viz::TilePyramid::baseTileFor(T, T, 2048))};
        ProgressBar bar("attention map L" + std::to_string(layer) + " H" + std::to_string(head));
        AttentionMap::streamRows(
            *capture, layer, head, 256,
            [&](int64_t r0, int64_t rows, const float* p) { map.pyramid.addRows(r0, rows, p); },
            [&](double f, const std::string& w) { bar.update(f, w); });
        map.pyramid.finish();
        bar.finish();
        data.maps.push_back(std::move(map));
    }

    const InspectFigures figures(data, dir);
    std::vector<std::string> written;
    for (auto write : {&InspectFigures::writeFunnel, &InspectFigures::writeSelection, &InspectFigures::writeAttention,
                       &InspectFigures::writeHitRate, &InspectFigures::writeOverlap, &InspectFigures::writeMemory}) {
        for (std::string& f : (figures.*write)()) written.push_back(std::move(f));
    }
    std::printf("%s, %s\n", data.methodLabel.c_str(), data.context().c_str());
    std::printf("hit rate (top %lld of %lld steps), mean over layers:\n", (long long)hitK, (long long)n);
    for (const InspectData::MethodResult& r : data.methods) {
        std::printf("  %-13s %6.1f%%  outside the window %6.1f%%\n", r.params.method.c_str(), 100.0 * r.hitRate.mean,
                    100.0 * r.hitRate.meanOutsideWindow);
    }
    std::printf("wrote %zu files to %s\n", written.size(), dir.c_str());
    return 0;
}

}  // namespace kvlens
