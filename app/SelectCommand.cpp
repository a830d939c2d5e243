// kvlens select: run a compression method on dumped per-layer tensors
// (kvref-inputs-v1 files) and print the positions each head keeps.
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <numeric>

#include "app/CommandLine.h"
#include "app/HelpText.h"
#include "app/Commands.h"
#include "app/PressOptions.h"
#include "engine/compress/Capture.h"
#include "core/Error.h"
#include "core/ParamsJson.h"
#include "engine/compress/presses/Press.h"

namespace kvlens {
namespace {

using nlohmann::json;

const char* kSchema = "kvref-inputs-v1";

std::string shapeText(const std::vector<int64_t>& shape) {
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + "]";
}

std::string indexText(const std::vector<int64_t>& index) {
    std::string s;
    for (int64_t i : index) s += "[" + std::to_string(i) + "]";
    return s;
}

// One rectangular `rank`-D array of numbers from `doc[field]`, as fp32.
class FieldReader {
public:
    FieldReader(const std::string& path, const json& doc) : path_(path), doc_(doc) {}

    at::Tensor read(const char* field, int64_t rank) {
        field_ = field;
        auto it = doc_.find(field);
        if (it == doc_.end()) fail("missing field '" + field_ + "'");
        shape_.clear();
        for (const json* node = &*it; int64_t(shape_.size()) < rank; node = &(*node)[0]) {
            if (!node->is_array() || node->empty()) {
                fail("field '" + field_ + "' is not a " + std::to_string(rank) +
                     "-D array of numbers");
            }
            shape_.push_back(int64_t(node->size()));
        }
        values_.clear();
        values_.reserve(size_t(
            std::accumulate(shape_.begin(), shape_.end(), int64_t(1), std::multiplies<int64_t>())));
        index_.clear();
        flatten(*it, 0);
        return at::tensor(values_, at::kFloat).reshape(shape_);
    }

    [[noreturn]] void fail(const std::string& what) const { throw Error(path_ + ": " + what); }

private:
    void flatten(const json& node, size_t dim) {
        if (dim == shape_.size()) {
            if (!node.is_number()) {
                fail("field '" + field_ + "' holds a non-number at " + indexText(index_));
            }
            const double v = node.get<double>();
            if (!std::isfinite(v) || std::abs(v) > 3.0e38) {
                fail("field '" + field_ + "' holds a value that is not a finite float at " +
                     indexText(index_));
            }
            values_.push_back(static_cast<float>(v));
            return;
        }
        if (!node.is_array() || int64_t(node.size()) != shape_[dim]) {
            fail("field '" + field_ + "' is not rectangular: " + indexText(index_) +
                 " should hold " + std::to_string(shape_[dim]) + " entries for shape " +
                 shapeText(shape_));
        }
        index_.push_back(0);
        for (const json& child : node) {
            flatten(child, dim + 1);
            ++index_.back();
        }
        index_.pop_back();
    }

    const std::string& path_;
    const json& doc_;
    std::string field_;
    std::vector<int64_t> shape_, index_;
    std::vector<float> values_;
};

struct LayerInputs {
    at::Tensor windowQueries, keys, values;  // [H, W, D], [KV, T, D], [KV, T, D]
    at::Tensor outputProjection;             // W_o [E, H x D], where the file gives o_proj
};

LayerInputs readLayer(const std::string& path, int64_t layer) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error("--inputs " + path + ": cannot read: " + std::strerror(errno));
    json doc;
    try {
        doc = json::parse(in);
    } catch (const json::parse_error& e) {
        throw Error(path + ": not JSON: " + e.what());
    }
    FieldReader reader(path, doc);
    if (!doc.is_object()) reader.fail("not a JSON object of schema " + std::string(kSchema));
    auto schema = doc.find("schema");
    if (schema == doc.end()) {
        reader.fail("missing field 'schema' (want " + std::string(kSchema) + ")");
    }
    if (*schema != kSchema) {
        reader.fail("field 'schema' is " + schema->dump() + ", not \"" + kSchema + "\"");
    }
    // Files name their layer: a wrong order or a missing first layer would silently change
    // PyramidKV's per-layer budgets, which depend on the layer index.
    auto named = doc.find("layer");
    if (named != doc.end() && named->is_number_integer() && named->get<int64_t>() != layer) {
        reader.fail("field 'layer' is " + named->dump() + " but the file is input " +
                    std::to_string(layer) + " (give the files in layer order)");
    }
    LayerInputs l;
    l.windowQueries = reader.read("q_window", 3);
    l.keys = reader.read("keys", 3);
    l.values = reader.read("values", 3);
    if (!l.values.sizes().equals(l.keys.sizes())) {
        reader.fail("field 'values' has shape " + shapeText(l.values.sizes().vec()) +
                    " but 'keys' has " + shapeText(l.keys.sizes().vec()));
    }
    const int64_t H = l.windowQueries.size(0), W = l.windowQueries.size(1);
    const int64_t KV = l.keys.size(0), T = l.keys.size(1), D = l.keys.size(2);
    if (l.windowQueries.size(2) != D) {
        reader.fail("field 'q_window' has head dim " + std::to_string(l.windowQueries.size(2)) +
                    " but 'keys' has " + std::to_string(D));
    }
    if (H % KV != 0) {
        reader.fail("field 'q_window' has " + std::to_string(H) +
                    " query heads, not a multiple of the " + std::to_string(KV) +
                    " KV heads in 'keys'");
    }
    if (W > T) {
        reader.fail("field 'q_window' holds " + std::to_string(W) + " queries but 'keys' only " +
                    std::to_string(T) + " positions");
    }
    if (doc.contains("o_proj")) {
        l.outputProjection = reader.read("o_proj", 2);
        if (l.outputProjection.size(1) != H * D) {
            reader.fail("field 'o_proj' has " + std::to_string(l.outputProjection.size(1)) +
                        " columns, not the " + std::to_string(H * D) + " of 'q_window''s heads x head dim");
        }
    }
    return l;
}

std::vector<LayerInputs> readInputs(const std::vector<std::string>& paths) {
    std::vector<LayerInputs> layers;
    for (size_t l = 0; l < paths.size(); ++l) {
        layers.push_back(readLayer(paths[l], int64_t(l)));
        const LayerInputs &first = layers.front(), &now = layers.back();
        const std::pair<const char*, std::pair<at::Tensor, at::Tensor>> fields[] = {
            {"q_window", {now.windowQueries, first.windowQueries}},
            {"keys", {now.keys, first.keys}},
            {"values", {now.values, first.values}}};
        if (now.outputProjection.defined() != first.outputProjection.defined()) {
            throw Error(paths[l] + ": field 'o_proj' is " + (now.outputProjection.defined() ? "given" : "missing") +
                        " but " + paths[0] + " (layer 0) " + (first.outputProjection.defined() ? "gives" : "lacks") +
                        " it (every layer or none)");
        }
        for (const auto& [name, tensors] : fields) {
            if (!tensors.first.sizes().equals(tensors.second.sizes())) {
                throw Error(paths[l] + ": field '" + name + "' has shape " +
                            shapeText(tensors.first.sizes().vec()) + " but " + paths[0] +
                            " (layer 0) has " + shapeText(tensors.second.sizes().vec()));
            }
        }
    }
    return layers;
}

// Whether a method selects on tensors alone: it needs nothing the model must compute again
// (W_o's value norms come from the files' o_proj).
bool selectsOnTensors(const MethodInfo& m) {
    const NeedSet modelNeeds = {Need::QueryStats, Need::PromptReplay, Need::PreRopeKeys,
                                Need::Reconstruction, Need::SecondPrefill};
    for (int n = 0; n < int(Need::Count_); ++n)
        if (m.needs.has(Need(n)) && modelNeeds.has(Need(n))) return false;
    return true;
}

// How a knob's value is written in a usage line.
std::string metavar(const KnobInfo& k) {
    switch (k.type) {
        case KnobType::Int: return "N";
        case KnobType::Real: return "X";
        case KnobType::Seed: return "S";
        case KnobType::Word: return k.words;
        case KnobType::Name: return "S";
        case KnobType::Reals: return "W,W,...";
    }
    return "V";
}

// The flags and method lists from the method and knob tables.
std::string selectHelp() {
    std::string usage = "usage: kvlens select --inputs FILE... --method M (--budget\x01" "B\x01|\x01--compression-ratio\x01" "R)";
    std::string defaults = "  defaults: --window the W of the inputs";
    for (const KnobInfo& k : methods::knobs()) {
        usage += std::string(" [") + k.flag + "\x01" + metavar(k) + "]";  // \x01: one item, folded whole
        if (k.knob != Knob::Window) defaults += std::string(", ") + k.flag + " " + k.defaultText;
    }
    std::string folded = foldedHelp(usage + " [--json]", 7);
    std::replace(folded.begin(), folded.end(), '\x01', ' ');
    return folded +
           "  runs a compression method on dumped tensors: one kvref-inputs-v1 JSON file per layer,\n"
           "  in layer order (q_window [H][W][D] after RoPE, keys and values [KV][T][D]; o_proj\n"
           "  [E][H*D], the layer's W_o, for criticalkv and criticaladakv).\n" +
           foldedHelp("  --method   " + methods::listWhere(selectsOnTensors, " or ") +
                          " (finch-kvpress: its votes; its re-rotated cache needs a model); " +
                          methods::listWhere([](const MethodInfo& m) { return !selectsOnTensors(m); }) +
                          " need a model: use kvlens run",
                      13) +
           foldedHelp("  --scorer   what " + methods::listWhere([](const MethodInfo& m) { return m.takesScorer; }) +
                          " rank by: " +
                          methods::listWhere([](const MethodInfo& m) { return m.usableAsScorer && selectsOnTensors(m); },
                                             " or "),
                      13) +
           "  --budget   entries kept per head, window included, or a share of the prompt: 12.5%\n"
           "  --compression-ratio R: kvpress's form, int(T x (1 - R)) kept (with --convention kvpress)\n" +
           foldedHelp(defaults + " (kvlens methods: what each reads)", 4) +
           "  --json     {\"layers\": [{\"layer\", \"heads\": [[kept positions]], with --think\n"
           "             \"pruned_channels\": [[channels]]}], \"layer_budgets\",\n"
           "             \"params\"}; otherwise a summary per layer and head.\n";
}

}  // namespace

int runSelect(const std::vector<std::string>& argv) {
    // CommandLine takes one value per flag; --inputs takes every path up to the next flag.
    std::vector<std::string> inputs, rest;
    bool sawInputs = false;
    for (size_t i = 0; i < argv.size(); ++i) {
        if (argv[i] == "--inputs") {
            sawInputs = true;
            while (i + 1 < argv.size() && argv[i + 1].rfind("--", 0) != 0)
                inputs.push_back(argv[++i]);
        } else if (argv[i].rfind("--inputs=", 0) == 0) {
            sawInputs = true;
            inputs.push_back(argv[i].substr(9));
        } else {
            rest.push_back(argv[i]);
        }
    }
    CommandLine args("select", rest, PressOptions::flags(), {"--json", "--help"});
    if (args.has("--help")) {
        std::fputs(selectHelp().c_str(), stdout);
        return 0;
    }
    if (inputs.empty()) {
        throw Error(sawInputs
                        ? "--inputs needs at least one file"
                        : "no inputs: pass --inputs FILE... (one kvref-inputs-v1 file per layer)");
    }
    if (!args.has("--method")) throw Error("no method: pass --method (e.g. snapkv)");

    PressParams p = PressOptions::fromCommandLine(args);
    const std::unique_ptr<Press> press =
        Press::create(p.method);  // unknown names fail before reading
    if (!PressOptions::hasBudget(args) && !p.isFull()) {
        throw Error(
            "no budget: pass --budget N (entries per head, window included) or a share like 12.5%");
    }

    const std::vector<LayerInputs> layers = readInputs(inputs);
    std::vector<at::Tensor> q, k, v, o;
    for (const LayerInputs& l : layers) {
        q.push_back(l.windowQueries);
        k.push_back(l.keys);
        v.push_back(l.values);
        if (l.outputProjection.defined()) o.push_back(l.outputProjection);
    }
    const std::shared_ptr<Capture> capture = Capture::fromTensors(q, k, v, o);
    if (!args.has("--window")) p.window = capture->windowCapacity();
    const Selection s = press->select(*capture, p);

    if (args.has("--json")) {
        json out;
        out["layers"] = json::array();
        for (int64_t l = 0; l < s.layers(); ++l) {
            json layer = {{"layer", l}, {"heads", s.kept[l]}};
            // ThinK: the key channels zeroed per head.
            if (!s.prunedChannels.empty()) layer["pruned_channels"] = s.prunedChannels[l];
            out["layers"].push_back(std::move(layer));
        }
        out["layer_budgets"] = s.layerBudgets;
        // Every knob (methods::paramsJson); the budget as resolved for this prompt, the scorer in effect.
        out["params"] = methods::paramsJson(p);
        out["params"]["budget"] = p.isFull() ? s.promptLength : p.resolveBudget(s.promptLength);
        out["params"]["scorer"] = p.scorerInEffect();
        out["params"]["describe"] = p.describe();
        out["prompt_length"] = s.promptLength;
        out["query_heads"] = s.queryHeads;
        out["kv_heads"] = s.kvHeads;
        std::printf("%s\n", out.dump().c_str());
        return 0;
    }
    std::printf("%s on %lld layers, %lld query heads, %lld KV heads, prompt of %lld tokens\n",
                p.describe().c_str(), (long long)s.layers(), (long long)s.queryHeads,
                (long long)s.kvHeads, (long long)s.promptLength);
    for (int64_t l = 0; l < s.layers(); ++l) {
        std::printf("layer %lld: holds %lld per head, %lld entries\n", (long long)l,
                    (long long)s.layerBudgets[l], (long long)s.entries(l));
        for (size_t h = 0; h < s.kept[l].size(); ++h) {
            const std::vector<int32_t>& kept = s.kept[l][h];
            std::printf("  %s %zu: %zu kept", s.gqa == GqaMode::KvHead ? "kv head" : "head", h,
                        kept.size());
            if (!kept.empty()) std::printf(", positions %d .. %d", kept.front(), kept.back());
            std::printf("\n");
        }
    }
    return 0;
}

}  // namespace kvlens
