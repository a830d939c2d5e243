// kvlens methods: the method table as text, JSON and Markdown; run --help's method list read
// from the same table; a bad flag is one line.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "cli/CliHarness.h"
#include "core/Methods.h"

namespace kvlens {
namespace {

TEST(MethodsCli, TheTableAsTextJsonAndMarkdown) {
    const test::CliResult text = test::runKvlens("methods");
    ASSERT_EQ(text.exitCode, 0) << text.err;
    for (const MethodInfo& m : methods::all())
        EXPECT_NE(text.out.find("\n" + std::string(m.name) + " "), std::string::npos) << m.name;

    const test::CliResult json = test::runKvlens("methods --json");
    ASSERT_EQ(json.exitCode, 0) << json.err;
    const nlohmann::json doc = nlohmann::json::parse(json.out);
    ASSERT_EQ(doc.at("methods").size(), methods::all().size());
    std::set<std::string> names;
    for (const auto& m : doc.at("methods")) names.insert(m.at("name").get<std::string>());
    EXPECT_EQ(names.size(), methods::all().size());
    EXPECT_EQ(doc.at("methods")[1].at("name"), "snapkv");
    EXPECT_EQ(doc.at("methods")[1].at("knobs"), nlohmann::json({"window", "kernel", "pool", "gqa"}));
    EXPECT_EQ(doc.at("methods")[1].at("kvpress"), "SnapKVPress");
    EXPECT_EQ(doc.at("knobs").size(), size_t(Knob::Count_));

    const test::CliResult md = test::runKvlens("methods --markdown");
    ASSERT_EQ(md.exitCode, 0) << md.err;
    EXPECT_EQ(md.out.rfind("# Methods\n", 0), 0u);
    EXPECT_NE(md.out.find("| `chunkkv-kvpress` |"), std::string::npos);

    test::expectOneLineError(test::runKvlens("methods --json --markdown"), {"--json and --markdown are exclusive"});
    test::expectOneLineError(test::runKvlens("methods --csv"), {"--csv"});
}

TEST(MethodsCli, RunHelpListsEveryMethodOfTheTable) {
    const test::CliResult r = test::runKvlens("run --help");
    ASSERT_EQ(r.exitCode, 0) << r.err;
    for (const MethodInfo& m : methods::all())
        EXPECT_NE(r.out.find("    " + std::string(m.name) + ": "), std::string::npos) << m.name;
    EXPECT_NE(r.out.find("--scorer: what adakv, chunkkv, cake, perlayer, criticalkv, criticaladakv and chunkkv-kvpress"),
              std::string::npos)
        << r.out;
}

// select --help splits the table into the methods that select on tensors and those that need a
// model (a replay, statistics, W_o, a reconstruction, a second prefill): every method is in one.
TEST(MethodsCli, SelectHelpSplitsTheTableByWhatNeedsAModel) {
    const test::CliResult r = test::runKvlens("select --help");
    ASSERT_EQ(r.exitCode, 0) << r.err;
    // The text with its folds undone: one space between words.
    std::string flat;
    for (char c : r.out) {
        if (c == '\n') c = ' ';
        if (c != ' ' || (!flat.empty() && flat.back() != ' ')) flat += c;
    }
    const size_t model = flat.find("need a model");
    ASSERT_NE(model, std::string::npos) << r.out;
    const size_t split = flat.rfind(");", model);
    ASSERT_NE(split, std::string::npos) << r.out;
    for (const MethodInfo& m : methods::all()) {
        const std::string name = " " + std::string(m.name);
        // (W_o's value norms come from the files' o_proj.)
        const bool onTensors = (m.needs - NeedSet{Need::WindowVotes, Need::WoNorms}).empty();
        // Before the split (the tensors' list) or after it (the model's).
        if (onTensors) {
            EXPECT_LT(flat.find(name), split) << m.name;
        } else {
            EXPECT_NE(flat.find(name, split), std::string::npos) << m.name;
            EXPECT_EQ(flat.find(name + ","), flat.find(name + ",", split)) << m.name;
        }
    }
}

}  // namespace
}  // namespace kvlens
