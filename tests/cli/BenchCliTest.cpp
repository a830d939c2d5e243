// kvlens bench --methods: the KV-cache comparison's figures (bytes exact,
// timings only present and positive) and its one-line errors.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli/CliHarness.h"

namespace {

using kvlens::test::expectOneLineError;
using kvlens::test::runKvlens;

TEST(BenchCli, MethodsCompareKvBytesPerPromptLength) {
    const auto r = runKvlens(
        "bench --model random:tiny:layers=1 --dtype f32 --prompt-len 64,96 --methods "
        "full,snapkv,adakv "
        "--budget 40 --window 8 -n 3 --reps 2 --warmup 1 --bandwidth 20 --json");
    ASSERT_EQ(r.exitCode, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["device"], "cpu");
    EXPECT_EQ(j["dtype"], "f32");
    EXPECT_EQ(j["decode_tokens"], 3);
    EXPECT_EQ(j["bandwidth_gbs"], 20.0);
    const int64_t weights = j["weights_bytes"];
    EXPECT_GT(weights, 0);
    ASSERT_EQ(j["prompts"].size(), 2u);
    // random:tiny: 4 KV heads of dimension 32; one layer, f32: K and V of one
    // entry of every KV head take 2 * 4 * 32 * 4 bytes.
    const int64_t entry = 2 * 4 * 32 * 4;
    for (size_t i = 0; i < 2; ++i) {
        const auto& p = j["prompts"][i];
        const int64_t P = i == 0 ? 64 : 96;
        EXPECT_EQ(p["prompt_len"], P);
        EXPECT_GT(p["prefill_tok_s"]["median"].get<double>(), 0.0);
        EXPECT_GT(p["plain_decode_ms_per_token"].get<double>(), 0.0);
        EXPECT_EQ(p["plain_kv_bytes"], P * entry);
        EXPECT_TRUE(p["prefill_peak_bytes"].is_null());  // no GPU
        ASSERT_EQ(p["methods"].size(), 3u);
        for (const auto& m : p["methods"]) {
            EXPECT_GT(m["decode_ms_per_token"].get<double>(), 0.0) << m;
            EXPECT_GE(m["select_ms"].get<double>(), 0.0) << m;
            EXPECT_TRUE(m["peak_bytes"].is_null()) << m;
            // A step reads every weight and the cache (mean of before and after the 3 steps).
            const double kv = m["kv_bytes"].get<double>();
            EXPECT_DOUBLE_EQ(m["bytes_read_per_token"].get<double>(),
                             double(weights) + kv + 1.5 * entry)
                << m;
            EXPECT_NEAR(m["ideal_decode_ms_per_token"].get<double>(),
                        1e3 * m["bytes_read_per_token"].get<double>() / 20e9, 1e-9)
                << m;
        }
        EXPECT_EQ(p["methods"][0]["method"], "full");
        EXPECT_EQ(p["methods"][0]["kv_bytes"], P * entry);
        EXPECT_EQ(p["methods"][1]["method"], "snapkv");
        EXPECT_EQ(p["methods"][1]["budget"], 40);
        EXPECT_EQ(p["methods"][1]["kv_bytes"], 40 * entry);
        // AdaKV shares the layer's entries among heads: the same total.
        EXPECT_EQ(p["methods"][2]["kv_bytes"], 40 * entry);
    }
}

TEST(BenchCli, MethodsTableNamesEveryColumn) {
    const auto r = runKvlens(
        "bench --model random:tiny:layers=1 --prompt-len 48 --methods full,snapkv --budget 16 "
        "--window 4 "
        "-n 1 --reps 1 --warmup 0");
    ASSERT_EQ(r.exitCode, 0) << r.err;
    for (const char* column :
         {"select ms", "decode ms/tok", "ideal ms/tok", "KV MB", "peak MB", "prompt 48: prefill"}) {
        EXPECT_NE(r.out.find(column), std::string::npos) << column << " missing in:\n" << r.out;
    }
}

TEST(BenchCli, MethodsErrorsAreOneLine) {
    const std::string model = "bench --model random:tiny:layers=1:ctx=128 ";
    expectOneLineError(runKvlens(model + "--methods snapkv,bogus --budget 16"),
                       {"--methods", "'bogus'", "snapkv"});
    expectOneLineError(runKvlens(model + "--methods snapkv --prompt-len 64"), {"--budget"});
    expectOneLineError(runKvlens(model + "--methods full --prompt-len 64,x1"),
                       {"--prompt-len", "'x1'"});
    expectOneLineError(runKvlens(model + "--methods full --prompt-len 64,200 -n 4"),
                       {"--prompt-len 200", "exceeds the model's context of 128"});
    expectOneLineError(runKvlens(model + "--methods full --prompt-len 64 --bandwidth=0"),
                       {"--bandwidth", "'0'", "positive"});
    expectOneLineError(runKvlens(model + "--prompt-len 64 --budget 16"),
                       {"--budget needs --methods"});
    expectOneLineError(
        runKvlens(model + "--methods snapkv --prompt-len 64 --budget 16 --window 16"),
        {"--window"});
}

}  // namespace
