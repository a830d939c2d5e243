// Scores of a generated answer against the expected ones, as the long-context
// benchmarks compute them, so a task's numbers compare with published tables:
// - normalizedAnswer, exactMatch, tokenF1: LongBench's qa_f1_score (SQuAD's
//   normalisation: lower case, ASCII punctuation dropped, the articles a/an/the
//   dropped, whitespace collapsed; F1 over the words' multiset);
// - rougeL: the ROUGE-L F of the `rouge` package LongBench calls (sentences split at
//   '.', words at ' ', the union LCS of each reference sentence with the candidate's
//   sentences, counted over distinct words; 0 when either side is empty);
// - containsAll: RULER's string_match_all (the share of expected strings found in the
//   answer, case-insensitively); containsAny: RULER's string_match_part.
// Each takes the best over the expected answers where the benchmark does (exactMatch,
// tokenF1, rougeL). Case folding is ASCII; other bytes compare as they are.
#pragma once

#include <string>
#include <vector>

namespace kvlens {

std::string normalizedAnswer(const std::string& s);
double exactMatch(const std::string& answer, const std::vector<std::string>& expected);
double tokenF1(const std::string& answer, const std::vector<std::string>& expected);
double rougeL(const std::string& answer, const std::vector<std::string>& expected);
double containsAll(const std::string& answer, const std::vector<std::string>& expected);
double containsAny(const std::string& answer, const std::vector<std::string>& expected);
// LongBench's classification_score (trec, lsht), best over `expected`: the classes
// named in the answer (as substrings), less those that are a proper substring of the
// expected class (with Python's skip of the element after each one removed while
// iterating, as LongBench's loop does); 1/(their count) when the expected class is
// among them, else 0.
double classificationScore(const std::string& answer, const std::vector<std::string>& expected,
                           const std::vector<std::string>& classes);
// The score `metric` ("em", "f1", "rouge", "contains", "classification") gives.
// Throws an Error naming an unknown metric.
double scoreAnswer(const std::string& metric, const std::string& answer, const std::vector<std::string>& expected,
                   const std::vector<std::string>& classes = {});

}  // namespace kvlens
