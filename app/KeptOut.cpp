#include "app/KeptOut.h"

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "app/CommandLine.h"
#include "app/PressOptions.h"
#include "core/Error.h"
#include "core/ParamsJson.h"

namespace kvlens {

nlohmann::json keptJson(const Selection& s) {
    return {{"heads_are", s.gqa == GqaMode::KvHead ? "kv" : "query"},
            {"layer_budgets", s.layerBudgets},
            {"kept", s.kept}};
}

std::unique_ptr<KeptOut> KeptOut::fromCommandLine(const CommandLine& args) {
    if (!args.has("--kept-out")) return nullptr;
    const std::string path = args.get("--kept-out");
    if (path.empty()) throw Error("--kept-out: the file name is empty");
    std::unique_ptr<KeptOut> out(new KeptOut(path));
    out->doc_ = {{"model", nullptr}, {"prompt_ids", nlohmann::json::array()}, {"runs", nlohmann::json::array()}};
    // A folder that is not there, or not writable, fails before the model loads; a file
    // already at the path is left as it is until the first run replaces it.
    const std::string probe = path + ".part";
    std::ofstream f(probe, std::ios::binary | std::ios::trunc);
    if (!f) throw Error("--kept-out " + path + ": cannot write");
    f.close();
    std::remove(probe.c_str());
    return out;
}

void KeptOut::begin(const std::string& model, const std::vector<int32_t>& promptIds) {
    doc_["model"] = model;
    doc_["prompt_ids"] = promptIds;
}

void KeptOut::add(const PressParams& p, const Selection& selection, const RunMetrics& m) {
    nlohmann::json run = {{"method", p.method},
                          {"params", p.describe()},
                          {"knobs", methods::knobsJson(p)},
                          {"budget", budgetLabel(p)},
                          {"kv_ratio", m.ratio},
                          {"token_agreement", m.tokenAgreement},
                          {"mean_kl", m.meanKl}};
    run.update(keptJson(selection));
    doc_["runs"].push_back(std::move(run));
    write();
}

void KeptOut::write() const {
    const std::string part = path_ + ".part";
    {
        std::ofstream f(part, std::ios::binary | std::ios::trunc);
        f << doc_.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
        f.close();
        if (!f) {
            std::remove(part.c_str());
            throw Error("--kept-out " + path_ + ": cannot write");
        }
    }
    std::error_code ec;
    std::filesystem::rename(part, path_, ec);
    if (ec) {
        std::remove(part.c_str());
        throw Error("--kept-out " + path_ + ": cannot write (" + ec.message() + ")");
    }
}

}  // namespace kvlens
