#include "engine/testbed/TestbedCurriculum.h"

#include <algorithm>
#include <cstdlib>
#include <set>
#include <sstream>

#include "core/Error.h"
#include "engine/eval/NeedleTask.h"

namespace kvlens {

TestbedCurriculum::TestbedCurriculum(const LlamaTokenizer& tokenizer, uint64_t seed, double lmWeight)
    : tokenizer_(tokenizer), rng_(seed), lmWeight_(lmWeight) {
    std::set<int32_t> ids;
    std::stringstream words(needleTaskBuiltInText() + " 0 1 2 3 4 5 6 7 8 9");
    for (std::string w; words >> w;) {
        w.erase(std::remove_if(w.begin(), w.end(), [](char c) { return c == '.' || c == ',' || c == ':' || c == '?'; }),
                w.end());
        const std::vector<int32_t> t = tokenizer_.encode(w, false);  // "▁w": the space prefix
        if (t.size() == 1) ids.insert(t[0]);
    }
    spanTokens_.assign(ids.begin(), ids.end());
    // Copies draw from 128 of them: the digits and the key words (what the needle
    // tasks look up and copy), the rest at random. Fewer distinct tokens, each seen
    // more often: the copy circuit forms sooner (measured), and one learned on 128
    // random words did not carry over to the rest of the vocabulary.
    std::vector<int32_t> keep;
    auto take = [&](const std::string& w) {
        const std::vector<int32_t> t = tokenizer_.encode(w, false);  // "▁w"
        if (t.size() == 1 && std::find(keep.begin(), keep.end(), t[0]) == keep.end()) keep.push_back(t[0]);
        const std::vector<int32_t> bare = tokenizer_.encode("-" + w, false);  // "▁-" "w", as in keys
        if (bare.size() == 2 && std::find(keep.begin(), keep.end(), bare[1]) == keep.end()) keep.push_back(bare[1]);
    };
    for (char d = '0'; d <= '9'; ++d) take(std::string(1, d));
    for (const std::string& w : needleKeyWords()) take(w);
    std::vector<int32_t> rest = spanTokens_;
    std::shuffle(rest.begin(), rest.end(), rng_);
    for (size_t i = 0; i < rest.size() && keep.size() < 128; ++i)
        if (std::find(keep.begin(), keep.end(), rest[i]) == keep.end()) keep.push_back(rest[i]);
    spanTokens_ = keep;
}

std::vector<TestbedStage> TestbedCurriculum::standardStages() {
    return {{64, 64, 300, 1.0, true},  {128, 32, 300, 0.5, false}, {256, 16, 600, 0.3, false},
            {512, 8, 400, 0.2, false}, {1024, 4, 250, 0.1, false}, {2048, 2, 100, 0.1, false},
            {4096, 1, 50, 0.1, false}};
}

std::vector<int32_t> TestbedCurriculum::needleRow(int64_t length, int64_t& answerStart) {
    NeedleSpec spec;
    const uint64_t k = below(10);
    spec.kind = k < 5 ? NeedleKind::Single : k < 8 ? NeedleKind::MultiKey : k < 9 ? NeedleKind::MultiValue
                                                                                  : NeedleKind::MultiQuery;
    spec.distractors = 1 + static_cast<int>(below(4));
    spec.values = 2 + static_cast<int>(below(2));
    spec.queries = 2;
    spec.depth = double(below(1001)) / 10.0;
    spec.seed = rng_();
    const int64_t room = length - 40;  // the answer's tokens and the next
    spec.tokens = room / 2 + static_cast<int64_t>(below(static_cast<uint64_t>(room - room / 2 + 1)));
    NeedleSample s;
    try {
        s = makeNeedleSample(spec, tokenizer_);
    } catch (const Error&) {  // too short for this many needles: one needle, the whole room
        spec.kind = NeedleKind::Single;
        spec.tokens = room;
        s = makeNeedleSample(spec, tokenizer_);
    }
    std::string answer;
    for (size_t i = 0; i < s.answers.size(); ++i)
        answer += (i == 0 ? "" : i + 1 == s.answers.size() ? " and " : ", ") + s.answers[i];
    // The answer as the needle wrote it ("is: 4821937."): the lead-in's "is" then ":"
    // makes the value the continuation of the needle's own ":", the lookup a copy.
    std::vector<int32_t> ids = tokenizer_.encode(s.prompt() + ": " + answer + ".\n", spec.addBos);
    if (ids.size() < s.tokens.size() || !std::equal(s.tokens.begin(), s.tokens.end(), ids.begin())) {
        throw Error("testbed: the answer changed the prompt's tokens");
    }
    answerStart = static_cast<int64_t>(s.tokens.size());
    return ids;
}

TestbedBatch TestbedCurriculum::batch(const TestbedStage& stage) {
    const int64_t B = stage.batch, T = stage.length;
    std::vector<int64_t> ids(B * (T + 1), tokenizer_.eosId());
    std::vector<float> weights(B * T, 0.0f);
    std::vector<uint8_t> answer(B * T, 0);
    TestbedBatch out;
    for (int64_t b = 0; b < B; ++b) {
        const bool copy = double(below(1000)) < stage.copyShare * 1000.0;
        out.copy.push_back(copy);
        int64_t* r = ids.data() + b * (T + 1);
        float* w = weights.data() + b * T;
        uint8_t* a = answer.data() + b * T;
        if (copy) {
            // Runs of random words, and copies of earlier stretches of the row at random
            // offsets and lengths: the weight is on each copy's tokens after its first
            // (which nothing predicts); no fixed distance predicts a copy.
            r[0] = tokenizer_.bosId();
            int64_t n = 1;
            if (stage.periodic) {
                // A random string of 4-24 words repeated to the end: each token after
                // the first period is the one after its previous occurrence.
                const int64_t P = 4 + static_cast<int64_t>(below(21));
                for (int64_t i = 1; i <= P && i < T + 1; ++i) r[i] = spanTokens_[below(spanTokens_.size())];
                for (int64_t i = P + 1; i < T + 1; ++i) {
                    r[i] = r[i - P];
                    if (i > P + 1) {
                        w[i - 1] = 1.0f;
                        a[i - 1] = 1;
                    }
                }
                continue;
            }
            while (n < T + 1) {
                const int64_t L = std::min<int64_t>(4 + static_cast<int64_t>(below(29)), T + 1 - n);
                if (n > 2 * L && below(2) == 0) {
                    const int64_t src = 1 + static_cast<int64_t>(below(static_cast<uint64_t>(n - L)));
                    for (int64_t i = 0; i < L; ++i) {
                        r[n + i] = r[src + i];
                        if (i > 0) {
                            w[n + i - 1] = 1.0f;
                            a[n + i - 1] = 1;
                        }
                    }
                } else {
                    for (int64_t i = 0; i < L; ++i) r[n + i] = spanTokens_[below(spanTokens_.size())];
                }
                n += L;
            }
            continue;
        }
        int64_t answerStart = 0;
        const std::vector<int32_t> row = needleRow(T + 1, answerStart);
        const int64_t n = std::min<int64_t>(static_cast<int64_t>(row.size()), T + 1);
        for (int64_t i = 0; i < n; ++i) r[i] = row[i];
        for (int64_t i = 0; i + 1 < n; ++i) w[i] = static_cast<float>(lmWeight_);
        for (int64_t i = answerStart - 1; i + 1 < n; ++i) {
            w[i] = 1.0f;
            a[i] = 1;
        }
    }
    const at::Tensor all = at::tensor(ids, at::kLong).view({B, T + 1});
    out.ids = all.narrow(1, 0, T).contiguous();
    out.targets = all.narrow(1, 1, T).contiguous();
    out.weights = at::tensor(weights, at::kFloat).view({B, T});
    out.answer = at::tensor(answer, at::kByte).view({B, T}).to(at::kBool);
    return out;
}

}  // namespace kvlens
