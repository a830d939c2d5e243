// Mutation fuzzer for eval's LongBench .jsonl reader (readLongBenchRecords): valid
// record files are corrupted byte- and token-wise (the format's field names, empty
// strings, lists, overflowing numbers, line breaks among the mutations); every input
// must be read whole or refused with one kvlens::Error line that names the file, within
// 10 s. Built with ASan/UBSan, so an out-of-bounds read or an overflow aborts it too.
// Deterministic for a given --seed; a failing input is saved as jsonl_fuzz_failure.jsonl.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <string>
#include <vector>

#include "FuzzMutator.h"
#include "core/Error.h"
#include "engine/eval/LongBenchRecords.h"

namespace {

const std::vector<std::string> kSeeds = {
    "{\"context\": \"Lily went to the park.\", \"input\": \"Where did Lily go?\", \"answers\": [\"the park\"], "
    "\"length\": 5, \"dataset\": \"hotpotqa\", \"all_classes\": null, \"_id\": \"a1\"}\n"
    "{\"context\": \"A B C\", \"question\": \"Which class?\", \"answers\": \"Entity\", \"dataset\": \"trec\", "
    "\"all_classes\": [\"Entity\", \"Location\"]}\r\n\n",
    "{\"context\": \"The key is 7.\", \"input\": \"What is the key?\", \"answers\": [\"7\", \"seven\"], "
    "\"dataset\": \"niah_single_1\", \"length\": 4}\n",
};

}  // namespace

int main(int argc, char** argv) {
    uint64_t seed = 1, iterations = 20000;
    for (int i = 1; i < argc; ++i) {
        if (!kvlens::test::fuzzCountFlag(argc, argv, i, seed, iterations)) {
            std::fprintf(stderr, "usage: kvlens_jsonl_fuzz [--seed N] [--iterations N]\n");
            return 2;
        }
    }
    const std::string path = "jsonl_fuzz_input.jsonl";
    auto write = [&](const std::string& text) { std::ofstream(path, std::ios::binary | std::ios::trunc) << text; };
    for (const std::string& s : kSeeds) {  // the seeds themselves are read whole
        write(s);
        try {
            kvlens::readLongBenchRecords(path);
        } catch (const std::exception& e) {
            std::fprintf(stderr, "a seed does not parse: %s\n", e.what());
            return 1;
        }
    }
    kvlens::test::FuzzMutator mut(seed, {"\n", "\r\n", "\"answers\"", "\"all_classes\"", "\"length\"", "\"dataset\"",
                                         "\"context\"", "\"input\"", "\"question\"", "\"\"", "[]", "[\"\"]", "1e999",
                                         "-1e999", "1.5", "-3", "{}", "[null]", "\"\\u00e9\"", " "});
    const auto start = std::chrono::steady_clock::now();
    uint64_t accepted = 0, refused = 0, records = 0;
    double slowest = 0.0;
    for (uint64_t it = 0; it < iterations; ++it) {
        std::string input = kSeeds[it % kSeeds.size()];
        mut.mutate(input);
        write(input);
        const auto t0 = std::chrono::steady_clock::now();
        auto fail = [&](const std::string& why) {
            std::fprintf(stderr, "iteration %llu: %s\n", (unsigned long long)it, why.c_str());
            std::ofstream("jsonl_fuzz_failure.jsonl", std::ios::binary) << input;
            return 1;
        };
        try {
            const auto read = kvlens::readLongBenchRecords(path);
            for (const kvlens::LongBenchRecord& r : read) {
                (void)kvlens::longBenchMetric(r.dataset);
                for (const std::string& answer : r.answers)
                    if (answer.find_first_not_of(" \t\r\n") == std::string::npos) return fail("an empty answer was accepted");
                if (r.length < -1) return fail("a negative length was accepted");
            }
            records += read.size();
            ++accepted;
        } catch (const kvlens::Error& e) {
            const std::string m = e.what();
            if (m.empty() || m.find('\n') != std::string::npos) return fail("a message that is not one line: '" + m + "'");
            if (m.rfind(path + ":", 0) != 0) return fail("a message that does not name the file: '" + m + "'");
            ++refused;
        } catch (const std::exception& e) {
            return fail(std::string(e.what()) + " thrown instead of kvlens::Error");
        }
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        slowest = std::max(slowest, s);
        if (s > 10.0) return fail("took " + std::to_string(s) + " s");
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("jsonl fuzz: %llu inputs, %llu read whole (%llu records), %llu refused with one line naming the "
                "file, slowest %.3f s, %.1f s in all\n",
                (unsigned long long)iterations, (unsigned long long)accepted, (unsigned long long)records,
                (unsigned long long)refused, slowest, s);
    std::remove(path.c_str());
    return 0;
}
