// LongBench .jsonl records: fields read as LongBench exports them, each bad line named
// by its number, the metric of each dataset.
#include <gtest/gtest.h>

#include <fstream>

#include "core/Error.h"
#include "engine/eval/LongBenchRecords.h"
#include "support/TinyModelFile.h"

namespace kvlens {
namespace {

std::string file(const std::string& name, const std::string& text) {
    const std::string path = test::testOutputPath(name);
    std::ofstream(path, std::ios::binary) << text;
    return path;
}

std::string message(const std::string& path) {
    try {
        readLongBenchRecords(path);
    } catch (const Error& e) {
        return e.what();
    }
    return "no error";
}

TEST(LongBenchRecords, ReadsTheFieldsOfEachLine) {
    const std::string path = file("lb_ok.jsonl",
                                  "{\"input\": \"Who?\", \"context\": \"Ann met Bob.\", \"answers\": [\"Bob\"], "
                                  "\"length\": 3, \"dataset\": \"hotpotqa\", \"all_classes\": null}\n"
                                  "\n"
                                  "{\"question\": \"Q2\", \"context\": \"C2\", \"answers\": \"A2\", "
                                  "\"all_classes\": [\"x\", \"y\"]}\r\n");
    const auto r = readLongBenchRecords(path);
    ASSERT_EQ(r.size(), 2u);
    EXPECT_EQ(r[0].line, 1);
    EXPECT_EQ(r[0].input, "Who?");
    EXPECT_EQ(r[0].context, "Ann met Bob.");
    EXPECT_EQ(r[0].answers, std::vector<std::string>{"Bob"});
    EXPECT_EQ(r[0].length, 3);
    EXPECT_EQ(r[0].dataset, "hotpotqa");
    EXPECT_TRUE(r[0].allClasses.empty());
    EXPECT_EQ(r[1].line, 3);
    EXPECT_EQ(r[1].input, "Q2");
    EXPECT_EQ(r[1].answers, std::vector<std::string>{"A2"});
    EXPECT_EQ(r[1].allClasses, (std::vector<std::string>{"x", "y"}));
    EXPECT_EQ(r[1].length, -1);
}

TEST(LongBenchRecords, EachBadLineIsNamed) {
    const std::string good = "{\"input\": \"q\", \"context\": \"c\", \"answers\": [\"a\"]}\n";
    EXPECT_EQ(message(file("lb1.jsonl", good + "{not json\n")), test::testOutputPath("lb1.jsonl") + ":2: not JSON");
    EXPECT_EQ(message(file("lb2.jsonl", good + "[1, 2]\n")), test::testOutputPath("lb2.jsonl") + ":2: not a JSON object");
    EXPECT_EQ(message(file("lb8.jsonl", "\n\n")), test::testOutputPath("lb8.jsonl") + ": no records");
    EXPECT_EQ(message("/nonexistent/x.jsonl").rfind("/nonexistent/x.jsonl: cannot read", 0), 0u);
    // A folder opens as a stream on Linux and reads as nothing: named as a folder.
    EXPECT_EQ(message(test::testOutputPath("")), test::testOutputPath("") + ": a folder, not a .jsonl file of records");
}

// Every field of a record with its wrong types, empty values, out-of-range numbers and
// overflows: each is one error naming the file, the line and the field. Before, a
// string all_classes became one class (the record scored 0), "answers": [""] matched
// any output under contains, "dataset": 7 was ignored (the metric fell back to exact
// match) and 1e999 ended in nlohmann's own out_of_range message.
TEST(LongBenchRecords, EveryFieldHasATypeAndARange) {
    const std::string base = "\"context\": \"c\", \"input\": \"q\", \"answers\": [\"a\"]";
    struct Case {
        std::string record, message;
    };
    const std::vector<Case> cases = {
        {"{\"input\": \"q\", \"answers\": [\"a\"]}", "context: missing (expected a string)"},
        {"{\"context\": 5, \"input\": \"q\", \"answers\": [\"a\"]}", "context: expected a string, got number"},
        {"{\"context\": null, \"input\": \"q\", \"answers\": [\"a\"]}", "context: expected a string, got null"},
        {"{\"context\": \"c\", \"answers\": [\"a\"]}", "input: missing (expected a string; or 'question')"},
        {"{\"context\": \"c\", \"input\": [\"q\"], \"answers\": [\"a\"]}", "input: expected a string, got array"},
        {"{\"context\": \"c\", \"question\": true, \"answers\": [\"a\"]}", "question: expected a string, got boolean"},
        {"{\"context\": \"c\", \"input\": \"q\"}", "answers: missing (expected a string or a list of strings)"},
        {"{\"context\": \"c\", \"input\": \"q\", \"answers\": 3}", "answers: expected a string or a list of strings, got number"},
        {"{\"context\": \"c\", \"input\": \"q\", \"answers\": {\"a\": 1}}",
         "answers: expected a string or a list of strings, got object"},
        {"{\"context\": \"c\", \"input\": \"q\", \"answers\": [1]}",
         "answers: expected a string or a list of strings, got a list holding a number"},
        {"{\"context\": \"c\", \"input\": \"q\", \"answers\": []}", "answers: an empty list"},
        {"{\"context\": \"c\", \"input\": \"q\", \"answers\": [\"\"]}", "answers: an empty string (it would match any output)"},
        {"{\"context\": \"c\", \"input\": \"q\", \"answers\": \"\"}", "answers: an empty string (it would match any output)"},
        {"{\"context\": \"c\", \"input\": \"q\", \"answers\": [\"a\", \" \"]}",
         "answers: an empty string (it would match any output)"},
        {"{" + base + ", \"all_classes\": \"x y\"}", "all_classes: expected a list of strings, got string"},
        {"{" + base + ", \"all_classes\": 7}", "all_classes: expected a list of strings, got number"},
        {"{" + base + ", \"all_classes\": [\"x\", null]}", "all_classes: expected a list of strings, got a list holding a null"},
        {"{" + base + ", \"all_classes\": []}", "all_classes: an empty list (null when the task has none)"},
        {"{" + base + ", \"all_classes\": [\"x\", \"\"]}", "all_classes: an empty string (it would match any output)"},
        {"{" + base + ", \"dataset\": 7}", "dataset: expected a string (the task's name), got number"},
        {"{" + base + ", \"dataset\": \"\"}", "dataset: an empty name (leave it out, or null)"},
        {"{" + base + ", \"length\": \"12\"}", "length: expected a whole number of words, got string"},
        {"{" + base + ", \"length\": 1.5}", "length: expected a whole number of words, got number"},
        {"{" + base + ", \"length\": -3}", "length: expected a number of words >= 0, got -3"},
        {"{" + base + ", \"length\": 18446744073709551615}",
         "length: expected a number of words >= 0, got 18446744073709551615"},
        {"{" + base + ", \"length\": 1e999}", "not JSON: a number too large for a double"},
        {"{" + base + ", \"_id\": 1e999}", "not JSON: a number too large for a double"},
    };
    int i = 0;
    for (const Case& c : cases) {
        const std::string name = "lb_field" + std::to_string(i++) + ".jsonl";
        const std::string path = file(name, "{" + base + "}\n" + c.record + "\n");
        EXPECT_EQ(message(path), path + ":2: " + c.message) << c.record;
    }
    // The accepted forms beside them: null for the optional fields, a one-string answer.
    const auto r = readLongBenchRecords(
        file("lb_nulls.jsonl", "{" + base + ", \"all_classes\": null, \"dataset\": null, \"length\": null}\n"));
    ASSERT_EQ(r.size(), 1u);
    EXPECT_TRUE(r[0].allClasses.empty());
    EXPECT_TRUE(r[0].dataset.empty());
    EXPECT_EQ(r[0].length, -1);
}

TEST(LongBenchRecords, EachDatasetHasItsMetric) {
    EXPECT_EQ(longBenchMetric("hotpotqa"), "f1");
    EXPECT_EQ(longBenchMetric("qasper_e"), "f1");
    EXPECT_EQ(longBenchMetric("gov_report"), "rouge");
    EXPECT_EQ(longBenchMetric("trec"), "classification");
    EXPECT_EQ(longBenchMetric("niah_single_1"), "contains");
    EXPECT_EQ(longBenchMetric("passage_retrieval_en"), "em");
}

}  // namespace
}  // namespace kvlens
