#include "app/SessionRows.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <algorithm>
#include <map>
#include <vector>

#include "app/KeptOut.h"
#include "core/Error.h"
#include "core/Methods.h"
#include "core/ParamsJson.h"
#include "sessions/SessionStore.h"
#include "sessions/TemporaryFiles.h"

namespace kvlens {

namespace {

using nlohmann::json;

json real(double v) { return std::isnan(v) ? json(nullptr) : json(v); }

// A CSV cell: JSON's text of a number, a string as it is, an object or array as JSON.
std::string cell(const json& v) {
    if (v.is_null()) return "";
    return csvCell(v.is_string() ? v.get<std::string>() : v.dump(-1, ' ', false, json::error_handler_t::replace));
}

}  // namespace

std::string csvCell(const std::string& text) {
    // Bytes that are not UTF-8 become U+FFFD, as in the JSONL export.
    const std::string t = json::parse(json(text).dump(-1, ' ', false, json::error_handler_t::replace)).get<std::string>();
    if (t.find_first_of(",\"\n\r") == std::string::npos) return t;
    std::string q = "\"";
    for (char c : t) q += c == '"' ? std::string("\"\"") : std::string(1, c);
    return q + "\"";
}

json runJson(const sessions::RunSummary& r) {
    return {{"id", r.id},
            {"prompt_id", r.promptId},
            {"method", r.params.method},
            {"budget", r.params.budget},
            {"budget_ratio", r.params.budgetRatio},
            {"convention", conventionName(r.params.convention)},
            {"window", r.params.window},
            {"params", r.params.describe()},
            {"knobs", methods::knobsJson(r.params)},
            {"status", r.status},
            {"new_tokens", r.newTokens},
            {"kv_bytes", r.bytes},
            {"kv_bytes_full", r.fullBytes},
            {"kv_ratio", real(r.ratio)},
            {"agreed_prefix", r.agreedPrefix},
            {"token_agreement", real(r.tokenAgreement)},
            {"mean_kl", real(r.meanKl)},
            {"top1_agreement", real(r.top1Agreement)},
            {"hit_rate", real(r.hitRate)},
            {"decode_every", r.decodeEvery},
            {"created_ms", r.createdMs}};
}

json niahRunJson(const sessions::NiahRunRecord& r) {
    return {{"id", r.id},
            {"model_id", r.modelId},
            {"task", r.task},
            {"task_seed", r.taskSeed},
            {"length", r.length},
            {"tokens", r.tokens},
            {"depth", r.depth},
            {"sample", r.sample},
            {"question_after", r.questionAfter},
            {"new_tokens", r.newTokens},
            {"method", r.method},
            {"budget", r.budget},
            {"params", r.params},
            {"contains", real(r.contains)},
            {"exact", real(r.exact)},
            {"needle_kept", real(r.needleKept)},
            {"agreement", real(r.agreement)},
            {"mean_kl", real(r.meanKl)},
            {"answer", r.answer},
            {"expected", r.expected},
            {"created_ms", r.createdMs}};
}

json evalRunJson(const sessions::EvalRunRecord& r) {
    return {{"id", r.id},
            {"model_id", r.modelId},
            {"source", r.source},
            {"source_name", r.sourceName},
            {"record", r.record},
            {"dataset", r.dataset},
            {"metric", r.metric},
            {"tokens", r.tokens},
            {"question_after", r.questionAfter},
            {"new_tokens", r.newTokens},
            {"method", r.method},
            {"budget", r.budget},
            {"params", r.params},
            {"score", real(r.score)},
            {"agreement", real(r.agreement)},
            {"mean_kl", real(r.meanKl)},
            {"answer", r.answer},
            {"expected", r.expected},
            {"created_ms", r.createdMs}};
}

SessionRows::Format SessionRows::parseFormat(const std::string& text) {
    if (text == "jsonl") return Format::Jsonl;
    if (text == "csv") return Format::Csv;
    throw Error("--format: '" + text + "' is not jsonl or csv");
}

int64_t SessionRows::write(sessions::SessionStore& store, const std::string& name, const std::string& path,
                           Format format, bool kept) {
    const sessions::SessionInfo info = store.session(name);
    std::map<int64_t, sessions::ModelRecord> models;
    for (const auto& m : store.models(info.id)) models[m.id] = m;
    std::map<int64_t, sessions::PromptRecord> prompts;
    for (const auto& p : store.prompts(info.id)) prompts[p.id] = p;
    auto withModel = [&](json row, int64_t modelId) {
        const auto m = models.find(modelId);
        row["model"] = m == models.end() ? json(nullptr) : json(m->second.spec);
        row["model_path"] = m == models.end() ? json(nullptr) : json(m->second.path);
        row["model_sha256"] = m == models.end() ? json(nullptr) : json(m->second.sha256);
        return row;
    };
    std::vector<json> rows;
    for (const auto& r : store.runs(info.id)) {
        json row = {{"kind", "run"}, {"session", info.name}};
        row.update(runJson(r));
        const auto p = prompts.find(r.promptId);
        row = withModel(std::move(row), p == prompts.end() ? -1 : p->second.modelId);
        row["prompt_tokens"] = r.promptTokens;
        if (kept) {
            const sessions::RunRecord full = store.run(r.id);
            row.update(keptJson(full.selection));
            row["prompt_ids"] = p == prompts.end() ? json(nullptr) : json(p->second.tokenIds);
        }
        rows.push_back(std::move(row));
    }
    for (const auto& r : store.niahRuns(info.id)) {
        json row = {{"kind", "niah"}, {"session", info.name}};
        row.update(niahRunJson(r));
        rows.push_back(withModel(std::move(row), r.modelId));
    }
    for (const auto& r : store.evalRuns(info.id)) {
        json row = {{"kind", "eval"}, {"session", info.name}};
        row.update(evalRunJson(r));
        rows.push_back(withModel(std::move(row), r.modelId));
    }

    std::string text;
    if (format == Format::Jsonl) {
        for (const json& row : rows) text += row.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
    } else {
        // The union of the rows' keys, in first-seen order; a key a row lacks is an empty cell.
        std::vector<std::string> columns;
        for (const json& row : rows)
            for (const auto& [key, value] : row.items())
                if (std::find(columns.begin(), columns.end(), key) == columns.end()) columns.push_back(key);
        for (size_t i = 0; i < columns.size(); ++i) text += (i ? "," : "") + columns[i];
        if (!columns.empty()) text += "\n";
        for (const json& row : rows) {
            for (size_t i = 0; i < columns.size(); ++i)
                text += (i ? "," : "") + (row.contains(columns[i]) ? cell(row[columns[i]]) : std::string());
            text += "\n";
        }
    }
    if (path == "-") {
        std::fwrite(text.data(), 1, text.size(), stdout);
        std::fflush(stdout);
        return int64_t(rows.size());
    }
    const std::string part = path + ".part";
    {
        std::ofstream f(part, std::ios::binary | std::ios::trunc);
        f << text;
        f.close();
        if (!f) {
            sessions::TemporaryFiles::remove(part);
            throw Error(path + ": cannot write the export");
        }
    }
    std::error_code ec;
    std::filesystem::rename(part, path, ec);
    if (ec) {
        sessions::TemporaryFiles::remove(part);
        throw Error(path + ": cannot write the export (" + ec.message() + ")");
    }
    return int64_t(rows.size());
}

}  // namespace kvlens
