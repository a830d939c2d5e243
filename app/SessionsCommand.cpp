// kvlens sessions: list, show, rename, delete, export and import the sessions
// of a store.
#include <sys/stat.h>

#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <map>
#include <set>
#include <tuple>
#include <nlohmann/json.hpp>

#include "app/CommandLine.h"
#include "app/Commands.h"
#include "app/ModelOptions.h"
#include "app/ProgressBar.h"
#include "app/RunSaver.h"
#include "app/SessionRows.h"
#include "engine/model/DType.h"
#include "core/Error.h"
#include "core/ParamsJson.h"
#include "core/RunMetrics.h"
#include "core/Selection.h"
#include "sessions/ModelFile.h"
#include "sessions/SessionExport.h"
#include "sessions/SessionMerge.h"
#include "sessions/SessionStore.h"
#include "sessions/TemporaryFiles.h"


namespace kvlens {

using sessions::SessionStore;

namespace {

std::string formatTime(int64_t ms) {
    const std::time_t seconds = std::time_t(ms / 1000);
    std::tm local{};
    localtime_r(&seconds, &local);
    char text[32];
    std::strftime(text, sizeof text, "%Y-%m-%d %H:%M", &local);
    return text;
}

std::string budgetText(const PressParams& p) {
    if (p.isFull()) return "-";
    if (p.budget > 0) return std::to_string(p.budget);
    char text[32];
    std::snprintf(text, sizeof text, "%g%%", p.budgetRatio * 100);
    return text;
}

std::string oneLine(const std::string& text, size_t max) {
    std::string out;
    for (char c : text) out += (c == '\n' || c == '\r' || c == '\t') ? ' ' : c;
    if (out.size() > max) out = out.substr(0, max - 3) + "...";
    return out;
}

std::string modelLine(const sessions::ModelRecord& m) {
    char shape[160];
    std::snprintf(shape, sizeof shape, "%s, %lld layers, %lld/%lld heads, head dim %lld",
                  m.architecture.c_str(), (long long)m.layers, (long long)m.heads,
                  (long long)m.kvHeads, (long long)m.headDim);
    std::string line = m.spec + " (" + shape + ")";
    if (m.isFile) {
        char size[64];
        std::snprintf(size, sizeof size, "%.1f MB", double(m.sizeBytes) / 1e6);
        line += ", " + std::string(size) + ", SHA-256 " + m.sha256.substr(0, 16) + "...";
        if (!m.files.empty()) {
            line += " over " + std::to_string(m.files.size()) + " weight file" + (m.files.size() == 1 ? "" : "s");
        }
    } else {
        line += ", random weights";
    }
    return line;
}

// "list", "show NAME", ...: the words that are not flags or flag values.
std::vector<std::string> positionals(const std::vector<std::string>& argv,
                                     const std::set<std::string>& valueFlags,
                                     std::vector<std::string>& flags) {
    std::vector<std::string> words;
    for (size_t i = 0; i < argv.size(); ++i) {
        const std::string& a = argv[i];
        if (a.size() > 1 && a[0] == '-') {
            flags.push_back(a);
            if (valueFlags.count(a) && i + 1 < argv.size()) flags.push_back(argv[++i]);
        } else {
            words.push_back(a);
        }
    }
    return words;
}

void expectWords(const std::vector<std::string>& words, size_t count, const std::string& usage) {
    if (words.size() != count) {
        throw Error("kvlens sessions " + words[0] + ": expected " + usage +
                    (words.size() < count ? " (missing an argument)" : " (too many arguments)"));
    }
}

int listSessions(SessionStore& store, bool json) {
    const auto all = store.sessions();
    if (json) {
        nlohmann::json j = nlohmann::json::array();
        for (const auto& s : all) {
            j.push_back({{"name", s.name},
                         {"runs", s.runCount},
                         {"prompts", s.promptCount},
                         {"niah_runs", s.niahRunCount},
                         {"eval_runs", s.evalRunCount},
                         {"created_ms", s.createdMs},
                         {"updated_ms", s.updatedMs},
                         {"notes", s.notes}});
        }
        std::printf("%s\n",
                    j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
        return 0;
    }
    if (all.empty()) {
        std::printf("no sessions in %s\n", store.path().c_str());
        return 0;
    }
    std::printf("%-24s %5s %7s %6s  %-16s  %s\n", "session", "runs", "prompts", "niah", "updated", "notes");
    for (const auto& s : all) {
        std::printf("%-24s %5lld %7lld %6lld  %-16s  %s\n", SessionStore::shownName(s.name).c_str(), (long long)s.runCount,
                    (long long)s.promptCount, (long long)s.niahRunCount, formatTime(s.updatedMs).c_str(),
                    oneLine(s.notes, 40).c_str());
    }
    return 0;
}

// "3 runs", or "3 runs, 225 niah runs" when the session holds needle runs too.
std::string runCounts(int64_t runs, int64_t niahRuns) {
    return std::to_string(runs) + " runs" + (niahRuns > 0 ? ", " + std::to_string(niahRuns) + " niah runs" : "");
}

int showSession(SessionStore& store, const std::string& name, bool json, bool verify) {
    const sessions::SessionInfo info = store.session(name);
    const auto models = store.models(info.id);
    const auto prompts = store.prompts(info.id);
    const auto runs = store.runs(info.id);
    const auto niah = store.niahRuns(info.id);
    const auto evals = store.evalRuns(info.id);
    std::map<int64_t, std::string> modelStatus;
    for (const auto& m : models) {
        ProgressBar bar("checking " + m.path);
        const auto check =
            sessions::ModelFile::check(m, verify, [&](double f) { bar.update(f, ""); });
        bar.finish();
        modelStatus[m.id] = check.status == sessions::ModelFile::Status::NotAFile    ? "random"
                            : check.status == sessions::ModelFile::Status::Unchanged ? "unchanged"
                            : check.status == sessions::ModelFile::Status::Missing   ? "missing"
                                                                                     : "changed";
        if (!check.message.empty()) {
            std::fprintf(stderr, "kvlens: warning: session '%s': %s\n", SessionStore::shownName(info.name).c_str(),
                         check.message.c_str());
        }
    }
    std::map<int64_t, int64_t> promptModel;
    for (const auto& p : prompts) promptModel[p.id] = p.modelId;
    if (json) {
        nlohmann::json j = {{"name", info.name},
                            {"notes", info.notes},
                            {"created_ms", info.createdMs},
                            {"updated_ms", info.updatedMs},
                            {"ui_state", nlohmann::json::parse(info.uiState)}};
        j["models"] = nlohmann::json::array();
        for (const auto& m : models) {
            nlohmann::json files = nlohmann::json::array();
            for (const auto& f : m.files) files.push_back({{"name", f.name}, {"size_bytes", f.sizeBytes}, {"sha256", f.sha256}});
            j["models"].push_back({{"id", m.id},
                                   {"files", files},
                                   {"spec", m.spec},
                                   {"path", m.path},
                                   {"size_bytes", m.sizeBytes},
                                   {"sha256", m.sha256},
                                   {"architecture", m.architecture},
                                   {"layers", m.layers},
                                   {"heads", m.heads},
                                   {"kv_heads", m.kvHeads},
                                   {"status", modelStatus[m.id]}});
        }
        j["prompts"] = nlohmann::json::array();
        for (const auto& p : prompts) {
            j["prompts"].push_back({{"id", p.id},
                                    {"model_id", p.modelId},
                                    {"tokens", p.tokenIds.size()},
                                    {"text", p.text}});
        }
        j["runs"] = nlohmann::json::array();
        for (const auto& r : runs) j["runs"].push_back(runJson(r));
        j["niah_runs"] = nlohmann::json::array();
        for (const auto& r : niah) j["niah_runs"].push_back(niahRunJson(r));
        j["eval_runs"] = nlohmann::json::array();
        for (const auto& r : evals) j["eval_runs"].push_back(evalRunJson(r));
        std::printf("%s\n",
                    j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
        return 0;
    }
    std::printf("session  %s\n", SessionStore::shownName(info.name).c_str());
    std::printf("store    %s\n", store.path().c_str());
    std::printf("created  %s, updated %s\n", formatTime(info.createdMs).c_str(),
                formatTime(info.updatedMs).c_str());
    if (!info.notes.empty()) std::printf("notes    %s\n", oneLine(info.notes, 200).c_str());
    for (const auto& m : models) {
        std::printf("model %lld  %s%s\n", (long long)m.id, modelLine(m).c_str(),
                    modelStatus[m.id] == "missing"   ? "  [MISSING]"
                    : modelStatus[m.id] == "changed" ? "  [CHANGED]"
                                                     : "");
    }
    for (const auto& p : prompts) {
        std::printf("prompt %lld  %zu tokens, model %lld: \"%s\"\n", (long long)p.id,
                    p.tokenIds.size(), (long long)p.modelId, oneLine(p.text, 60).c_str());
    }
    // Needle runs: their means per task, question mode, method and budget (kvlens report
    // draws them whole).
    if (!niah.empty()) {
        struct Means {
            int64_t runs = 0;
            double contains = 0, kept = 0;
        };
        using Kind = std::tuple<std::string, std::string, std::string>;  // task and mode, method, budget
        std::vector<Kind> order;
        std::map<Kind, Means> means;
        std::set<std::string> seen;  // a run stored twice (NiahRunRecord::key) counts once, as in reports
        for (const auto& r : niah) {
            if (!seen.insert(r.key()).second) continue;
            const Kind kind{r.task + (r.questionAfter ? " after" : " inside"), r.method, r.budget};
            if (!means.count(kind)) order.push_back(kind);
            Means& m = means[kind];
            ++m.runs;
            m.contains += r.contains;
            m.kept += r.needleKept;
        }
        std::printf("\n%zu niah runs (kvlens report --session %s draws them)\n%-28s %-15s %7s %5s %9s %12s\n",
                    niah.size(), SessionStore::shownName(info.name).c_str(), "task, question", "method", "budget", "runs", "contains",
                    "needle kept");
        for (const Kind& kind : order) {
            const Means& m = means[kind];
            const auto& [task, method, budget] = kind;
            std::printf("%-28s %-15s %7s %5lld %8.1f%% %11.1f%%\n", task.c_str(), method.c_str(), budget.c_str(),
                        (long long)m.runs, 100.0 * m.contains / double(m.runs), 100.0 * m.kept / double(m.runs));
        }
    }
    if (!evals.empty()) {
        // The mean score per dataset, method and budget, as kvlens eval prints it.
        using Kind = std::tuple<std::string, std::string, std::string>;
        std::map<Kind, std::pair<double, int64_t>> means;
        std::vector<Kind> order;
        for (const auto& r : evals) {
            const Kind kind{r.dataset.empty() ? "-" : r.dataset, r.method, r.budget};
            if (!means.count(kind)) order.push_back(kind);
            means[kind].first += r.score;
            ++means[kind].second;
        }
        std::printf("\n%zu eval runs (sessions export --format csv for every row)\n%-16s %-15s %7s %5s %8s\n",
                    evals.size(), "dataset", "method", "budget", "runs", "score");
        for (const Kind& kind : order) {
            const auto& [dataset, method, budget] = kind;
            std::printf("%-16s %-15s %7s %5lld %7.1f%%\n", dataset.c_str(), method.c_str(), budget.c_str(),
                        (long long)means[kind].second, 100.0 * means[kind].first / double(means[kind].second));
        }
    }
    if (runs.empty()) {
        std::printf("\nno %sruns\n", niah.empty() && evals.empty() ? "" : "other ");
        return 0;
    }
    std::printf("\n%5s %6s %-13s %7s %4s %10s %7s %10s %9s %10s %7s %6s  %s\n", "run", "prompt",
                "method", "budget", "W", "KV MB", "ratio", "agreed@div", "agreement", "mean KL",
                "top-1", "hit", "saved");
    for (const auto& r : runs) {
        const std::string window = r.params.usesWindow() ? std::to_string(r.params.window) : "-";
        std::printf(
            "%5lld %6lld %-13s %7s %4s %10.4f %6.1f%% %6lld/%-3lld %8.1f%% %10.4g %6.1f%% %5.1f%%  %s%s\n",
            (long long)r.id, (long long)r.promptId, r.params.method.c_str(),
            budgetText(r.params).c_str(), window.c_str(), double(r.bytes) / 1e6, 100.0 * r.ratio,
            (long long)r.agreedPrefix, (long long)r.newTokens, 100.0 * r.tokenAgreement, r.meanKl,
            100.0 * r.top1Agreement, 100.0 * r.hitRate, formatTime(r.createdMs).c_str(),
            r.status == "complete" ? "" : ("  " + r.status).c_str());
        if (r.decodeEvery > 0) std::printf("%5s compressed every %lld decode steps\n", "", (long long)r.decodeEvery);
    }
    return 0;
}

const char* kSessionsUsage =
    "usage: kvlens sessions <command> [--store PATH]\n"
    "  list                           the sessions, with their runs and prompts\n"
    "  show NAME [--verify] [--json]  a session's models, prompts and runs; warns when a\n"
    "                                 model file is missing or changed (--verify: re-hash it)\n"
    "  rename OLD NEW                 rename a session\n"
    "  delete NAME                    delete a session with its prompts and runs\n"
    "  export NAME FILE               write one session to FILE, a new single-file store\n"
    "  export NAME FILE --format jsonl|csv [--kept]\n"
    "                                 its runs and niah runs as rows for Python (FILE - : stdout):\n"
    "                                 parameters, knobs, metrics, answers, the model; --kept adds\n"
    "                                 each run's kept positions [layer][head] and prompt ids\n"
    "  import FILE [--session NAME] [--as NEW]\n"
    "                                 copy a session of an exported (or any) store into this one\n"
    "  merge A.db B.db ... --into C.db  join stores (e.g. a sweep's shards): sessions of one\n"
    "                                 name become one, every run copied once\n"
    "  --store: default $XDG_DATA_HOME/kvlens/sessions.db, else "
    "~/.local/share/kvlens/sessions.db\n";

}  // namespace

int runSessions(const std::vector<std::string>& argv) {
    const std::set<std::string> valueFlags = {"--store", "--session", "--as", "--into", "--format"};
    std::vector<std::string> flags;
    const std::vector<std::string> words = positionals(argv, valueFlags, flags);
    CommandLine args("sessions", flags, valueFlags, {"--json", "--verify", "--kept", "--help"});
    if (args.has("--help") || words.empty()) {
        std::fputs(kSessionsUsage, words.empty() && !args.has("--help") ? stderr : stdout);
        return args.has("--help") ? 0 : 2;
    }
    const std::string& command = words[0];
    auto refuseFlags = [&](std::initializer_list<const char*> allowed) {
        for (const char* flag : {"--session", "--as", "--json", "--verify", "--into", "--format", "--kept"}) {
            bool ok = false;
            for (const char* a : allowed) ok |= std::string(a) == flag;
            if (!ok && args.has(flag))
                throw Error("kvlens sessions " + command + ": " + flag + " does not apply");
        }
    };
    using Access = SessionStore::Access;
    if (command == "list") {
        expectWords(words, 1, "'list'");
        refuseFlags({"--json"});
        const std::string path = RunSaver::storePath(args);
        if (!sessions::ModelFile::stat(path).exists && !args.has("--store")) {
            std::printf(args.has("--json") ? "[]\n" : "no sessions yet (%s does not exist)\n",
                        path.c_str());
            return 0;
        }
        SessionStore store(path, Access::ReadOnly);
        return listSessions(store, args.has("--json"));
    }
    if (command == "show") {
        expectWords(words, 2, "'show NAME'");
        refuseFlags({"--json", "--verify"});
        SessionStore store(RunSaver::storePath(args), Access::ReadOnly);
        return showSession(store, words[1], args.has("--json"), args.has("--verify"));
    }
    if (command == "rename") {
        expectWords(words, 3, "'rename OLD NEW'");
        refuseFlags({});
        SessionStore store(RunSaver::storePath(args), Access::ReadWrite);
        store.renameSession(words[1], words[2]);
        std::printf("renamed session '%s' to '%s'\n", words[1].c_str(), words[2].c_str());
        return 0;
    }
    if (command == "delete") {
        expectWords(words, 2, "'delete NAME'");
        refuseFlags({});
        SessionStore store(RunSaver::storePath(args), Access::ReadWrite);
        const auto info = store.session(words[1]);
        store.deleteSession(words[1]);
        std::printf("deleted session '%s' (%lld runs, %lld prompts)\n", SessionStore::shownName(info.name).c_str(),
                    (long long)info.runCount, (long long)info.promptCount);
        return 0;
    }
    if (command == "export") {
        expectWords(words, 3, "'export NAME FILE'");
        refuseFlags({"--format", "--kept"});
        if (args.has("--kept") && !args.has("--format"))
            throw Error("kvlens sessions export: --kept goes with --format jsonl|csv");
        if (args.has("--format")) {
            const SessionRows::Format format = SessionRows::parseFormat(args.get("--format"));
            SessionStore store(RunSaver::storePath(args), Access::ReadOnly);
            const int64_t rows = SessionRows::write(store, words[1], words[2], format, args.has("--kept"));
            std::fprintf(words[2] == "-" ? stderr : stdout, "exported %lld rows of session '%s' to %s\n",
                         (long long)rows, words[1].c_str(), words[2].c_str());
            return 0;
        }
        SessionStore store(RunSaver::storePath(args), Access::ReadOnly);
        const int64_t runs = sessions::SessionExport::exportSession(store, words[1], words[2]);
        std::printf("exported session '%s' (%s) to %s\n", words[1].c_str(),
                    runCounts(runs, store.session(words[1]).niahRunCount).c_str(), words[2].c_str());
        return 0;
    }
    if (command == "import") {
        expectWords(words, 2, "'import FILE'");
        refuseFlags({"--session", "--as"});
        if (args.has("--as") && args.get("--as").empty()) throw Error("--as: the name is empty");
        // A failed import leaves no store of its own making behind.
        const std::string path = RunSaver::storePath(args);
        const bool existed = std::filesystem::exists(path);
        try {
            SessionStore store(path, Access::ReadWrite);
            const auto info = sessions::SessionExport::importSession(
                store, words[1], args.get("--session"), args.get("--as"));
            std::printf("imported session '%s' (%s) into %s\n", SessionStore::shownName(info.name).c_str(),
                        runCounts(info.runCount, info.niahRunCount).c_str(), store.path().c_str());
        } catch (...) {
            if (!existed) sessions::TemporaryFiles::remove(path);
            throw;
        }
        return 0;
    }
    if (command == "merge") {
        if (words.size() < 2) throw Error("kvlens sessions merge: expected 'merge A.db B.db ... --into C.db'");
        refuseFlags({"--into"});
        if (!args.has("--into") || args.get("--into").empty())
            throw Error("kvlens sessions merge: --into C.db names the store to merge into");
        if (args.has("--store")) throw Error("kvlens sessions merge: --store does not apply (--into names the target)");
        const std::vector<std::string> sources(words.begin() + 1, words.end());
        const auto r = sessions::SessionMerge::merge(sources, args.get("--into"));
        std::printf("merged %zu stores into %s: %lld runs and %lld niah runs in %lld sessions", sources.size(),
                    args.get("--into").c_str(), (long long)r.runs, (long long)r.niahRuns, (long long)r.sessions);
        if (r.niahDuplicates > 0) std::printf(" (%lld niah runs already there)", (long long)r.niahDuplicates);
        if (r.evalRuns + r.evalDuplicates > 0) {
            std::printf("; %lld eval runs", (long long)r.evalRuns);
            if (r.evalDuplicates > 0) std::printf(" (%lld already there)", (long long)r.evalDuplicates);
        }
        std::printf("\n");
        return 0;
    }
    throw Error("kvlens sessions: unknown command '" + command +
                "' (commands: list, show, rename, delete, export, import, merge)");
}

}  // namespace kvlens
