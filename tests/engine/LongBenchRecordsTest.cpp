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
    EXPECT_EQ(message(file("lb3.jsonl", "{\"input\": \"q\", \"answers\": [\"a\"]}\n")),
              test::testOutputPath("lb3.jsonl") + ":1: no 'context' string");
    EXPECT_EQ(message(file("lb4.jsonl", "{\"context\": \"c\", \"answers\": [\"a\"]}\n")),
              test::testOutputPath("lb4.jsonl") + ":1: no 'input' (or 'question') string");
    EXPECT_EQ(message(file("lb5.jsonl", "{\"context\": \"c\", \"input\": \"q\"}\n")),
              test::testOutputPath("lb5.jsonl") + ":1: no 'answers'");
    EXPECT_EQ(message(file("lb6.jsonl", "{\"context\": \"c\", \"input\": \"q\", \"answers\": [1]}\n")),
              test::testOutputPath("lb6.jsonl") + ":1: 'answers' holds a value that is not a string");
    EXPECT_EQ(message(file("lb7.jsonl", "{\"context\": \"c\", \"input\": \"q\", \"answers\": [], \"length\": 1}\n")),
              test::testOutputPath("lb7.jsonl") + ":1: 'answers' is empty");
    EXPECT_EQ(message(file("lb8.jsonl", "\n\n")), test::testOutputPath("lb8.jsonl") + ": no records");
    EXPECT_EQ(message("/nonexistent/x.jsonl").rfind("/nonexistent/x.jsonl: cannot read", 0), 0u);
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
