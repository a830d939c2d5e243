#include "app/SweepFile.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "app/PressOptions.h"
#include "core/Error.h"
#include "core/Methods.h"
#include "engine/compress/Capture.h"
#include "engine/eval/NeedleTaskName.h"
#include "engine/model/DType.h"
#include "engine/model/ModelSpec.h"

namespace kvlens {

namespace {

using nlohmann::json;

// Reading one file: every error names it and the field.
class Reader {
public:
    explicit Reader(std::string path) : path_(std::move(path)) {}

    [[noreturn]] void fail(const std::string& field, const std::string& what) const {
        throw Error(path_ + ": " + (field.empty() ? "" : field + ": ") + what);
    }

    void keys(const json& obj, const std::string& field, const std::set<std::string>& allowed) const {
        if (!obj.is_object()) fail(field, "expected an object, got " + text(obj));
        for (const auto& [key, value] : obj.items()) {
            if (allowed.count(key)) continue;
            std::string list;
            for (const std::string& a : allowed) list += (list.empty() ? "" : ", ") + a;
            fail(join(field, key), "unknown key (the keys here: " + list + ")");
        }
    }

    static std::string join(const std::string& field, const std::string& key) {
        return field.empty() ? key : field + "." + key;
    }

    static std::string text(const json& v) {
        std::string t = v.dump();
        return t.size() > 40 ? t.substr(0, 37) + "..." : t;
    }

    int64_t integer(const json& v, const std::string& field, int64_t min, int64_t max) const {
        if (!v.is_number_integer())
            fail(field, text(v) + " is not an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "]");
        if (v.is_number_unsigned() ? (v.get<uint64_t>() > uint64_t(max) || (min > 0 && v.get<uint64_t>() < uint64_t(min)))
                                   : (v.get<int64_t>() < min || v.get<int64_t>() > max))
            fail(field, text(v) + " is not in [" + std::to_string(min) + ", " + std::to_string(max) + "]");
        return v.get<int64_t>();
    }

    uint64_t seed(const json& v, const std::string& field) const {
        if (!v.is_number_unsigned()) fail(field, text(v) + " is not a seed (an integer in [0, 2^64 - 1])");
        return v.get<uint64_t>();
    }

    std::string string(const json& v, const std::string& field) const {
        if (!v.is_string() || v.get<std::string>().empty()) fail(field, text(v) + " is not a non-empty string");
        return v.get<std::string>();
    }

    bool boolean(const json& v, const std::string& field) const {
        if (!v.is_boolean()) fail(field, text(v) + " is not true or false");
        return v.get<bool>();
    }

    const json& array(const json& v, const std::string& field) const {
        if (!v.is_array() || v.empty()) fail(field, "expected a non-empty array, got " + text(v));
        return v;
    }

    // A budget: entries (an integer) or a share of the prompt ("25%").
    std::string budget(const json& v, const std::string& field) const {
        if (v.is_number_integer()) return std::to_string(integer(v, field, 1, int64_t(1) << 40));
        if (v.is_string()) return v.get<std::string>();
        fail(field, text(v) + " is not a budget (entries like 128, or a share like \"25%\")");
    }

    // A knob's value as the knob table reads it.
    std::string knob(const KnobInfo& k, const json& v, const std::string& field) const {
        switch (k.type) {
            case KnobType::Int:
                return std::to_string(integer(v, field, k.min, k.max));
            case KnobType::Seed:
                return std::to_string(seed(v, field));
            case KnobType::Real:
                if (!v.is_number()) fail(field, text(v) + " is not a number");
                return methods::shortestText(v.get<double>());
            case KnobType::Word:
            case KnobType::Name:
                if (!v.is_string()) fail(field, text(v) + " is not " + methods::knobValuesText(k));
                return v.get<std::string>();
            case KnobType::Reals: {
                if (v.is_string()) return v.get<std::string>();  // "equal"
                if (!v.is_array()) fail(field, text(v) + " is not an array of numbers");
                std::string out;
                for (size_t i = 0; i < v.size(); ++i) {
                    if (!v[i].is_number()) fail(field + "[" + std::to_string(i) + "]", text(v[i]) + " is not a number");
                    out += (i ? "," : "") + methods::shortestText(v[i].get<double>());
                }
                return out.empty() ? "equal" : out;
            }
        }
        fail(field, "unreadable knob");
    }

    const std::string& path() const { return path_; }

private:
    std::string path_;
};

NiahTask readNiahTask(const Reader& in, const json& t, const std::string& field, int64_t newTokens) {
    in.keys(t, field, {"kind", "lengths", "depths", "samples", "task", "task_seed", "filler", "no_bos",
                       "question_after", "new_tokens"});
    NiahTask task;
    task.newTokens = newTokens;
    if (!t.contains("lengths")) in.fail(field, "'lengths' is missing (prompt lengths, like [1024, \"2k\"])");
    const json& lengths = in.array(t["lengths"], Reader::join(field, "lengths"));
    for (size_t i = 0; i < lengths.size(); ++i) {
        const std::string f = Reader::join(field, "lengths") + "[" + std::to_string(i) + "]";
        const int64_t L = lengths[i].is_string() ? parseTokenCount(lengths[i].get<std::string>(), f)
                                                 : in.integer(lengths[i], f, 1, int64_t(1) << 40);
        if (std::find(task.lengths.begin(), task.lengths.end(), L) != task.lengths.end())
            in.fail(f, std::to_string(L) + " is given twice");
        task.lengths.push_back(L);
    }
    const std::string depthsField = Reader::join(field, "depths");
    if (!t.contains("depths")) {
        task.depths = parseDepths("0:100:10", depthsField);
    } else if (t["depths"].is_string()) {
        task.depths = parseDepths(t["depths"].get<std::string>(), depthsField);
    } else {
        const json& depths = in.array(t["depths"], depthsField);
        for (size_t i = 0; i < depths.size(); ++i) {
            const std::string f = depthsField + "[" + std::to_string(i) + "]";
            if (!depths[i].is_number() || !(depths[i].get<double>() >= 0.0 && depths[i].get<double>() <= 100.0))
                in.fail(f, Reader::text(depths[i]) + " is not a depth in percent, in [0, 100]");
            task.depths.push_back(depths[i].get<double>());
        }
    }
    for (size_t i = 0; i < task.depths.size(); ++i)
        for (size_t j = 0; j < i; ++j)
            if (task.depths[i] == task.depths[j])
                in.fail(depthsField, Reader::text(json(task.depths[i])) + " is given twice");
    if (t.contains("samples")) task.samples = in.integer(t["samples"], Reader::join(field, "samples"), 1, 1 << 20);
    if (t.contains("task")) {
        const std::string f = Reader::join(field, "task");
        try {
            task.kind = needleKindNamed(in.string(t["task"], f));
        } catch (const Error& e) {
            in.fail(f, e.what());
        }
    }
    if (t.contains("task_seed")) task.taskSeed = in.seed(t["task_seed"], Reader::join(field, "task_seed"));
    if (t.contains("filler")) {
        const std::string f = Reader::join(field, "filler");
        const std::string file = in.string(t["filler"], f);
        std::ifstream s(file, std::ios::binary);
        if (!s) in.fail(f, file + ": cannot read");
        std::ostringstream text;
        text << s.rdbuf();
        task.filler = text.str();
        if (task.filler.empty()) in.fail(f, file + " is empty");
    }
    if (t.contains("no_bos")) task.noBos = in.boolean(t["no_bos"], Reader::join(field, "no_bos"));
    if (t.contains("question_after"))
        task.questionAfter = in.boolean(t["question_after"], Reader::join(field, "question_after"));
    if (t.contains("new_tokens"))
        task.newTokens = in.integer(t["new_tokens"], Reader::join(field, "new_tokens"), 1, 1 << 16);
    return task;
}

EvalTask readEvalTask(const Reader& in, const json& t, const std::string& field, int64_t newTokens) {
    in.keys(t, field, {"kind", "data", "task", "length", "samples", "task_seed", "template", "metric", "limit",
                       "truncate", "question_after", "no_bos", "new_tokens"});
    EvalTask task;
    task.newTokens = t.contains("new_tokens") ? in.integer(t["new_tokens"], Reader::join(field, "new_tokens"), 1, 1 << 16)
                                              : (newTokens > 0 ? newTokens : 32);
    if (t.contains("data") == t.contains("task")) in.fail(field, "give \"data\" (a .jsonl file) or \"task\" (a generated one)");
    auto readFile = [&](const std::string& key) {
        const std::string f = Reader::join(field, key);
        const std::string file = in.string(t[key], f);
        std::error_code ec;
        if (!std::filesystem::is_regular_file(file, ec)) in.fail(f, file + ": no such file");
        return file;
    };
    if (t.contains("data")) {
        task.data = readFile("data");
        for (const char* generated : {"length", "samples", "task_seed"})
            if (t.contains(generated)) in.fail(Reader::join(field, generated), "is for a generated \"task\", not \"data\"");
    } else {
        const std::string f = Reader::join(field, "task");
        try {
            task.kind = needleKindNamed(in.string(t["task"], f));
        } catch (const Error& e) {
            in.fail(f, e.what());
        }
        if (t.contains("length")) {
            const std::string lf = Reader::join(field, "length");
            task.length = t["length"].is_string() ? parseTokenCount(t["length"].get<std::string>(), lf)
                                                  : in.integer(t["length"], lf, 1, int64_t(1) << 40);
        }
        if (t.contains("samples")) task.samples = in.integer(t["samples"], Reader::join(field, "samples"), 1, 1 << 20);
        if (t.contains("task_seed")) task.taskSeed = in.seed(t["task_seed"], Reader::join(field, "task_seed"));
    }
    if (t.contains("template")) {
        const std::string file = readFile("template");
        std::ifstream s(file, std::ios::binary);
        std::ostringstream text;
        text << s.rdbuf();
        task.templateText = text.str();
    }
    if (t.contains("metric")) task.metric = in.string(t["metric"], Reader::join(field, "metric"));
    if (t.contains("limit")) task.limit = in.integer(t["limit"], Reader::join(field, "limit"), 1, 1 << 30);
    if (t.contains("truncate")) task.truncate = in.boolean(t["truncate"], Reader::join(field, "truncate"));
    if (t.contains("question_after"))
        task.questionAfter = in.boolean(t["question_after"], Reader::join(field, "question_after"));
    if (t.contains("no_bos")) task.noBos = in.boolean(t["no_bos"], Reader::join(field, "no_bos"));
    try {
        task.prepare();
    } catch (const Error& e) {
        in.fail(field, e.what());
    }
    return task;
}

// One entry of "methods": a name, or an object with "method", knob keys and "budgets".
std::vector<PressParams> readMethod(const Reader& in, const json& m, const std::string& field,
                                    const std::vector<std::string>& budgets) {
    if (m.is_string()) {
        const std::vector<PressParams> runs =
            PressOptions::sweepOf(PressParams{}, {m.get<std::string>()}, budgets, false, field, "budgets");
        for (const PressParams& p : runs) p.validateSettings();
        return runs;
    }
    std::set<std::string> allowed = {"method", "budgets"};
    for (const KnobInfo& k : methods::knobs()) allowed.insert(k.json);
    in.keys(m, field, allowed);
    if (!m.contains("method")) in.fail(field, "'method' is missing (a method's name, as `kvlens methods` lists)");
    const std::string name = in.string(m["method"], Reader::join(field, "method"));
    std::vector<std::string> own = budgets;
    std::string budgetsField = "budgets";
    if (m.contains("budgets")) {
        budgetsField = Reader::join(field, "budgets");
        own.clear();
        const json& list = in.array(m["budgets"], budgetsField);
        for (size_t i = 0; i < list.size(); ++i)
            own.push_back(in.budget(list[i], budgetsField + "[" + std::to_string(i) + "]"));
    }
    PressParams base;
    bool windowGiven = false, poolGiven = false;
    std::vector<const KnobInfo*> given;
    try {
        for (const KnobInfo& k : methods::knobs()) {
            if (!m.contains(k.json)) continue;
            const std::string f = Reader::join(field, k.json);
            methods::setKnob(base, k.knob, in.knob(k, m[k.json], f), f);
            windowGiven |= k.knob == Knob::Window;
            poolGiven |= k.knob == Knob::Pooling;
            given.push_back(&k);
        }
        if (!poolGiven && base.convention == Convention::Kvpress) base.pooling = Pooling::Avg;
        const std::vector<PressParams> runs =
            PressOptions::sweepOf(base, {name}, own, windowGiven, Reader::join(field, "method"), budgetsField);
        // A knob the method does not read would make runs that differ in nothing measured.
        if (methods::named(name).id == MethodId::Full && !given.empty())
            in.fail(Reader::join(field, given.front()->json), "full does not read it (full keeps every position)");
        for (const KnobInfo* k : given) {
            if (k->knob == Knob::Convention) continue;  // every method follows one
            if (std::none_of(runs.begin(), runs.end(),
                             [&](const PressParams& p) { return methods::effectiveKnobs(p).has(k->knob); }))
                in.fail(Reader::join(field, k->json), runs.front().method + " does not read it (it is for " +
                                                          methods::knobReaders(*k) + ")");
        }
        for (const PressParams& p : runs) p.validateSettings();
        return runs;
    } catch (const Error& e) {
        const std::string what = e.what();
        if (what.rfind(in.path() + ": ", 0) == 0) throw;
        in.fail(field + " (" + name + ")", what);
    }
}

}  // namespace

SweepFile SweepFile::read(const std::string& path) {
    // Every error names the file: those of the shared parsers (a method's name, a budget's or
    // a depth's text) name the field and get the file's name before it.
    try {
        return readFields(path);
    } catch (const Error& e) {
        const std::string what = e.what();
        if (what.rfind(path + ": ", 0) == 0) throw;
        throw Error(path + ": " + what);
    }
}

SweepFile SweepFile::readFields(const std::string& path) {
    const Reader in(path);
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec)) throw Error(path + ": cannot read the sweep file (not a file)");
    std::ifstream file(path, std::ios::binary);
    if (!file) throw Error(path + ": cannot read the sweep file");
    json root;
    // A key given twice in one object would silently keep the last value: refused, by name.
    std::vector<std::set<std::string>> open;
    std::string twice;
    const json::parser_callback_t keysOnce = [&](int, json::parse_event_t event, json& parsed) {
        if (event == json::parse_event_t::object_start) open.emplace_back();
        if (event == json::parse_event_t::object_end && !open.empty()) open.pop_back();
        if (event == json::parse_event_t::key && !open.empty() && !open.back().insert(parsed.get<std::string>()).second &&
            twice.empty())
            twice = parsed.get<std::string>();
        return true;
    };
    try {
        root = json::parse(file, keysOnce);
    } catch (const json::exception& e) {  // a syntax error, or a number out of a double's range
        std::string what = e.what();
        const size_t at = what.find("] ");
        in.fail("", "not JSON: " + (at == std::string::npos ? what : what.substr(at + 2)));
    }
    if (!twice.empty()) in.fail("", "the key '" + twice + "' is given twice in one object");
    in.keys(root, "", {"session", "models", "tasks", "methods", "budgets", "new_tokens", "dtype", "device", "threads"});
    SweepFile s;
    s.path = path;
    s.session = root.contains("session") ? in.string(root["session"], "session")
                                         : std::filesystem::path(path).stem().string();
    for (const char* required : {"models", "tasks", "methods"})
        if (!root.contains(required)) in.fail(required, "missing");
    const json& models = in.array(root["models"], "models");
    std::vector<std::string> identities;
    for (size_t i = 0; i < models.size(); ++i) {
        const std::string f = "models[" + std::to_string(i) + "]";
        const std::string spec = in.string(models[i], f);
        std::string same = spec;  // what makes two specs one model: the file, wherever named from
        if (spec.rfind("random:", 0) == 0) {
            try {
                ModelSpec::parse(spec);
            } catch (const Error& e) {
                in.fail(f, e.what());
            }
        } else {
            if (!std::filesystem::exists(spec, ec)) in.fail(f, spec + ": no such file or folder");
            same = std::filesystem::weakly_canonical(spec, ec).string();
        }
        for (size_t j = 0; j < s.models.size(); ++j)
            if (identities[j] == same) in.fail(f, spec + " is models[" + std::to_string(j) + "] again");
        identities.push_back(same);
        s.models.push_back(spec);
    }
    if (root.contains("dtype")) s.dtype = in.string(root["dtype"], "dtype");
    if (root.contains("device")) s.device = in.string(root["device"], "device");
    try {
        parseDType(s.dtype);
    } catch (const Error& e) {
        in.fail("dtype", e.what());
    }
    try {
        parseDevice(s.device);
    } catch (const Error& e) {
        in.fail("device", e.what());
    }
    if (root.contains("threads")) s.threads = in.integer(root["threads"], "threads", 1, 1024);
    // The answer tokens: niah's default is 16, eval's 32, unless the file says.
    const int64_t newTokens = root.contains("new_tokens") ? in.integer(root["new_tokens"], "new_tokens", 1, 1 << 16) : 0;

    const json& tasks = in.array(root["tasks"], "tasks");
    for (size_t i = 0; i < tasks.size(); ++i) {
        const std::string f = "tasks[" + std::to_string(i) + "]";
        if (!tasks[i].is_object()) in.fail(f, "expected an object, got " + Reader::text(tasks[i]));
        if (!tasks[i].contains("kind")) in.fail(f, "'kind' is missing (\"niah\" or \"eval\")");
        const std::string kind = in.string(tasks[i]["kind"], f + ".kind");
        if (kind != "niah" && kind != "eval") in.fail(f + ".kind", "'" + kind + "' is not niah or eval");
        SweepTask task;
        task.isEval = kind == "eval";
        if (task.isEval) {
            task.eval = readEvalTask(in, tasks[i], f, newTokens);
            for (size_t j = 0; j < i; ++j)
                if (s.tasks[j].isEval && s.tasks[j].eval.source() == task.eval.source() &&
                    s.tasks[j].eval.metric == task.eval.metric &&
                    s.tasks[j].eval.questionAfter == task.eval.questionAfter &&
                    s.tasks[j].eval.newTokens == task.eval.newTokens)
                    in.fail(f, "is tasks[" + std::to_string(j) + "] again (the same records twice)");
            s.tasks.push_back(std::move(task));
            continue;
        }
        task.niah = readNiahTask(in, tasks[i], f, newTokens > 0 ? newTokens : 16);
        s.tasks.push_back(std::move(task));
        const NiahTask& t = s.tasks.back().niah;
        for (size_t j = 0; j < i; ++j) {
            if (s.tasks[j].isEval) continue;
            const NiahTask& u = s.tasks[j].niah;
            if (NeedleTaskName::of(t.kind, t.filler, t.noBos).str() == NeedleTaskName::of(u.kind, u.filler, u.noBos).str() &&
                t.taskSeed == u.taskSeed && t.questionAfter == u.questionAfter && t.newTokens == u.newTokens) {
                for (int64_t L : t.lengths)
                    for (double d : t.depths)
                        if (std::count(u.lengths.begin(), u.lengths.end(), L) &&
                            std::count(u.depths.begin(), u.depths.end(), d))
                            in.fail(f, "length " + std::to_string(L) + " at depth " + Reader::text(json(d)) +
                                           " is also in tasks[" + std::to_string(j) + "] (the same samples twice)");
            }
        }
    }

    std::vector<std::string> budgets;
    if (root.contains("budgets")) {
        const json& list = in.array(root["budgets"], "budgets");
        for (size_t i = 0; i < list.size(); ++i) budgets.push_back(in.budget(list[i], "budgets[" + std::to_string(i) + "]"));
    }
    const json& methodList = in.array(root["methods"], "methods");
    std::vector<std::string> origin;  // each run's entry, for a duplicate's message
    for (size_t i = 0; i < methodList.size(); ++i) {
        const std::string f = "methods[" + std::to_string(i) + "]";
        // The entry's method, as the method table knows it: full needs no budget.
        const json& named = methodList[i].is_object() && methodList[i].contains("method") ? methodList[i]["method"]
                                                                                          : methodList[i];
        const MethodInfo* method = named.is_string() ? methods::find(named.get<std::string>()) : nullptr;
        const bool full = method && method->id == MethodId::Full;
        if (budgets.empty() && !full && !(methodList[i].is_object() && methodList[i].contains("budgets")))
            in.fail(f, "no budgets (give \"budgets\" in the file or in the entry)");
        if (!methodList[i].is_string() && !methodList[i].is_object())
            in.fail(f, Reader::text(methodList[i]) + " is not a method's name or an object with \"method\"");
        for (PressParams& p : readMethod(in, methodList[i], f, budgets.empty() ? std::vector<std::string>{"100%"} : budgets)) {
            const std::string key = p.method + " " + p.describe();
            for (size_t j = 0; j < s.runs.size(); ++j)
                if (s.runs[j].method + " " + s.runs[j].describe() == key)
                    in.fail(f, "'" + p.describe() + "' is also a run of " + origin[j] + " (a grid point given twice)");
            s.runs.push_back(std::move(p));
            origin.push_back(f);
        }
    }
    // A budget no prompt of the sweep fits: the shortest prompt of each task decides.
    for (size_t i = 0; i < s.tasks.size(); ++i) {
        // A data file's records are as long as they are: checked against each prompt later.
        if (s.tasks[i].isEval && !s.tasks[i].eval.data.empty()) continue;
        const int64_t shortest =
            s.tasks[i].isEval ? s.tasks[i].eval.length
                              : *std::min_element(s.tasks[i].niah.lengths.begin(), s.tasks[i].niah.lengths.end());
        for (size_t r = 0; r < s.runs.size(); ++r) {
            const PressParams& p = s.runs[r];
            if (p.budget >= shortest)
                in.fail(origin[r], "a budget of " + std::to_string(p.budget) + " entries is at or over tasks[" +
                                       std::to_string(i) + "]'s length " + std::to_string(shortest) +
                                       " (a budget must be under the prompt's tokens)");
            try {
                p.validate(shortest, Capture::windowCapacityFor(shortest));
            } catch (const Error& e) {
                in.fail(origin[r] + " (" + p.method + ") on tasks[" + std::to_string(i) + "]'s length " +
                            std::to_string(shortest),
                        e.what());
            }
        }
    }
    return s;
}

int64_t SweepFile::capturesPerModel() const {
    int64_t n = 0;
    for (const SweepTask& t : tasks) n += t.captures();
    return n;
}

std::vector<std::string> SweepFile::modelArgs(const std::string& model, int64_t threadsOverride) const {
    std::vector<std::string> args = {"--model", model, "--dtype", dtype, "--device", device};
    const int64_t t = threadsOverride > 0 ? threadsOverride : threads;
    if (t > 0) {
        args.push_back("--threads");
        args.push_back(std::to_string(t));
    }
    return args;
}

}  // namespace kvlens
