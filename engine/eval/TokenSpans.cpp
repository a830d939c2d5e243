#include "engine/eval/TokenSpans.h"

#include "core/Error.h"

namespace kvlens {

std::vector<int64_t> tokensCovering(const Tokenizer& tokenizer, const std::vector<int32_t>& ids,
                                    const std::string& text, const std::vector<ByteSpan>& spans) {
    std::vector<size_t> begin(ids.size()), end(ids.size());
    std::string spelled;
    for (size_t i = 0; i < ids.size(); ++i) {
        begin[i] = spelled.size();
        spelled += tokenizer.tokenBytes(ids[i], i == 0 ? -1 : ids[i - 1]);
        end[i] = spelled.size();
    }
    size_t shift = 0;  // bytes the tokens spell before the text's first
    if (spelled != text) {
        if (spelled.size() == text.size() + 1 && spelled[0] == ' ' && spelled.compare(1, text.size(), text) == 0) {
            shift = 1;
        } else {
            size_t same = 0;
            while (same < spelled.size() && same < text.size() && spelled[same] == text[same]) ++same;
            throw Error("the tokens do not spell the task's text (they differ from byte " + std::to_string(same) +
                        " on): its needle positions cannot be found");
        }
    }
    std::vector<int64_t> out;
    for (size_t i = 0; i < ids.size(); ++i) {
        if (end[i] == begin[i]) continue;
        const size_t a = begin[i] >= shift ? begin[i] - shift : 0, b = end[i] - shift;
        if (end[i] <= shift) continue;  // the prefixed space alone
        for (const ByteSpan& s : spans) {
            if (a < s.end && b > s.begin) {
                out.push_back(static_cast<int64_t>(i));
                break;
            }
        }
    }
    return out;
}

}  // namespace kvlens
