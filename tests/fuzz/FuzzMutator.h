// The mutations the fuzzers apply to a text input (a JSON file, a .jsonl file, a
// header): byte flips, insertions of tokens that break parsers (JSON punctuation,
// overflowing and negative numbers, bad escapes, the format's own field names),
// deletions, truncation, and numbers replaced by extreme ones. Deterministic for a seed.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

namespace kvlens::test {

// The flags every fuzzer takes: if argv[i] is --seed N or --iterations N, reads N (a
// whole decimal number, else exits 2 naming the flag), advances i past it and returns true.
inline bool fuzzCountFlag(int argc, char** argv, int& i, uint64_t& seed, uint64_t& iterations) {
    const std::string a = argv[i];
    if ((a != "--seed" && a != "--iterations") || i + 1 >= argc) return false;
    char* end = nullptr;
    const char* text = argv[++i];
    const unsigned long long n = std::strtoull(text, &end, 10);
    if (*text < '0' || *text > '9' || *end != '\0') {
        std::fprintf(stderr, "%s: %s is not a whole number\n", a.c_str(), text);
        std::exit(2);
    }
    (a == "--seed" ? seed : iterations) = n;
    return true;
}

class FuzzMutator {
public:
    // `extraTokens`: the format's own words, inserted beside the generic ones.
    explicit FuzzMutator(uint64_t seed, std::vector<std::string> extraTokens = {})
        : rng_(seed), extra_(std::move(extraTokens)) {}
    size_t below(size_t n) { return n == 0 ? 0 : std::uniform_int_distribution<size_t>(0, n - 1)(rng_); }

    // Byte flips, JSON-token swaps, truncation, length-field lies.
    void mutate(std::string& s) {
        static const char* tokens[] = {"\"", "{", "}", "[", "]", ",", ":", "-1", "0", "1e308", "null", "true",
                                       "\"F64\"", "\"BF16\"", "4294967296", "18446744073709551615", "\\u0000",
                                       "\\ud800", "\"Regex\"", "(", ")", "\\p{", "*", "\"type\""};
        constexpr size_t kTokens = sizeof tokens / sizeof *tokens;
        const size_t n = 1 + below(4);
        for (size_t k = 0; k < n && !s.empty(); ++k) {
            switch (below(5)) {
                case 0:
                    s[below(s.size())] = static_cast<char>(below(256));
                    break;
                case 1: {
                    const size_t pick = below(kTokens + extra_.size());
                    s.insert(below(s.size() + 1), pick < kTokens ? std::string(tokens[pick]) : extra_[pick - kTokens]);
                    break;
                }
                case 2:
                    s.erase(below(s.size()), 1 + below(8));
                    break;
                case 3:
                    s.resize(below(s.size() + 1));
                    break;
                default: {
                    // Replace a number with another.
                    const size_t at = s.find_first_of("0123456789", below(s.size()));
                    if (at != std::string::npos) s.replace(at, 1, tokens[7 + below(8)]);
                }
            }
        }
    }

private:
    std::mt19937_64 rng_;
    std::vector<std::string> extra_;
};

}  // namespace kvlens::test
