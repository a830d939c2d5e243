#include "engine/eval/NeedleTaskName.h"

#include <cstdio>

#include "core/Error.h"

namespace kvlens {

std::string NeedleTaskName::fillerHashOf(const std::string& text) {
    uint64_t h = 14695981039346656037ull;  // FNV-1a, 64 bits (offset basis, prime below)
    for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
    char hex[24];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
    return hex;
}

NeedleTaskName NeedleTaskName::of(NeedleKind kind, const std::string& filler, bool noBos) {
    NeedleTaskName n;
    n.kind = kind;
    n.fillerHash = filler.empty() ? std::string() : fillerHashOf(filler);
    n.noBos = noBos;
    return n;
}

std::string NeedleTaskName::str() const {
    std::string s = needleKindName(kind);
    if (!fillerHash.empty()) s += "+filler:" + fillerHash;
    if (noBos) s += "+no-bos";
    return s;
}

NeedleTaskName NeedleTaskName::parse(const std::string& name) {
    NeedleTaskName n;
    const size_t plus = name.find('+');
    try {
        n.kind = needleKindNamed(name.substr(0, plus));
    } catch (const Error&) {
        throw Error("task '" + name + "': '" + name.substr(0, plus) + "' is not a needle task");
    }
    size_t at = plus;
    while (at != std::string::npos) {
        const size_t next = name.find('+', at + 1);
        const std::string part = name.substr(at + 1, next == std::string::npos ? std::string::npos : next - at - 1);
        if (part == "no-bos" && !n.noBos) {
            n.noBos = true;
        } else if (part.rfind("filler:", 0) == 0 && part.size() == 7 + 16 && n.fillerHash.empty() &&
                   part.find_first_not_of("0123456789abcdef", 7) == std::string::npos) {
            n.fillerHash = part.substr(7);
        } else {
            throw Error("task '" + name + "': '+" + part + "' is not +filler:<16 hex digits> or +no-bos");
        }
        at = next;
    }
    return n;
}

NeedleSpec NeedleTaskName::sampleSpec(uint64_t taskSeed, int64_t length, double depth, int64_t sample,
                                      const std::string& filler, bool vocabularyAddsBos) const {
    const std::string hash = filler.empty() ? std::string() : fillerHashOf(filler);
    if (hash != fillerHash) {
        if (fillerHash.empty())
            throw Error("task '" + str() + "' ran on the built-in filler, not a --filler file (its hash " + hash + ")");
        throw Error("task '" + str() + "' ran on a filler file whose FNV-1a hash is " + fillerHash + ", not " +
                    (hash.empty() ? std::string("the built-in filler") : hash));
    }
    NeedleSpec spec;
    spec.kind = kind;
    spec.tokens = length;
    spec.depth = depth;
    spec.seed = taskSeed + static_cast<uint64_t>(sample) * 1000003u;
    spec.filler = filler;
    spec.addBos = !noBos && vocabularyAddsBos;
    return spec;
}

}  // namespace kvlens
