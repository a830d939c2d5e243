// Help text generated from the method table, folded at 100 columns.
#pragma once

#include <string>

namespace kvlens {

// `text` folded at 100 columns, its leading spaces kept, each line after the first indented
// by `indent` spaces; '\x1f' is a space no line breaks at.
std::string foldedHelp(const std::string& text, size_t indent);

}  // namespace kvlens
