#include "engine/eval/AnswerMetrics.h"

#include <algorithm>
#include <map>
#include <set>

#include "core/Error.h"

namespace kvlens {
namespace {

char lowerAscii(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

std::string lower(const std::string& s) {
    std::string out = s;
    for (char& c : out) c = lowerAscii(c);
    return out;
}

bool isPunct(char c) {  // Python's string.punctuation
    static const std::string p = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~";
    return p.find(c) != std::string::npos;
}

bool isSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

// A regex word character (\w) for ASCII; non-ASCII bytes count as letters.
bool isWord(char c) {
    const unsigned char u = static_cast<unsigned char>(c);
    return u >= 0x80 || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

std::vector<std::string> splitWhitespace(const std::string& s) {
    std::vector<std::string> out;
    std::string cur;
    for (char c : s) {
        if (isSpace(c)) {
            if (!cur.empty()) out.push_back(cur);
            cur.clear();
        } else {
            cur += c;
        }
    }
    if (!cur.empty()) out.push_back(cur);
    return out;
}

std::string joinSpaces(const std::vector<std::string>& words) {
    std::string out;
    for (size_t i = 0; i < words.size(); ++i) out += (i ? " " : "") + words[i];
    return out;
}

double f1Words(const std::vector<std::string>& answer, const std::vector<std::string>& expected) {
    std::map<std::string, int> a, e;
    for (const std::string& w : answer) ++a[w];
    for (const std::string& w : expected) ++e[w];
    int same = 0;
    for (const auto& [w, n] : a) {
        const auto it = e.find(w);
        if (it != e.end()) same += std::min(n, it->second);
    }
    if (same == 0) return 0.0;
    const double p = double(same) / double(answer.size()), r = double(same) / double(expected.size());
    return 2.0 * p * r / (p + r);
}

// The rouge package's sentences: pieces between '.', kept when not empty, their
// whitespace collapsed; words: split at ' ' (a blank piece is one empty word).
std::vector<std::vector<std::string>> rougeSentences(const std::string& s) {
    std::vector<std::vector<std::string>> out;
    size_t start = 0;
    while (start <= s.size()) {
        size_t dot = s.find('.', start);
        if (dot == std::string::npos) dot = s.size();
        const std::string piece = s.substr(start, dot - start);
        if (!piece.empty()) {
            const std::vector<std::string> words = splitWhitespace(piece);
            out.push_back(words.empty() ? std::vector<std::string>{""} : words);
        }
        start = dot + 1;
    }
    return out;
}

// The words of one longest common subsequence of x and y, traced back from the end
// (on a tie, y's index steps back first), as the rouge package reconstructs it.
std::set<std::string> lcsWords(const std::vector<std::string>& x, const std::vector<std::string>& y) {
    const size_t n = x.size(), m = y.size();
    std::vector<std::vector<int>> t(n + 1, std::vector<int>(m + 1, 0));
    for (size_t i = 1; i <= n; ++i)
        for (size_t j = 1; j <= m; ++j)
            t[i][j] = x[i - 1] == y[j - 1] ? t[i - 1][j - 1] + 1 : std::max(t[i - 1][j], t[i][j - 1]);
    std::set<std::string> out;
    size_t i = n, j = m;
    while (i > 0 && j > 0) {
        if (x[i - 1] == y[j - 1]) {
            out.insert(x[i - 1]);
            --i;
            --j;
        } else if (t[i - 1][j] > t[i][j - 1]) {
            --i;
        } else {
            --j;
        }
    }
    return out;
}

double rougeLOne(const std::string& answer, const std::string& expected) {
    const auto hyp = rougeSentences(answer), ref = rougeSentences(expected);
    if (hyp.empty() || ref.empty()) return 0.0;
    std::set<std::string> hypWords, refWords, unionWords;
    for (const auto& s : hyp) hypWords.insert(s.begin(), s.end());
    for (const auto& s : ref) refWords.insert(s.begin(), s.end());
    for (const auto& r : ref)
        for (const auto& h : hyp) {
            const std::set<std::string> l = lcsWords(r, h);
            unionWords.insert(l.begin(), l.end());
        }
    const double llcs = double(unionWords.size());
    const double rec = llcs / double(refWords.size()), prec = llcs / double(hypWords.size());
    return 2.0 * (prec * rec) / (prec + rec + 1e-8);
}

template <typename F>
double best(const std::vector<std::string>& expected, F&& f) {
    double b = 0.0;
    for (const std::string& e : expected) b = std::max(b, f(e));
    return b;
}

}  // namespace

std::string normalizedAnswer(const std::string& s) {
    std::string t;
    for (char c : s)
        if (!isPunct(c)) t += lowerAscii(c);
    std::string u;  // the articles, as whole words, become spaces
    for (size_t i = 0; i < t.size();) {
        if (!isWord(t[i])) {
            u += t[i++];
            continue;
        }
        size_t j = i;
        while (j < t.size() && isWord(t[j])) ++j;
        const std::string w = t.substr(i, j - i);
        u += (w == "a" || w == "an" || w == "the") ? std::string(" ") : w;
        i = j;
    }
    return joinSpaces(splitWhitespace(u));
}

double exactMatch(const std::string& answer, const std::vector<std::string>& expected) {
    const std::string a = normalizedAnswer(answer);
    return best(expected, [&](const std::string& e) { return a == normalizedAnswer(e) ? 1.0 : 0.0; });
}

double tokenF1(const std::string& answer, const std::vector<std::string>& expected) {
    const std::vector<std::string> a = splitWhitespace(normalizedAnswer(answer));
    return best(expected, [&](const std::string& e) { return f1Words(a, splitWhitespace(normalizedAnswer(e))); });
}

double rougeL(const std::string& answer, const std::vector<std::string>& expected) {
    return best(expected, [&](const std::string& e) { return rougeLOne(answer, e); });
}

double containsAll(const std::string& answer, const std::vector<std::string>& expected) {
    if (expected.empty()) return 0.0;
    const std::string a = lower(answer);
    int found = 0;
    for (const std::string& e : expected) found += a.find(lower(e)) != std::string::npos;
    return double(found) / double(expected.size());
}

double containsAny(const std::string& answer, const std::vector<std::string>& expected) {
    const std::string a = lower(answer);
    return best(expected, [&](const std::string& e) { return a.find(lower(e)) != std::string::npos ? 1.0 : 0.0; });
}

double classificationScore(const std::string& answer, const std::vector<std::string>& expected,
                           const std::vector<std::string>& classes) {
    double best = 0.0;
    for (const std::string& truth : expected) {
        std::vector<std::string> matches;
        for (const std::string& c : classes)
            if (answer.find(c) != std::string::npos) matches.push_back(c);
        // for match_term in em_match_list: if ... : em_match_list.remove(match_term)
        for (size_t i = 0; i < matches.size(); ++i) {
            const std::string term = matches[i];
            if (truth.find(term) != std::string::npos && term != truth) {
                matches.erase(std::find(matches.begin(), matches.end(), term));  // the first occurrence
            }
        }
        if (std::find(matches.begin(), matches.end(), truth) != matches.end())
            best = std::max(best, 1.0 / double(matches.size()));
    }
    return best;
}

double scoreAnswer(const std::string& metric, const std::string& answer, const std::vector<std::string>& expected,
                   const std::vector<std::string>& classes) {
    if (metric == "em") return exactMatch(answer, expected);
    if (metric == "f1") return tokenF1(answer, expected);
    if (metric == "rouge") return rougeL(answer, expected);
    if (metric == "contains") return containsAll(answer, expected);
    if (metric == "classification") return classificationScore(answer, expected, classes);
    throw Error("unknown metric '" + metric + "' (em, f1, rouge, contains, classification)");
}

}  // namespace kvlens
