// kvlens sweep: a study's grid from one sweep file (app/SweepFile.h): `plan` prints it with an
// estimate of its time from a short calibration run, `run` measures it (or one shard of it)
// into a session store, resumably, and `slurm` writes the job array that runs its shards on a
// Slurm cluster and the job that merges their stores and writes the report.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <sstream>

#include "app/CommandLine.h"
#include "app/Commands.h"
#include "app/ModelOptions.h"
#include "app/EvalSweep.h"
#include "app/NiahSweep.h"
#include "app/PressOptions.h"
#include "app/ProgressBar.h"
#include "app/RunSaver.h"
#include "app/SessionRows.h"
#include "app/SweepFile.h"
#include "core/Error.h"
#include "sessions/Sha256.h"
#include "sessions/SessionStore.h"

namespace kvlens {

namespace {

const char* kSweepUsage =
    "usage: kvlens sweep plan FILE [--shards N] [--no-calibrate] [--threads T]\n"
    "       kvlens sweep run FILE [--store PATH] [--shard I/N] [--threads T] [--csv]\n"
    "       kvlens sweep slurm FILE --shards N --out DIR [--partition P] [--time T] [--cpus C]\n"
    "                          [--gpus G] [--submit]\n"
    "  A sweep file is one JSON object: models x tasks x methods x budgets (docs/sweeps.md).\n"
    "  plan: the grid, its captures (prefills) and re-selected runs, per shard with --shards,\n"
    "  and its time estimated from a calibration run of one sample per model and prompt length\n"
    "  (--no-calibrate: the counts alone).\n"
    "  run: every run of the grid, or of shard I of N (samples I, I+N, ... counted over the\n"
    "  whole sweep), saved to the session the file names as it is measured; run again, it\n"
    "  skips what the session holds (a killed run resumes). --csv: one row per run.\n"
    "  slurm: writes DIR/shard.sbatch (a job array, one shard per task, each its own store\n"
    "  DIR/shard-I.db, --threads from SLURM_CPUS_PER_TASK), DIR/merge.sbatch (after the array:\n"
    "  sessions merge into DIR/merged.db, then the report in DIR/report; a shard that did not\n"
    "  complete is named in DIR/merge.log and fails the job) and DIR/submit, which submits the\n"
    "  shards not complete yet and the merge after them. --submit runs DIR/submit.\n";

Shard shardOf(const CommandLine& args) {
    return args.has("--shard") ? Shard::parse(args.get("--shard"), "--shard") : Shard{};
}

LoadedModel loadModel(const SweepFile& file, const std::string& model, int64_t threads, ModelOptions& options) {
    options = ModelOptions::fromCommandLine(CommandLine("sweep", file.modelArgs(model, threads), ModelOptions::flags(), {}));
    return options.load();
}

std::string seconds(double s) {
    char text[64];
    if (s < 120)
        std::snprintf(text, sizeof text, "%.1f s", s);
    else if (s < 7200)
        std::snprintf(text, sizeof text, "%.1f min", s / 60);
    else
        std::snprintf(text, sizeof text, "%.1f h", s / 3600);
    return text;
}

// Seconds since this process started (/proc): what a shard's process spends before its first
// model loads (the program's libraries, the sweep file), counted in the estimate once per shard.
double secondsSinceStart() {
    std::ifstream stat("/proc/self/stat"), uptime("/proc/uptime");
    std::string line;
    double up = 0.0;
    if (!std::getline(stat, line) || !(uptime >> up)) return 0.0;
    // Field 22 (starttime, clock ticks after boot) counted after the command's ")".
    std::istringstream rest(line.substr(line.rfind(')') + 2));
    std::string field;
    for (int i = 3; i <= 22 && rest >> field; ++i) {
    }
    const double ticks = std::strtod(field.c_str(), nullptr);
    const double since = up - ticks / double(sysconf(_SC_CLK_TCK));
    return since > 0.0 && since < 3600.0 ? since : 0.0;
}

int runPlan(const SweepFile& file, const CommandLine& args) {
    const double startup = secondsSinceStart();
    const int64_t shards = args.getInt("--shards", 1, 1, 1 << 20);
    const int64_t perModel = file.capturesPerModel();
    std::printf("sweep %s: session '%s'\n", file.path.c_str(), file.session.c_str());
    std::printf("  %zu models:", file.models.size());
    for (const std::string& m : file.models) std::printf(" %s", m.c_str());
    std::printf("\n  %zu tasks:\n", file.tasks.size());
    for (size_t i = 0; i < file.tasks.size(); ++i) {
        if (file.tasks[i].isEval) {
            const EvalTask& e = file.tasks[i].eval;
            std::printf("    tasks[%zu] eval %s: %lld %s, %lld answer tokens, question %s\n", i, e.sourceName().c_str(),
                        (long long)e.count(), e.data.empty() ? "samples" : "records", (long long)e.newTokens,
                        e.questionAfter ? "after" : "inside");
            continue;
        }
        const NiahTask& t = file.tasks[i].niah;
        std::printf("    tasks[%zu] niah %s: %zu lengths x %zu depths x %lld samples = %lld captures, %lld answer tokens, "
                    "question %s\n",
                    i, needleKindName(t.kind), t.lengths.size(), t.depths.size(), (long long)t.samples,
                    (long long)t.captures(), (long long)t.newTokens, t.questionAfter ? "after" : "inside");
    }
    std::printf("  %zu runs re-selected on each capture:", file.runs.size());
    for (const PressParams& p : file.runs) std::printf(" %s@%s", p.method.c_str(), budgetLabel(p).c_str());
    std::printf("\n  %lld captures (prefills), %lld runs in all", (long long)file.captures(),
                (long long)(file.captures() * int64_t(file.runs.size())));
    if (shards > 1) {
        int64_t most = 0;
        for (int64_t s = 1; s <= shards; ++s) {
            int64_t n = 0;
            for (size_t m = 0; m < file.models.size(); ++m) n += Shard{s, shards}.of(int64_t(m) * perModel, perModel);
            most = std::max(most, n);
        }
        std::printf("; %lld shards of at most %lld captures", (long long)shards, (long long)most);
    }
    std::printf("\n");
    if (args.has("--no-calibrate")) return 0;

    // Calibration: per model, one sample (the middle depth) at each prompt length of each task,
    // every run on it; the first sample is measured twice and its first time left out (the
    // threads', allocator's and caches' first use).
    const int64_t threads = args.getInt("--threads", 0, 0, 1024);
    std::vector<double> shardSeconds(size_t(shards), startup);
    double total = startup, calibration = 0.0;
    const auto c0 = std::chrono::steady_clock::now();
    for (size_t m = 0; m < file.models.size(); ++m) {
        ModelOptions options;
        const auto l0 = std::chrono::steady_clock::now();
        LoadedModel loaded = loadModel(file, file.models[m], threads, options);
        const double load = std::chrono::duration<double>(std::chrono::steady_clock::now() - l0).count();
        NiahSweep sweep(loaded, options.model, nullptr, file.session);
        EvalSweep evals(loaded, options.model, nullptr, file.session);
        int64_t first = int64_t(m) * perModel;
        for (int64_t s = 1; s <= shards; ++s)
            if (Shard{s, shards}.of(first, perModel) > 0) shardSeconds[size_t(s - 1)] += load;
        total += load;
        bool warm = false;
        for (size_t t = 0; t < file.tasks.size(); ++t) {
            if (file.tasks[t].isEval) continue;
            try {
                sweep.checkContext(file.tasks[t].niah);
                sweep.checkPrompts(file.tasks[t].niah, file.runs);
            } catch (const Error& e) {
                throw Error(file.path + ": models[" + std::to_string(m) + "] (" + file.models[m] + "), tasks[" +
                            std::to_string(t) + "]: " + e.what());
            }
        }
        for (size_t ti = 0; ti < file.tasks.size(); ++ti) {
            if (file.tasks[ti].isEval) {
                // The first record (or sample), every run on it, for each of the task's records.
                const EvalTask& task = file.tasks[ti].eval;
                EvalTask one = task;
                if (one.data.empty())
                    one.samples = 1;
                else
                    one.limit = 1;
                ProgressBar bar("sweep plan: calibrating " + file.models[m] + " on " + task.sourceName());
                double t = 0.0;
                for (int pass = warm ? 1 : 0; pass < 2; ++pass) {
                    int64_t done = 0;
                    const auto t0 = std::chrono::steady_clock::now();
                    try {
                        evals.run(one, file.runs, 0, Shard{}, {}, &bar, done, 1);
                    } catch (const Error& e) {
                        throw Error(file.path + ": models[" + std::to_string(m) + "] (" + file.models[m] + "), tasks[" +
                                    std::to_string(ti) + "]: " + e.what());
                    }
                    t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
                }
                warm = true;
                bar.finish();
                for (int64_t s = 1; s <= shards; ++s)
                    shardSeconds[size_t(s - 1)] += t * double(Shard{s, shards}.of(first, task.count()));
                total += t * double(task.count());
                std::printf("  calibration: %s on %s: %.2f s per record (%zu runs)\n", file.models[m].c_str(),
                            task.sourceName().c_str(), t, file.runs.size());
                first += task.count();
                continue;
            }
            const NiahTask& task = file.tasks[ti].niah;
            for (size_t li = 0; li < task.lengths.size(); ++li) {
                NiahTask one = task;
                one.lengths = {task.lengths[li]};
                one.depths = {task.depths[task.depths.size() / 2]};
                one.samples = 1;
                ProgressBar bar("sweep plan: calibrating " + file.models[m] + " at " + std::to_string(one.lengths[0]) +
                                " tokens");
                double t = 0.0;
                for (int pass = warm ? 1 : 0; pass < 2; ++pass) {
                    int64_t done = 0;
                    const auto t0 = std::chrono::steady_clock::now();
                    sweep.run(one, file.runs, 0, Shard{}, {}, bar, done, 1);
                    t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
                }
                warm = true;
                bar.finish();
                // Every sample of this length, in the shards that hold it.
                const int64_t perLength = int64_t(task.depths.size()) * task.samples;
                const int64_t start = first + int64_t(li) * perLength;
                for (int64_t s = 1; s <= shards; ++s)
                    shardSeconds[size_t(s - 1)] += t * double(Shard{s, shards}.of(start, perLength));
                total += t * double(perLength);
                std::printf("  calibration: %s at %lld tokens: %.2f s per sample (%zu runs)\n", file.models[m].c_str(),
                            (long long)one.lengths[0], t, file.runs.size());
            }
            first += task.captures();
        }
    }
    calibration = std::chrono::duration<double>(std::chrono::steady_clock::now() - c0).count();
    std::printf("  estimate: %s in all", seconds(total).c_str());
    if (shards > 1)
        std::printf(", %s for the longest of %lld shards run side by side",
                    seconds(*std::max_element(shardSeconds.begin(), shardSeconds.end())).c_str(), (long long)shards);
    std::printf(" (calibration took %s%s)\n", seconds(calibration).c_str(),
                threads > 0 ? (", " + std::to_string(threads) + " threads").c_str() : "");
    if (shards > 1 && shards <= 32) {
        std::printf("  per shard:");
        for (int64_t s = 0; s < shards; ++s)
            std::printf("%s %lld/%lld %s", s ? "," : "", (long long)(s + 1), (long long)shards,
                        seconds(shardSeconds[size_t(s)]).c_str());
        std::printf("\n");
    }
    return 0;
}

int measureSweep(const SweepFile& file, const CommandLine& args) {
    const Shard shard = shardOf(args);
    const int64_t threads = args.getInt("--threads", 0, 0, 1024);
    // The store opens before any model loads, so a bad store fails first.
    sessions::SessionStore store(RunSaver::storePath(args), sessions::SessionStore::Access::ReadWrite);
    const int64_t perModel = file.capturesPerModel();
    int64_t planned = 0;
    for (size_t m = 0; m < file.models.size(); ++m) planned += shard.of(int64_t(m) * perModel, perModel);
    const bool csv = args.has("--csv");
    if (csv)
        std::printf("model,task,record,tokens,method,budget,params,score,agreement,mean_kl\n");
    int64_t done = 0, stored = 0, skipped = 0, captures = 0;
    const auto t0 = std::chrono::steady_clock::now();
    ProgressBar bar("sweep: " + std::to_string(planned) + " samples" +
                    (shard.count > 1 ? " (shard " + std::to_string(shard.index) + "/" + std::to_string(shard.count) + ")"
                                     : std::string()));
    for (size_t m = 0; m < file.models.size(); ++m) {
        int64_t first = int64_t(m) * perModel;
        if (shard.of(first, perModel) == 0) continue;  // none of this model's samples: not loaded
        // An error of this model or task names them in the file.
        auto in = [&](const std::string& field, const std::function<void()>& work) {
            try {
                work();
            } catch (const Error& e) {
                throw Error(file.path + ": models[" + std::to_string(m) + "] (" + file.models[m] + ")" + field + ": " +
                            e.what());
            }
        };
        ModelOptions options;
        std::unique_ptr<LoadedModel> loaded;
        in("", [&] { loaded = std::make_unique<LoadedModel>(loadModel(file, file.models[m], threads, options)); });
        NiahSweep sweep(*loaded, options.model, &store, file.session);
        EvalSweep evals(*loaded, options.model, &store, file.session);
        // Every needle task's lengths against the context, and every run against its prompts,
        // before the first prefill (an eval task's records, each before its own).
        for (size_t t = 0; t < file.tasks.size(); ++t) {
            if (file.tasks[t].isEval) continue;
            in(", tasks[" + std::to_string(t) + "]", [&] {
                sweep.checkContext(file.tasks[t].niah);
                sweep.checkPrompts(file.tasks[t].niah, file.runs);
            });
        }
        auto row = [&](size_t t, const std::string& record, int64_t tokens, const PressParams& p,
                       const std::string& budget, double score, double agreement, double kl) {
            if (!csv) return;
            std::printf("%s,%zu,%s,%lld,%s,%s,%s,%.6f,%.6f,%.8g\n", csvCell(file.models[m]).c_str(), t,
                        csvCell(record).c_str(), (long long)tokens, p.method.c_str(), csvCell(budget).c_str(),
                        csvCell(p.describe()).c_str(), score, agreement, kl);
            std::fflush(stdout);
        };
        for (size_t t = 0; t < file.tasks.size(); ++t) {
            in(", tasks[" + std::to_string(t) + "]", [&] {
                if (file.tasks[t].isEval) {
                    evals.run(file.tasks[t].eval, file.runs, first, shard, [&](const EvalRunResult& r) {
                        row(t, r.where, r.tokens, r.params, r.budget, r.score, r.agreement, r.meanKl);
                    }, &bar, done, planned);
                } else {
                    sweep.run(file.tasks[t].niah, file.runs, first, shard, [&](const NiahRunResult& r) {
                        char where[96];
                        std::snprintf(where, sizeof where, "length %lld, depth %g%%, sample %lld", (long long)r.length,
                                      r.depth, (long long)r.sample);
                        row(t, where, r.tokens, r.params, r.budget, r.contains, r.agreement, r.meanKl);
                    }, bar, done, planned);
                }
            });
            first += file.tasks[t].captures();
        }
        stored += sweep.stored() + evals.stored();
        skipped += sweep.skipped() + evals.skipped();
        captures += sweep.captures() + evals.captures();
    }
    bar.finish();
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::fprintf(stderr, "sweep: %lld captures, %lld runs saved to session '%s' of %s%s in %.1f s\n",
                 (long long)captures, (long long)stored, file.session.c_str(), store.path().c_str(),
                 skipped ? (", " + std::to_string(skipped) + " already saved").c_str() : "", took);
    return 0;
}

// The characters a path or word may hold to go into the generated scripts unquoted.
const char* kPlain = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+,=@:~";

// A value pasted into a shell script, single-quoted.
std::string quoted(const std::string& s) {
    std::string out = "'";
    for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
}

void writeScript(const std::filesystem::path& path, const std::string& text) {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f << text;
    f.close();
    if (!f) throw Error("--out: cannot write " + path.string());
    std::filesystem::permissions(path, std::filesystem::perms::owner_exec | std::filesystem::perms::group_exec,
                                 std::filesystem::perm_options::add);
}

int runSlurm(const SweepFile& file, const CommandLine& args) {
    if (!args.has("--shards")) throw Error("kvlens sweep slurm: --shards N is required (the array's tasks)");
    if (!args.has("--out")) throw Error("kvlens sweep slurm: --out DIR is required (scripts, stores, logs)");
    // Slurm's default MaxArraySize is 1001: array indices 1..1000.
    const int64_t shards = args.getInt("--shards", 1, 1, 1000);
    const int64_t cpus = args.getInt("--cpus", 1, 1, 4096);
    const int64_t gpus = args.getInt("--gpus", 0, 0, 64);
    const std::string partition = args.get("--partition", "");
    const std::string time = args.get("--time", "");
    for (const auto& [flag, value] : {std::pair<const char*, std::string>{"--partition", partition}, {"--time", time}}) {
        if (args.has(flag) && (value.empty() || value.find_first_not_of(kPlain) != std::string::npos))
            throw Error(std::string(flag) + ": '" + value + "' is not a plain word");
    }
    if (args.get("--out").empty()) throw Error("--out: the folder name is empty");
    std::error_code ec;
    const std::filesystem::path out = std::filesystem::absolute(args.get("--out"), ec);
    if (ec) throw Error("--out: '" + args.get("--out") + "' is not a usable path (" + ec.message() + ")");
    const std::string kvlens = std::filesystem::canonical("/proc/self/exe", ec).string();
    if (ec) throw Error("sweep slurm: cannot find this program's path (" + ec.message() + ")");
    const std::string sweepFile = std::filesystem::absolute(file.path).string();
    const std::string workdir = std::filesystem::current_path().string();
    const std::string dir = out.string();
    // The scripts carry these paths into #SBATCH lines, Slurm's %-patterns and shell strings:
    // only characters that mean nothing to any of them.
    for (const auto& [what, path] : {std::pair<std::string, std::string>{"--out", dir}, {"the sweep file", sweepFile},
                                     {"the working directory", workdir}, {"this kvlens", kvlens}}) {
        if (path.find_first_not_of(kPlain) != std::string::npos)
            throw Error("sweep slurm: " + what + " '" + path + "' has a character the scripts cannot carry (only " +
                        "letters, digits and / . _ - + , = @ : ~): use another path");
    }
    // The sweep the folder's shards belong to: a changed file or shard count is another
    // sweep, whose stores and completion marks must not mix with this one's.
    std::ifstream in(file.path, std::ios::binary);
    std::ostringstream bytes;
    bytes << in.rdbuf();
    sessions::Sha256 hash;
    hash.update(bytes.str() + "\nshards " + std::to_string(shards) + "\n");
    const std::string fingerprint = hash.finishHex().substr(0, 16);
    const std::filesystem::path mark = out / "sweep.fingerprint";
    if (std::filesystem::exists(mark, ec)) {
        std::ifstream f(mark);
        std::string held;
        std::getline(f, held);
        if (held != fingerprint)
            throw Error("--out " + dir + " holds the shards of another sweep (another file or --shards than " +
                        held + "): use a new --out, or remove its shard-* files and sweep.fingerprint");
    }
    std::filesystem::create_directories(out / "logs", ec);
    if (ec) throw Error("--out: cannot create " + (out / "logs").string() + " (" + ec.message() + ")");
    {
        std::ofstream f(mark, std::ios::trunc);
        f << fingerprint << "\n";
        if (!f) throw Error("--out: cannot write " + mark.string());
    }
    const std::string n = std::to_string(shards);
    const bool hasNiah =
        std::any_of(file.tasks.begin(), file.tasks.end(), [](const SweepTask& t) { return !t.isEval; });
    // A shard is complete when its .done holds this sweep's fingerprint.
    const std::string complete = "[[ \"$(cat shard-$i.done 2>/dev/null)\" == " + fingerprint + " ]]";

    std::string header = "#SBATCH --chdir=" + workdir + "\n";
    if (!partition.empty()) header += "#SBATCH --partition=" + partition + "\n";
    if (!time.empty()) header += "#SBATCH --time=" + time + "\n";
    std::string shardScript =
        "#!/bin/bash\n"
        "# One shard of the sweep per array task (written by kvlens sweep slurm).\n"
        "#SBATCH --job-name=kvlens-sweep\n"
        "#SBATCH --cpus-per-task=" + std::to_string(cpus) + "\n" +
        (gpus > 0 ? "#SBATCH --gpus=" + std::to_string(gpus) + "\n" : std::string()) + header +
        "#SBATCH --output=" + dir + "/logs/shard-%a.log\n"
        "#SBATCH --open-mode=append\n"
        "set -euo pipefail\n"
        "i=$SLURM_ARRAY_TASK_ID\n"
        "rm -f " + dir + "/shard-$i.done\n" +
        kvlens + " sweep run " + sweepFile + " --store " + dir + "/shard-$i.db --shard $i/" + n +
        " --threads \"${SLURM_CPUS_PER_TASK:-" + std::to_string(cpus) + "}\"\n" +
        "echo " + fingerprint + " > " + dir + "/shard-$i.done\n";
    std::string mergeScript =
        "#!/bin/bash\n"
        "# Joins the shards' stores and writes the report (written by kvlens sweep slurm).\n"
        "#SBATCH --job-name=kvlens-merge\n"
        "#SBATCH --cpus-per-task=1\n" + header +
        "#SBATCH --output=" + dir + "/logs/merge.log\n"
        "set -uo pipefail\n"
        "cd " + dir + "\n"
        "failed() { echo \"sweep: $1\" | tee merge.status >&2; exit 1; }\n"
        "missing=()\n"
        "for i in $(seq 1 " + n + "); do " + complete + " || missing+=($i); done\n"
        "if (( ${#missing[@]} )); then\n"
        "  failed \"shards ${missing[*]} of " + n + " did not complete (logs/shard-I.log); run " + dir +
        "/submit again to re-run them\"\n"
        "fi\n"
        "stores=(); for i in $(seq 1 " + n + "); do stores+=(shard-$i.db); done\n"
        "rm -f merged.db.part merged.db.part-wal merged.db.part-shm\n" +
        kvlens + " sessions merge \"${stores[@]}\" --into merged.db.part || failed \"the merge failed (logs/merge.log)\"\n"
        "rm -f merged.db-wal merged.db-shm\n"
        "mv merged.db.part merged.db || failed \"cannot move merged.db.part to merged.db\"\n" +
        // The report draws needle runs (eval runs go out through sessions export).
        (hasNiah ? kvlens + " report --session " + quoted(file.session) + " --store merged.db --out report ||"
                            " failed \"the report failed (logs/merge.log)\"\n"
                 : std::string()) +
        "echo \"sweep: merged " + n + " shards into " + dir + "/merged.db\" | tee merge.status\n";
    std::string submitScript =
        "#!/bin/bash\n"
        "# Submits the shards of the sweep not complete yet, then the merge after them.\n"
        "set -euo pipefail\n"
        "cd " + dir + "\n"
        "command -v sbatch >/dev/null || { echo \"submit: sbatch is not on PATH (run this where Slurm is)\" >&2; exit 1; }\n"
        "if [[ -f merge.job ]] && squeue -h -j \"$(cat merge.job)\" 2>/dev/null | grep -q .; then\n"
        "  echo \"submit: job $(cat merge.job) of an earlier submit is still queued: wait for it, or scancel it\" >&2\n"
        "  exit 1\n"
        "fi\n"
        "pending=()\n"
        "for i in $(seq 1 " + n + "); do " + complete + " || pending+=($i); done\n"
        "rm -f merge.status\n"
        "dependency=()\n"
        "if (( ${#pending[@]} )); then\n"
        "  list=$(IFS=,; echo \"${pending[*]}\")\n"
        "  job=$(sbatch --parsable --array=\"$list\" shard.sbatch)\n"
        "  job=${job%%;*}\n"
        "  echo \"submit: shards $list as job array $job\"\n"
        "  dependency=(--dependency=afterany:$job)\n"
        "fi\n"
        "merge=$(sbatch --parsable ${dependency[@]+\"${dependency[@]}\"} merge.sbatch)\n"
        "merge=${merge%%;*}\n"
        "echo \"submit: merge as job $merge\"\n"
        "echo \"$merge\" > merge.job\n";
    writeScript(out / "shard.sbatch", shardScript);
    writeScript(out / "merge.sbatch", mergeScript);
    writeScript(out / "submit", submitScript);
    std::printf("sweep slurm: %lld shards of %s (%lld captures, %lld runs) in %s: shard.sbatch, merge.sbatch, submit\n",
                (long long)shards, file.path.c_str(), (long long)file.captures(),
                (long long)(file.captures() * int64_t(file.runs.size())), dir.c_str());
    if (!args.has("--submit")) {
        std::printf("submit them with: %s/submit\n", dir.c_str());
        return 0;
    }
    // sbatch looked up as the script will: a machine without Slurm is told so in one line.
    bool found = false;
    const char* path = std::getenv("PATH");
    std::istringstream dirs(path ? path : "");
    for (std::string d; std::getline(dirs, d, ':');)
        found |= !d.empty() && ::access((d + "/sbatch").c_str(), X_OK) == 0;
    if (!found)
        throw Error("sweep slurm --submit: sbatch is not on PATH; the scripts are written: run " + dir +
                    "/submit where Slurm is");
    std::fflush(stdout);
    const std::string command = quoted(dir + "/submit");
    const int status = std::system(command.c_str());
    if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        throw Error("sweep slurm --submit: " + dir + "/submit failed (exit " +
                    std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) + "); the scripts are in " + dir);
    return 0;
}

}  // namespace

int runSweep(const std::vector<std::string>& argv) {
    if (argv.empty() || argv[0] == "--help" || argv[0] == "-h") {
        std::fputs(kSweepUsage, argv.empty() ? stderr : stdout);
        return argv.empty() ? 2 : 0;
    }
    const std::string sub = argv[0];
    if (sub != "plan" && sub != "run" && sub != "slurm")
        throw Error("kvlens sweep: unknown command '" + sub + "' (commands: plan, run, slurm)");
    const std::vector<std::string> rest(argv.begin() + 1, argv.end());
    if (std::find(rest.begin(), rest.end(), "--help") != rest.end()) {
        std::fputs(kSweepUsage, stdout);
        return 0;
    }
    if (rest.empty() || rest[0].rfind("-", 0) == 0)
        throw Error("kvlens sweep " + sub + ": expected the sweep FILE first");
    const std::vector<std::string> flags(rest.begin() + 1, rest.end());
    std::set<std::string> valueFlags, switches;
    if (sub == "plan") {
        valueFlags = {"--shards", "--threads"};
        switches = {"--no-calibrate"};
    } else if (sub == "run") {
        valueFlags = {"--store", "--shard", "--threads"};
        switches = {"--csv"};
    } else {
        valueFlags = {"--shards", "--out", "--partition", "--time", "--cpus", "--gpus"};
        switches = {"--submit"};
    }
    const CommandLine args("sweep " + sub, flags, valueFlags, switches);
    const SweepFile file = SweepFile::read(rest[0]);
    if (sub == "plan") return runPlan(file, args);
    if (sub == "run") return measureSweep(file, args);
    return runSlurm(file, args);
}

}  // namespace kvlens
