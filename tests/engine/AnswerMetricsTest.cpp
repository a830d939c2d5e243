// The task metrics against cases computed by hand from the benchmarks' definitions.
#include <gtest/gtest.h>

#include "core/Error.h"
#include "engine/eval/AnswerMetrics.h"

namespace kvlens {
namespace {

TEST(AnswerMetrics, NormalisationDropsCasePunctuationArticlesAndSpaces) {
    EXPECT_EQ(normalizedAnswer("  The Cat, sat on a   mat!"), "cat sat on mat");
    EXPECT_EQ(normalizedAnswer("Anthem of the theatre"), "anthem of theatre");  // whole words only
    EXPECT_EQ(normalizedAnswer("An"), "");
}

TEST(AnswerMetrics, ExactMatchAndTokenF1AsLongBench) {
    EXPECT_EQ(exactMatch("the Answer.", {"answer"}), 1.0);
    EXPECT_EQ(exactMatch("answers", {"answer"}), 0.0);
    EXPECT_EQ(exactMatch("Paris", {"London", "paris"}), 1.0);  // the best expected answer
    // "cat sat on mat" against "cat on mat": 3 common of 4 and 3 words.
    EXPECT_NEAR(tokenF1("the cat sat on the mat", {"a cat on a mat"}), 2 * 0.75 / 1.75, 1e-12);
    // Multisets: min(2, 1) cats and min(1, 2) dogs in common.
    EXPECT_NEAR(tokenF1("cat cat dog", {"cat dog dog"}), 2.0 / 3.0, 1e-12);
    EXPECT_EQ(tokenF1("", {"x"}), 0.0);
    EXPECT_EQ(tokenF1("x y", {"z", "y"}), 2 * 0.5 * 1.0 / 1.5);
}

TEST(AnswerMetrics, RougeLIsTheRougePackagesUnionLcsOverDistinctWords) {
    // LCS "the cat was under the bed": 5 distinct words of the reference's 5 and of the
    // candidate's 6.
    EXPECT_NEAR(rougeL("the cat was found under the bed", {"the cat was under the bed"}),
                2.0 * (5.0 / 6.0) / (5.0 / 6.0 + 1.0 + 1e-8), 1e-12);
    // Two candidate sentences: the reference's LCS with each ("a", then "c") unite.
    EXPECT_NEAR(rougeL("a b. c d", {"a c"}), 2.0 * 0.5 / (1.5 + 1e-8), 1e-12);
    EXPECT_EQ(rougeL("", {"a"}), 0.0);
    EXPECT_EQ(rougeL("...", {"a"}), 0.0);  // no sentences
    EXPECT_EQ(rougeL("x", {"y"}), 0.0);
}

TEST(AnswerMetrics, ContainsAsRulersStringMatch) {
    EXPECT_NEAR(containsAll("the numbers are 123 and 456", {"123", "456", "789"}), 2.0 / 3.0, 1e-12);
    EXPECT_EQ(containsAny("the numbers are 123 and 456", {"789", "456"}), 1.0);
    EXPECT_EQ(containsAll("xABCx", {"abc"}), 1.0);
    EXPECT_EQ(containsAny("nothing", {"else"}), 0.0);
    EXPECT_EQ(containsAll("a", {}), 0.0);
}

}  // namespace
TEST(AnswerMetrics, ClassificationAsLongBench) {
    const std::vector<std::string> trec = {"Abbreviation", "Entity", "Human being", "Location"};
    EXPECT_EQ(classificationScore("Location", {"Location"}, trec), 1.0);
    EXPECT_EQ(classificationScore("Human being or Location", {"Location"}, trec), 0.5);
    EXPECT_EQ(classificationScore("Entity", {"Location"}, trec), 0.0);
    // A class inside the expected one is not counted against it...
    EXPECT_EQ(classificationScore("fast food", {"fast food"}, {"food", "fast food"}), 1.0);
    // ...but, as LongBench's loop removes while iterating, the class after a removed one
    // is not examined: "ab" stays, 1/2.
    EXPECT_EQ(classificationScore("abc", {"abc"}, {"a", "ab", "abc"}), 0.5);
    EXPECT_EQ(scoreAnswer("classification", "Entity", {"Entity"}, trec), 1.0);
    EXPECT_EQ(scoreAnswer("contains", "it is 42 and 7", {"42", "7"}), 1.0);
    EXPECT_EQ(scoreAnswer("em", "The Answer.", {"answer"}), 1.0);
    try {
        scoreAnswer("bleu", "a", {"a"});
        FAIL();
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "unknown metric 'bleu' (em, f1, rouge, contains, classification)");
    }
}

}  // namespace kvlens
