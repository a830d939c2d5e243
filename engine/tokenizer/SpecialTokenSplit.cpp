// Longest-first partition of a text by special tokens.
#include "engine/tokenizer/SpecialTokenSplit.h"

#include <cctype>

namespace kvlens {

std::vector<SpecialTokenSplit::Fragment> SpecialTokenSplit::split(
    std::string_view text, const std::vector<int32_t>& ids, const std::vector<std::string>& texts,
    const std::vector<bool>& rstrip, const std::vector<bool>& lstrip) {
    std::vector<Fragment> fragments{{0, text.size(), -1}};
    for (int32_t id : ids) {
        const std::string& needle = texts[size_t(id)];
        if (needle.empty()) continue;
        std::vector<Fragment> next;
        next.reserve(fragments.size());
        for (const Fragment& f : fragments) {
            if (f.token >= 0) {
                next.push_back(f);
                continue;
            }
            const size_t end = f.offset + f.length;
            const std::string_view area = text.substr(0, end);
            size_t pos = f.offset;
            while (true) {
                const size_t hit = area.find(needle, pos);
                if (hit == std::string_view::npos) break;
                size_t before = hit;
                if (size_t(id) < lstrip.size() && lstrip[size_t(id)]) {
                    while (before > pos && std::isspace(static_cast<unsigned char>(text[before - 1]))) --before;
                }
                if (before > pos) next.push_back(Fragment{pos, before - pos, -1});
                next.push_back(Fragment{hit, needle.size(), id});
                pos = hit + needle.size();
                if (size_t(id) < rstrip.size() && rstrip[size_t(id)]) {
                    while (pos < end && std::isspace(static_cast<unsigned char>(text[pos]))) ++pos;
                }
            }
            if (pos < end) next.push_back(Fragment{pos, end - pos, -1});
        }
        fragments.swap(next);
    }
    return fragments;
}

}  // namespace kvlens
