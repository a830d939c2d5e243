// Help text folded to the terminal's usual width.
#include "app/HelpText.h"

#include <algorithm>

namespace kvlens {

std::string foldedHelp(const std::string& text, size_t indent) {
    const size_t lead = std::min(text.find_first_not_of(' '), text.size());
    std::string out, line = text.substr(0, lead);
    bool fresh = true;  // nothing but indentation on the line yet
    for (size_t at = lead; at < text.size();) {
        size_t end = text.find(' ', at);
        if (end == std::string::npos) end = text.size();
        const std::string word = text.substr(at, end - at);
        if (!fresh && line.size() + 1 + word.size() > 100) {
            out += line + "\n";
            line = std::string(indent, ' ');
            fresh = true;
        }
        line += (fresh ? "" : " ") + word;
        fresh = false;
        at = end + 1;
    }
    out += line + "\n";
    std::replace(out.begin(), out.end(), '\x1f', ' ');
    return out;
}

}  // namespace kvlens
